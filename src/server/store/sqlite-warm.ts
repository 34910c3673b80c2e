// Keeps the database file's pages mapped, so the machine does not page them out (issue 31). A page
// the event loop reads through the memory map (sqlite-mmap.ts) and the machine had dropped is a
// major page fault: a read of the disk on the event loop's thread. Under 20,000 osquery-perf
// agents the event loop took 6-24 such faults a minute, and when the disk answered a read in a
// second (it did, in the afternoon of 2026-11-28) the event loop stopped as long: pauses of
// 0.36-1.2 s, and every agent waited.
//
// What drops them on the machines we run on is DAMON's reclaim (/sys/kernel/mm/damon): it pages out
// memory idle for a minute, but only file pages that no process maps (its filters: anonymous pages
// kept, unmapped ones paged out, the rest kept). A page the writer thread or the checkpoint wrote
// and no connection has read through its map since is such a page. Reading the file with read()
// every 40 s, as this module first did, kept none of them: DAMON samples one page of each region
// every half second, so a read a minute counts as idle (docs/performance.md, "Pages mapped, not
// read").
//
// So one of the admin door's read threads walks every page of the database through its own map
// (SQLite's dbstat table, which visits each b-tree and overflow page), at start and every
// WARM_PERIOD_MS. Its connection stays open, so the pages stay mapped in this process between
// passes; a pass maps what the file gained since the last. 290 MB (20,000 hosts) costs about
// 50 ms of a thread's CPU a pass.

/** How often every page is walked: under the minute after which the machine drops an idle page. */
export const WARM_PERIOD_MS = 40_000;

/** Every page of the main database read once, through the connection's map; the file's bytes walked. */
export const WARM_SQL = 'select coalesce(sum(pgsize), 0) as bytes from dbstat where aggregate = 1';

export interface Warmer {
  /** One pass now (or the one under way); resolves with the bytes walked. */
  pass(): Promise<number>;
  close(): Promise<void>;
}

export interface WarmOptions {
  /** 0: no pass but those asked for with pass() (tests). */
  periodMs?: number;
  /** A pass that failed (the database busy, closed, unreadable): the next one tries again. */
  onError?: (e: Error) => void;
}

/** `walk` runs WARM_SQL on a connection that stays open (its map is what keeps the pages). */
export function startWarmer(walk: () => Promise<number>, o: WarmOptions = {}): Warmer {
  let running: Promise<number> | undefined;
  const pass = () =>
    (running ??= walk().finally(() => {
      running = undefined;
    }));
  const warm = () => {
    pass().catch((e: Error) => o.onError?.(e));
  };
  // At once too: after a restart the pages are mapped here, not one by one on the event loop.
  if (o.periodMs !== 0) warm();
  const timer = o.periodMs === 0 ? undefined : setInterval(warm, o.periodMs ?? WARM_PERIOD_MS);
  timer?.unref();
  return {
    pass,
    async close() {
      clearInterval(timer);
      await running?.catch(() => 0);
    },
  };
}
