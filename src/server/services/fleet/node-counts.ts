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

interface Entry<T> {
  generation: number;
  /** The seen counter the value was counted at (totals that depend on last_seen, see `soft`). */
  soft?: number;
  cutoff: string;
  value: T;
}

/** A named cache per database, bounded: counts are small, pages of nodes are not. */
export interface CacheSpace {
  name: string;
  entries: number;
}
export const COUNTS: CacheSpace = { name: 'counts', entries: 512 };
const caches = new WeakMap<object, Map<string, Map<string, Entry<unknown>>>>();

function cacheOf(db: object, space: CacheSpace): Map<string, Entry<unknown>> {
  let spaces = caches.get(db);
  if (!spaces) caches.set(db, (spaces = new Map<string, Map<string, Entry<unknown>>>()));
  let c = spaces.get(space.name);
  if (!c) spaces.set(space.name, (c = new Map<string, Entry<unknown>>()));
  return c;
}

/**
 * The value for `key` at `generation` and `cutoff` (use '' when the value does not depend on
 * time). `advance` moves a value counted at one cutoff to another (later or earlier), counting
 * only the nodes last seen between the two. Read the generation before
 * counting: a write in between then only makes the entry look older than it is.
 *
 * `soft`: the seen counter (node_generation 9), for a total that depends on last_seen. A check-in
 * moves it only when it brings a node back across a window (a machine back after days asleep);
 * the total counted before is then still answered, moved with the clock as usual, while one
 * recount runs, and the next request after it has the new value. Such a total lags a returning
 * node by one count (tens of milliseconds); every other change (a node added, deleted, edited,
 * tagged) moves `generation`, and is exact at once as before. In a fleet where some machine wakes
 * every second, a total that takes 200 ms to count (a search over every node's columns) would
 * otherwise be counted under every request.
 *
 * These recounts take at most a tenth of a process's time: one at a time, and the next waits nine
 * times as long as the last took. In a fleet where a node comes back every second, every total
 * and page filtered by status was otherwise counted again every second in every process (a
 * 2-character search's total 70 ms on PostgreSQL at 100,000 nodes, 500 ms on a loaded machine, as
 * a parallel query taking every core from the requests, and each of its pages 10-40 ms more). A
 * total then lags such a node by the recounts of the other totals before it.
 */
export async function cachedCount<T>(
  /** The database the value was read from (each database its own cache). */
  db: object,
  key: string,
  generation: number,
  cutoff: string,
  count: () => Promise<T>,
  advance?: (value: T, from: string, to: string) => Promise<T>,
  space: CacheSpace = COUNTS,
  soft?: number,
): Promise<T> {
  const cache = cacheOf(db, space);
  const hit = cache.get(key) as Entry<T> | undefined;
  const fresh = soft === undefined || hit?.soft === soft;
  if (hit && hit.generation === generation && fresh && hit.cutoff === cutoff) return hit.value;
  if (hit && hit.generation === generation && !fresh) {
    refreshSoftly(cache, key, generation, soft, cutoff, count, space);
    if (hit.cutoff === cutoff || !advance) return hit.value;
  }
  // Requests arriving together after a change share one count instead of each running it.
  const flying = inFlight.get(cache)?.get(key);
  if (flying && flying.generation === generation && flying.cutoff === cutoff) return flying.value as Promise<T>;
  let flights = inFlight.get(cache);
  if (!flights) inFlight.set(cache, (flights = new Map<string, Entry<Promise<unknown>>>()));
  // Concurrent requests finish out of order, so the cutoff may also step back a little.
  const value = hit && hit.generation === generation && advance ? advance(hit.value, hit.cutoff, cutoff) : count();
  const flight = { generation, cutoff, value };
  flights.set(key, flight);
  // Moved from a value counted at another seen counter, it keeps that counter (still to refresh).
  const softOf = hit && hit.generation === generation && advance ? hit.soft : soft;
  try {
    const v = await value;
    // A slower count of an older generation must not replace a newer one stored meanwhile.
    const now = cache.get(key);
    if (!now || now.generation <= generation) {
      if (!now && cache.size >= space.entries) cache.delete(cache.keys().next().value!); // oldest first
      cache.set(key, { generation, soft: softOf, cutoff, value: v });
    }
    return v;
  } finally {
    if (flights.get(key) === flight) flights.delete(key);
  }
}

/** The recounts running for a changed seen counter, per cache and key (at most one each). */
const refreshing = new WeakMap<Map<string, Entry<unknown>>, Set<string>>();
/** The recounts for a changed seen counter take at most this share of the process's time (see cachedCount). */
const SOFT_DUTY = 0.1;
/** When (ms) the one running started (0: none), and when the next may start. */
const softRecounts = { since: 0, notBefore: 0 };
/** A recount running longer than this no longer holds the others back (a database that never answers). */
const SOFT_STUCK_MS = 30_000;
/** The longest wait after one (a recount that took seconds, on a database in trouble). */
const SOFT_WAIT_MAX_MS = 10_000;

function refreshSoftly<T>(
  cache: Map<string, Entry<unknown>>,
  key: string,
  generation: number,
  soft: number,
  cutoff: string,
  count: () => Promise<T>,
  space: CacheSpace,
): void {
  let running = refreshing.get(cache);
  if (!running) refreshing.set(cache, (running = new Set()));
  const started = Date.now();
  const busy = softRecounts.since > 0 && started - softRecounts.since < SOFT_STUCK_MS;
  if (running.has(key) || busy || started < softRecounts.notBefore) return;
  running.add(key);
  softRecounts.since = started;
  const done = () => {
    running.delete(key);
    if (softRecounts.since === started) softRecounts.since = 0;
    softRecounts.notBefore = Date.now() + Math.min(SOFT_WAIT_MAX_MS, (Date.now() - started) * (1 / SOFT_DUTY - 1));
  };
  count().then(
    (value) => {
      done();
      const now = cache.get(key);
      // Stored unless a change of generation meanwhile made this count old.
      if (!now || now.generation <= generation) {
        if (!now && cache.size >= space.entries) cache.delete(cache.keys().next().value!);
        cache.set(key, { generation, soft, cutoff, value });
      }
    },
    // Not counted (the database is busy or down): the old value stands; a later request tries again.
    done,
  );
}

/** Counts being computed, per cache and key: the promise later requests for the same state share. */
const inFlight = new WeakMap<Map<string, Entry<unknown>>, Map<string, Entry<Promise<unknown>>>>();
