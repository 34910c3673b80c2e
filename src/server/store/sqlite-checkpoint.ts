// WAL checkpoints off the event loop (issue 21). SQLite copies the write-ahead log back into the
// database file when it passes 1,000 pages (wal_autocheckpoint), inside whichever commit crossed
// the mark, and that copy ends in an fsync: on a busy disk the event loop of the process that
// happened to commit stalled for 100-700 ms, so every agent it served waited. The server's
// connections turn the automatic checkpoint off and this thread, on a connection of its own,
// checkpoints every second (PASSIVE: it never blocks a reader or a writer), and once more at
// close (TRUNCATE). journal_size_limit keeps the WAL file from staying at its largest size.
import { Worker } from 'node:worker_threads';
import { createRequire } from 'node:module';

/** The thread's code (plain CommonJS, so it runs from the bundle and from the TypeScript sources alike). */
const CODE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.module);
const db = new Database(workerData.path);
db.pragma('busy_timeout = 5000');
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
const timer = setInterval(() => run('PASSIVE'), workerData.intervalMs);
parentPort.on('message', (m) => {
  if (m !== 'close') return;
  clearInterval(timer);
  run('TRUNCATE');
  try { db.close(); } catch {}
  parentPort.postMessage({ closed: true });
});
`;

export interface Checkpointer {
  close(): Promise<void>;
}

/** Starts the checkpoint thread for the database at `path`; errors go to `onError` (at most one a minute). */
export function startCheckpointer(path: string, onError: (message: string, code?: string) => void, intervalMs = 1000): Checkpointer {
  const module = createRequire(import.meta.url).resolve('better-sqlite3');
  const worker = new Worker(CODE, { eval: true, workerData: { path, module, intervalMs } });
  worker.unref();
  let closed: Promise<void> | undefined;
  worker.on('message', (m: { error?: string; code?: string }) => {
    if (m.error) onError(m.error, m.code);
  });
  worker.on('error', (e) => onError(e.message));
  return {
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
