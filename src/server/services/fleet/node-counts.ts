// Cached node counts (issue 11): a nodes list page and GET /stats must not recount 100k nodes
// per request. Every cached value is keyed by the node generation (store/node-index.ts: a
// counter the database bumps on every node insert, delete or change of a counted column, by
// any writer), so a change is seen by the very next request: no staleness window.
// Counts that depend on the activity cutoff (now - inactive_hours) change with time even
// without writes; they are kept with the cutoff they were counted at and moved forward by
// counting only the nodes whose last_seen fell between the old and the new cutoff (a short
// range of the (environment_id, last_seen) index), so they stay exact at every instant.

/** Orders two cutoffs: nodes last seen in [lo, hi) change side; sign +1 if the cutoff moved later. */
export function between(from: string, to: string): { lo: string; hi: string; sign: 1 | -1 } {
  return from < to ? { lo: from, hi: to, sign: 1 } : { lo: to, hi: from, sign: -1 };
}
import type { Kysely } from 'kysely';

interface Entry<T> {
  generation: number;
  cutoff: string;
  value: T;
}

/** A named cache per database, bounded: counts are small, pages of nodes are not. */
export interface CacheSpace {
  name: string;
  entries: number;
}
const COUNTS: CacheSpace = { name: 'counts', entries: 512 };
const caches = new WeakMap<object, Map<string, Map<string, Entry<unknown>>>>();

function cacheOf(db: Kysely<any>, space: CacheSpace): Map<string, Entry<unknown>> {
  let spaces = caches.get(db);
  if (!spaces) caches.set(db, (spaces = new Map()));
  let c = spaces.get(space.name);
  if (!c) spaces.set(space.name, (c = new Map()));
  return c;
}

/**
 * The value for `key` at `generation` and `cutoff` (use '' when the value does not depend on
 * time). `advance` moves a value counted at one cutoff to another (later or earlier), counting
 * only the nodes last seen between the two. Read the generation before
 * counting: a write in between then only makes the entry look older than it is.
 */
export async function cachedCount<T>(
  db: Kysely<any>,
  key: string,
  generation: number,
  cutoff: string,
  count: () => Promise<T>,
  advance?: (value: T, from: string, to: string) => Promise<T>,
  space: CacheSpace = COUNTS,
): Promise<T> {
  const cache = cacheOf(db, space);
  const hit = cache.get(key) as Entry<T> | undefined;
  if (hit && hit.generation === generation && hit.cutoff === cutoff) return hit.value;
  // Requests arriving together after a change share one count instead of each running it.
  const flying = inFlight.get(cache)?.get(key);
  if (flying && flying.generation === generation && flying.cutoff === cutoff) return flying.value as Promise<T>;
  let flights = inFlight.get(cache);
  if (!flights) inFlight.set(cache, (flights = new Map()));
  // Concurrent requests finish out of order, so the cutoff may also step back a little.
  const value = hit && hit.generation === generation && advance ? advance(hit.value, hit.cutoff, cutoff) : count();
  const flight = { generation, cutoff, value };
  flights.set(key, flight);
  try {
    const v = await value;
    // A slower count of an older generation must not replace a newer one stored meanwhile.
    const now = cache.get(key);
    if (!now || now.generation <= generation) {
      if (!now && cache.size >= space.entries) cache.delete(cache.keys().next().value!); // oldest first
      cache.set(key, { generation, cutoff, value: v });
    }
    return v;
  } finally {
    if (flights.get(key) === flight) flights.delete(key);
  }
}

/** Counts being computed, per cache and key: the promise later requests for the same state share. */
const inFlight = new WeakMap<Map<string, Entry<unknown>>, Map<string, Entry<Promise<unknown>>>>();
