// Keeps the database file's pages in the page cache (issue 31). A page the event loop reads through
// the memory map (sqlite-mmap.ts) that the machine had paged out is a major page fault: a read of
// the disk on the event loop's thread. Under 20,000 osquery-perf agents the event loop took 6-24
// such faults a minute, and when the disk answered a read in a second (its 5-second averages
// reached 0.6 and 1.1 s twice in a run) the event loop stopped as long: pauses of 0.39-1.2 s.
//
// What pages them out on the machines measured is DAMON's reclaim (/sys/kernel/mm/damon): file
// pages no process maps, in memory that looked idle for a minute, judged by one page sampled per
// region. A map is no shelter under writes: SQLite unmaps the whole file at the start of every
// read transaction that finds the log changed (pagerBeginReadTransaction), so a page is mapped only
// while a connection reads it (docs/performance.md, "Pages read again, not kept mapped").
//
// So the whole file, up to the map's size, is read here once every WARM_PERIOD_MS, in the
// background (libuv's thread pool, a megabyte at a time): a page dropped is read back here rather
// than on the event loop, and a read marks it used. At 20,000 hosts the event loop's faults went
// from about 14 to about 6 a minute, not to none (DAMON samples one page of a region, so a read
// every 40 s does not always count). A walk of the database through SQLite (dbstat) on another
// thread was tried instead: it misses the file's copy of every page whose newest copy is in the
// log, the pages the event loop reads right after a checkpoint, and the event loop took about 11.
// The cost is a copy of the file per period: 260 MB (20,000 hosts) every 40 s is about 6.5 MB/s.
import { open } from 'node:fs/promises';
import { SQLITE_MMAP_BYTES } from './sqlite-mmap.js';

/** How often every page is read: under the minute after which the machine drops an idle page. */
export const WARM_PERIOD_MS = 40_000;
const CHUNK_BYTES = 1024 * 1024;

export interface Warmer {
  /** One pass over the file now (or the one under way); resolves with the bytes read. */
  pass(): Promise<number>;
  close(): Promise<void>;
}

export interface WarmOptions {
  /** 0: no pass but those asked for with pass() (tests). */
  periodMs?: number;
  /** Bytes from the start of the file read at most (the map's size: what is past it is read with pread anyway). */
  maxBytes?: number;
  /** A pass that failed (the file is gone, unreadable): the next one tries again. */
  onError?: (e: Error) => void;
}

export function startWarmer(path: string, o: WarmOptions = {}): Warmer {
  const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
  let running: Promise<number> | undefined;
  let closed = false;
  const once = async (): Promise<number> => {
    const file = await open(path, 'r');
    try {
      const end = Math.min((await file.stat()).size, o.maxBytes ?? SQLITE_MMAP_BYTES);
      let at = 0;
      while (at < end && !closed) {
        const { bytesRead } = await file.read(buffer, 0, Math.min(CHUNK_BYTES, end - at), at);
        if (bytesRead === 0) break;
        at += bytesRead;
      }
      return at;
    } finally {
      await file.close();
    }
  };
  const pass = () =>
    (running ??= once().finally(() => {
      running = undefined;
    }));
  const warm = () => {
    pass().catch((e: Error) => o.onError?.(e));
  };
  // At once too: after a reboot the file is read here, not page by page on the event loop.
  if (o.periodMs !== 0) warm();
  const timer = o.periodMs === 0 ? undefined : setInterval(warm, o.periodMs ?? WARM_PERIOD_MS);
  timer?.unref();
  return {
    pass,
    async close() {
      closed = true;
      clearInterval(timer);
      await running?.catch(() => 0);
    },
  };
}
