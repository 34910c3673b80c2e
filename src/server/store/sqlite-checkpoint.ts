// WAL checkpoints off the event loop (issue 21). SQLite copies the write-ahead log back into the
// database file when it passes 1,000 pages (wal_autocheckpoint), inside whichever commit crossed
// the mark, and that copy ends in an fsync: on a busy disk the event loop of the process that
// happened to commit stalled for 100-700 ms, so every agent it served waited. The server's
// connections turn the automatic checkpoint off and this thread, on a connection of its own,
// checkpoints every second, and once more at close (TRUNCATE).
//
// A PASSIVE checkpoint never blocks anyone, but under a steady stream of writes it never lets the
// log start over either: SQLite restarts the WAL only at a write that finds every frame copied
// back, and a write always lands while the copy runs. So the WAL grew for as long as agents
// wrote (520 MB for a 5,000-agent enrollment, 30 MB of database), and the first commit after
// the stream paused cut it back to journal_size_limit: an ftruncate of hundreds of MB, with the
// disk's discard, on the event loop of whichever process committed (issue 31: 360 ms at 5,000
// agents, 2 s and 289 503s at 20,000). Now, past RESTART_FRAMES, the thread asks for a RESTART:
// it holds new writers back (they wait for the lock, off the event loop) until the log is copied
// and no reader needs it, so the next write starts the log over and the file stays small. A
// reader that keeps it longer than 100 ms (busy_timeout) makes it give up until the next second. A log file
// left big (a long reader held it) is cut back here, with TRUNCATE, never in a commit.
//
// What a RESTART holds writers for is its own copy of the frames written since the PASSIVE
// before it and two fsyncs (the log, then the database), and the fsyncs are the disk's: under a
// 20,000-agent load they took 20 ms at the median and 100-685 ms in their slowest tenth (perf
// trace of this thread, 2026-11-28), and an agent whose write waited behind one waited as long.
// So (issue 31): the bound is 64 MiB, a restart every few seconds at 20,000 agents instead of
// every second; a second PASSIVE right before the RESTART leaves it only the frames written
// meanwhile; and when that PASSIVE was slow (the disk is busy now), the RESTART waits for a
// quicker second, unless the log passed four times its bound.
import { Worker } from 'node:worker_threads';
import { createRequire } from 'node:module';

/** Frames in the log (4 KiB pages: 64 MiB) past which a checkpoint makes the log start over. */
export const RESTART_FRAMES = 16384;
/** A log file bigger than this once it is empty is truncated by this thread (past what a restart leaves). */
export const TRUNCATE_BYTES = 256 * 1024 * 1024;
/** A PASSIVE slower than this (ms) says the disk is busy: the RESTART after it waits for another second. */
export const SLOW_PASSIVE_MS = 100;
/** Past this many times RESTART_FRAMES the log starts over even when the disk is slow. */
export const FORCE_RESTART_FACTOR = 4;

/** The thread's code (plain CommonJS, so it runs from the bundle and from the TypeScript sources alike). */
const CODE = `
const { parentPort, workerData } = require('node:worker_threads');
const { statSync } = require('node:fs');
const Database = require(workerData.module);
const db = new Database(workerData.path);
// How long a RESTART or TRUNCATE waits for readers (writers wait behind it meanwhile).
db.pragma('busy_timeout = 100');
let lastReport = 0;
// Each call's mode and milliseconds, sent with the tick (the server's metrics).
let timings = [];
const run = (mode) => {
  const t0 = performance.now();
  try {
    return db.pragma('wal_checkpoint(' + mode + ')')[0];
  } catch (e) {
    // Busy (another process checkpoints), full, gone: the next second tries again.
    const now = Date.now();
    if (now - lastReport > 60000) {
      lastReport = now;
      parentPort.postMessage({ error: String((e && e.message) || e), code: e && e.code });
    }
    return undefined;
  } finally {
    timings.push([mode, performance.now() - t0]);
  }
};
const walBytes = () => {
  try { return statSync(workerData.path + '-wal').size; } catch { return 0; }
};
const tick = () => {
  timings = [];
  const passive = run('PASSIVE');
  let mode = 'PASSIVE';
  let deferred = false;
  if (passive && passive.busy === 0 && passive.log > workerData.restartFrames) {
    const again = run('PASSIVE');
    const slow = timings[timings.length - 1][1] > workerData.slowPassiveMs;
    if (again && again.busy === 0 && (!slow || again.log > workerData.restartFrames * workerData.forceFactor)) {
      const r = run('RESTART');
      if (r && r.busy === 0) mode = 'RESTART';
    } else deferred = slow;
  } else if (passive && passive.busy === 0 && passive.log === passive.checkpointed && walBytes() > workerData.truncateBytes) {
    const r = run('TRUNCATE');
    if (r && r.busy === 0) mode = 'TRUNCATE';
  }
  return { mode, log: passive ? passive.log : -1, deferred, timings };
};
// Timings are sent only when the log changed since the last tick: an idle server's main thread
// is not woken every second for a checkpoint that found nothing to do.
let lastLog = -1;
const timer = workerData.intervalMs > 0
  ? setInterval(() => {
      const t = tick();
      if (t.log !== lastLog || t.mode !== 'PASSIVE') parentPort.postMessage({ timed: t.timings });
      lastLog = t.log;
    }, workerData.intervalMs)
  : undefined;
parentPort.on('message', (m) => {
  if (m === 'tick') return parentPort.postMessage({ ticked: tick() });
  if (m !== 'close') return;
  if (timer) clearInterval(timer);
  db.pragma('busy_timeout = 5000');
  run('TRUNCATE');
  try { db.close(); } catch {}
  parentPort.postMessage({ closed: true });
});
`;

export interface CheckpointTick {
  /** What the tick ended with: PASSIVE only, or a RESTART or TRUNCATE that completed. */
  mode: 'PASSIVE' | 'RESTART' | 'TRUNCATE';
  /** Frames in the log when the tick began (-1: the checkpoint failed). */
  log: number;
  /** The log was past its bound, and the RESTART was put off: the PASSIVE before it was slow. */
  deferred: boolean;
  /** Each checkpoint the tick ran, in order, and how long it took (ms). */
  timings: CheckpointTiming[];
}

/** One checkpoint call and its milliseconds: for a RESTART or TRUNCATE, about how long writers waited. */
export type CheckpointTiming = [mode: 'PASSIVE' | 'RESTART' | 'TRUNCATE', ms: number];

export interface Checkpointer {
  /** One checkpoint now, as the timer runs it (tests). */
  tick(): Promise<CheckpointTick>;
  close(): Promise<void>;
}

export interface CheckpointOptions {
  /** Milliseconds between checkpoints; 0: only on tick(). */
  intervalMs?: number;
  restartFrames?: number;
  truncateBytes?: number;
  slowPassiveMs?: number;
  /** Each checkpoint call of every tick, timed (the server's metrics). */
  onTiming?: (mode: CheckpointTiming[0], ms: number) => void;
}

/** Starts the checkpoint thread for the database at `path`; errors go to `onError` (at most one a minute). */
export function startCheckpointer(
  path: string,
  onError: (message: string, code?: string) => void,
  o: CheckpointOptions = {},
): Checkpointer {
  const module = createRequire(import.meta.url).resolve('better-sqlite3');
  const workerData = {
    path,
    module,
    intervalMs: o.intervalMs ?? 1000,
    restartFrames: o.restartFrames ?? RESTART_FRAMES,
    truncateBytes: o.truncateBytes ?? TRUNCATE_BYTES,
    slowPassiveMs: o.slowPassiveMs ?? SLOW_PASSIVE_MS,
    forceFactor: FORCE_RESTART_FACTOR,
  };
  const worker = new Worker(CODE, { eval: true, workerData });
  worker.unref();
  let closed: Promise<void> | undefined;
  const ticks: ((t: CheckpointTick) => void)[] = [];
  const timed = (t: CheckpointTiming[]) => {
    if (o.onTiming) for (const [mode, ms] of t) o.onTiming(mode, ms);
  };
  worker.on('message', (m: { error?: string; code?: string; ticked?: CheckpointTick; timed?: CheckpointTiming[] }) => {
    if (m.error) onError(m.error, m.code);
    if (m.timed) timed(m.timed);
    if (m.ticked) {
      timed(m.ticked.timings);
      ticks.shift()?.(m.ticked);
    }
  });
  worker.on('error', (e) => onError(e.message));
  return {
    tick() {
      return new Promise<CheckpointTick>((resolve) => {
        ticks.push(resolve);
        worker.postMessage('tick');
      });
    },
    close() {
      closed ??= new Promise<void>((resolve) => {
        const done = () => {
          void worker.terminate().finally(resolve);
        };
        worker.on('message', (m: { closed?: boolean }) => m.closed && done());
        worker.once('exit', () => resolve());
        worker.postMessage('close');
        // A checkpoint stuck behind a lock cannot hold the shutdown.
        setTimeout(done, 10_000).unref();
      });
      return closed;
    },
  };
}
