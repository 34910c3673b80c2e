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
import { Worker } from 'node:worker_threads';
import { createRequire } from 'node:module';

/** Frames in the log (4 KiB pages: 16 MiB) past which a checkpoint makes the log start over. */
export const RESTART_FRAMES = 4096;
/** A log file bigger than this once it is empty is truncated by this thread. */
export const TRUNCATE_BYTES = 64 * 1024 * 1024;

/** The thread's code (plain CommonJS, so it runs from the bundle and from the TypeScript sources alike). */
const CODE = `
const { parentPort, workerData } = require('node:worker_threads');
const { statSync } = require('node:fs');
const Database = require(workerData.module);
const db = new Database(workerData.path);
// How long a RESTART or TRUNCATE waits for readers (writers wait behind it meanwhile).
db.pragma('busy_timeout = 100');
let lastReport = 0;
const run = (mode) => {
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
  }
};
const walBytes = () => {
  try { return statSync(workerData.path + '-wal').size; } catch { return 0; }
};
const tick = () => {
  const passive = run('PASSIVE');
  let mode = 'PASSIVE';
  if (passive && passive.busy === 0 && passive.log > workerData.restartFrames) {
    const r = run('RESTART');
    if (r && r.busy === 0) mode = 'RESTART';
  } else if (passive && passive.busy === 0 && passive.log === passive.checkpointed && walBytes() > workerData.truncateBytes) {
    const r = run('TRUNCATE');
    if (r && r.busy === 0) mode = 'TRUNCATE';
  }
  return { mode, log: passive ? passive.log : -1 };
};
const timer = workerData.intervalMs > 0 ? setInterval(tick, workerData.intervalMs) : undefined;
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
}

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
  };
  const worker = new Worker(CODE, { eval: true, workerData });
  worker.unref();
  let closed: Promise<void> | undefined;
  const ticks: ((t: CheckpointTick) => void)[] = [];
  worker.on('message', (m: { error?: string; code?: string; ticked?: CheckpointTick }) => {
    if (m.error) onError(m.error, m.code);
    if (m.ticked) ticks.shift()?.(m.ticked);
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
