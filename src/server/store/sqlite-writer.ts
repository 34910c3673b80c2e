// The agent door's writes on SQLite, in a thread of their own (issue 31). better-sqlite3 runs a
// statement on the calling thread, so a check-in flush of 5,000 nodes (each row rewritten, four
// last_seen indexes, the counters' triggers: about 100 ms of CPU), a burst of enroll inserts (the
// search index's trigrams, two dozen indexes: a few ms each) and their commits ran on the event
// loop every agent of that process waits on; and with --workers, a process waiting for another's
// write lock slept inside busy_timeout, its loop stopped. After 20,000 agents enrolled this held
// 1 % of agent requests for about 0.6 s. Here a worker thread with its own connection runs each
// batch of statements as one transaction (waiting for the lock there, never on the event loop),
// and the event loop only hands the batch over and gets the results back.
import { Worker } from 'node:worker_threads';
import { createRequire } from 'node:module';
import { SQLITE_MMAP_BYTES } from './sqlite-mmap.js';
import type { CompiledQuery, QueryResult } from 'kysely';
import type { WriteSteps } from './write-steps.js';

/** The thread's code (CommonJS, so it runs from the bundle and from the TypeScript sources alike). */
const CODE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.module);
const db = new Database(workerData.path);
db.pragma('busy_timeout = 5000');
db.pragma('foreign_keys = ON');
db.pragma('synchronous = NORMAL');
db.pragma('wal_autocheckpoint = 0');
db.pragma('cache_size = -65536');
db.pragma('mmap_size = ' + workerData.mmapBytes);
const statements = new Map();
const prepare = (sql) => {
  let stmt = statements.get(sql);
  if (!stmt) {
    stmt = db.prepare(sql);
    if (statements.size >= 1000) statements.delete(statements.keys().next().value);
    statements.set(sql, stmt);
  }
  return stmt;
};
const run = (s) => {
  const stmt = prepare(s.sql);
  if (stmt.reader) return { rows: stmt.all(s.params) };
  const r = stmt.run(s.params);
  return { changes: r.changes, insertId: r.lastInsertRowid };
};
parentPort.on('message', (m) => {
  if (m === 'close') {
    try { db.close(); } catch {}
    parentPort.postMessage({ closed: true });
    return;
  }
  if (m.rollback) {
    // SQLite may have ended the transaction itself (SQLITE_FULL): roll back only an open one.
    try { if (db.inTransaction) db.exec('rollback'); } catch {}
    parentPort.postMessage({ id: m.id, results: [] });
    return;
  }
  // One step of a transaction: its first step begins it, its last commits it (WriteSteps).
  const results = [];
  try {
    // IMMEDIATE: the write lock up front (a deferred transaction that reads first fails with
    // SQLITE_BUSY when another process wrote meanwhile).
    const t0 = performance.now();
    if (m.begin) db.exec('begin immediate');
    const t1 = performance.now();
    for (const s of m.statements) results.push(run(s));
    const t2 = performance.now();
    if (m.commit) db.exec('commit');
    // Where the step's time went: the write lock (a checkpoint restart, another process), the statements, the commit.
    parentPort.postMessage({ id: m.id, results, ms: [m.begin ? t1 - t0 : -1, t2 - t1, m.commit ? performance.now() - t2 : -1] });
  } catch (e) {
    // A failed step ends its transaction here: the main thread sends nothing more for it.
    try { if (db.inTransaction) db.exec('rollback'); } catch {}
    parentPort.postMessage({ id: m.id, error: { message: String((e && e.message) || e), code: e && e.code, name: e && e.name } });
  }
});
`;

interface Reply {
  id: number;
  results?: { rows?: unknown[]; changes?: number; insertId?: number | bigint }[];
  /** The thread's milliseconds: waiting for the write lock, running the statements, committing (-1: not this step's). */
  ms?: [number, number, number];
  error?: { message: string; code?: string; name?: string };
}

export interface SqliteWriter {
  /** Runs the statements in one transaction in the writer thread; their results in order. Throws the database's error (its `code` kept). */
  transaction(statements: CompiledQuery[]): Promise<QueryResult<unknown>[]>;
  /** A transaction over the same thread and connection, a step (one message) at a time (write-steps.ts). */
  steps: WriteSteps;
  close(): Promise<void>;
}

/** One holder of the writer's connection at a time (a transaction, from its first step to its end). */
class Turn {
  private held = false;
  private readonly queue: (() => void)[] = [];
  async take(): Promise<() => void> {
    if (this.held) await new Promise<void>((r) => this.queue.push(r));
    this.held = true;
    return () => {
      const next = this.queue.shift();
      if (next) next();
      else this.held = false;
    };
  }
}

const toResult = (r: { rows?: unknown[]; changes?: number; insertId?: number | bigint }): QueryResult<unknown> =>
  r.rows
    ? { rows: r.rows }
    : {
        rows: [],
        numAffectedRows: r.changes === undefined ? undefined : BigInt(r.changes),
        insertId: r.insertId === undefined ? undefined : BigInt(r.insertId),
      };

/** Where a write's time went: its turn at the thread, SQLite's write lock, its statements, its commit. */
export type WriteStage = 'turn' | 'lock' | 'statements' | 'commit';

/** `onTiming`: each stage's milliseconds (the server's metric fleetctl_sqlite_write_seconds). */
export function startSqliteWriter(path: string, o: { onTiming?: (stage: WriteStage, ms: number) => void } = {}): SqliteWriter {
  const timed = o.onTiming;
  const module = createRequire(import.meta.url).resolve('better-sqlite3');
  const worker = new Worker(CODE, { eval: true, workerData: { path, module, mmapBytes: SQLITE_MMAP_BYTES } });
  worker.unref();
  let next = 0;
  const waiting = new Map<number, (r: Reply) => void>();
  const failAll = (e: { message: string; code?: string }) => {
    for (const [id, resolve] of waiting) {
      waiting.delete(id);
      resolve({ id, error: e });
    }
  };
  worker.on('message', (r: Reply) => {
    const resolve = waiting.get(r.id);
    if (!resolve) return;
    waiting.delete(r.id);
    resolve(r);
  });
  worker.on('error', (e) => failAll({ message: e.message, code: (e as { code?: string }).code }));
  worker.on('exit', () => failAll({ message: 'the database writer thread ended', code: 'SQLITE_CANTOPEN' }));
  let closed: Promise<void> | undefined;
  const turn = new Turn();
  /** Sends a message and waits for its answer; the database's error thrown as it was (its code decides 503 or 500: lib/db-errors.ts). */
  const ask = async (message: object): Promise<QueryResult<unknown>[]> => {
    if (closed) throw Object.assign(new Error('the database writer thread is closed'), { code: 'SQLITE_CANTOPEN' });
    const id = next++;
    const reply = await new Promise<Reply>((resolve) => {
      waiting.set(id, resolve);
      worker.postMessage({ id, ...message });
    });
    if (reply.error)
      throw Object.assign(new Error(reply.error.message), { code: reply.error.code, name: reply.error.name ?? 'SqliteError' });
    if (timed && reply.ms) {
      const [lock, statements, commit] = reply.ms;
      if (lock >= 0) timed('lock', lock);
      timed('statements', statements);
      if (commit >= 0) timed('commit', commit);
    }
    return reply.results!.map(toResult);
  };
  const steps: WriteSteps = async (fn) => {
    const asked = performance.now();
    const release = await turn.take();
    timed?.('turn', performance.now() - asked);
    // open: begun in the thread; ended: committed, or rolled back by the thread after a failed step.
    let open = false;
    let ended = false;
    try {
      const out = await fn(async (statements, last = false) => {
        if (ended) throw new Error('this write transaction has ended');
        const begin = !open;
        open = true;
        try {
          return await ask({ statements: statements.map((s) => ({ sql: s.sql, params: s.parameters })), begin, commit: last });
        } catch (e) {
          ended = true;
          throw e;
        } finally {
          if (last) ended = true;
        }
      });
      if (open && !ended) {
        ended = true;
        await ask({ statements: [], commit: true });
      }
      return out;
    } catch (e) {
      if (open && !ended) await ask({ rollback: true }).catch(() => undefined);
      throw e;
    } finally {
      release();
    }
  };
  return {
    transaction: (statements) => steps((step) => step(statements, true)),
    steps,
    close() {
      closed ??= new Promise<void>((resolve) => {
        const done = () => void worker.terminate().finally(resolve);
        worker.on('message', (m: { closed?: boolean }) => m.closed && done());
        worker.once('exit', () => resolve());
        // Messages are answered in order: 'close' comes after every batch already sent.
        worker.postMessage('close');
        setTimeout(done, 10_000).unref();
      });
      return closed;
    },
  };
}
