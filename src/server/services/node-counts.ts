// Cached node counts (issue 11): a nodes list page and GET /stats must not recount 100k nodes
// per request. Every cached value is keyed by the node generation (store/node-index.ts: a
// counter the database bumps on every node insert, delete or change of a counted column, by
// any writer), so a change is seen by the very next request: no staleness window.
// Counts that depend on the activity cutoff (now - inactive_hours) change with time even
// without writes; they are kept with the cutoff they were counted at and moved forward by
// counting only the nodes whose last_seen fell between the old and the new cutoff (a short
// range of the (environment_id, last_seen) index), so they stay exact at every instant.
import type { Kysely } from 'kysely';

interface Entry<T> {
  generation: number;
  cutoff: string;
  value: T;
}

const MAX_ENTRIES = 512;
const caches = new WeakMap<object, Map<string, Entry<unknown>>>();

function cacheOf(db: Kysely<any>): Map<string, Entry<unknown>> {
  let c = caches.get(db);
  if (!c) caches.set(db, (c = new Map()));
  return c;
}

/**
 * The value for `key` at `generation` and `cutoff` (use '' when the value does not depend on
 * time). `advance` moves a value counted at an earlier cutoff to a later one; a cutoff that
 * moved backwards (a longer inactive window) is counted afresh. Read the generation before
 * counting: a write in between then only makes the entry look older than it is.
 */
export async function cachedCount<T>(
  db: Kysely<any>,
  key: string,
  generation: number,
  cutoff: string,
  count: () => Promise<T>,
  advance?: (value: T, from: string, to: string) => Promise<T>,
): Promise<T> {
  const cache = cacheOf(db);
  const hit = cache.get(key) as Entry<T> | undefined;
  let value: T;
  if (hit && hit.generation === generation && hit.cutoff === cutoff) return hit.value;
  if (hit && hit.generation === generation && advance && hit.cutoff < cutoff) value = await advance(hit.value, hit.cutoff, cutoff);
  else value = await count();
  if (!hit && cache.size >= MAX_ENTRIES) cache.delete(cache.keys().next().value!); // oldest first
  cache.set(key, { generation, cutoff, value });
  return value;
}
