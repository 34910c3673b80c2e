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
import {
  CompiledQuery,
  Kysely,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type QueryResult,
} from 'kysely';

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
  if (m.one) {
    // One statement of a transaction the main thread drives (WriterDialect): begin, statements, commit.
    try {
      if (m.one.sql === 'rollback' && !db.inTransaction) parentPort.postMessage({ id: m.id, results: [{ changes: 0 }] });
      else parentPort.postMessage({ id: m.id, results: [run(m.one)] });
    } catch (e) {
      parentPort.postMessage({ id: m.id, error: { message: String((e && e.message) || e), code: e && e.code, name: e && e.name } });
    }
    return;
  }
  const results = [];
  try {
    // IMMEDIATE: the write lock up front (a deferred transaction that reads first fails with
    // SQLITE_BUSY when another process wrote meanwhile).
    db.exec('begin immediate');
    for (const s of m.statements) results.push(run(s));
    db.exec('commit');
    parentPort.postMessage({ id: m.id, results });
  } catch (e) {
    // SQLite may have ended the transaction itself (SQLITE_FULL): roll back only an open one.
    try { if (db.inTransaction) db.exec('rollback'); } catch {}
    parentPort.postMessage({ id: m.id, error: { message: String((e && e.message) || e), code: e && e.code, name: e && e.name } });
  }
});
`;

interface Reply {
  id: number;
  results?: { rows?: unknown[]; changes?: number; insertId?: number | bigint }[];
  error?: { message: string; code?: string; name?: string };
}

export interface SqliteWriter {
  /** Runs the statements in one transaction in the writer thread; their results in order. Throws the database's error (its `code` kept). */
  transaction(statements: CompiledQuery[]): Promise<QueryResult<unknown>[]>;
  /**
   * Kysely over the same thread and connection, for a transaction whose statements depend on
   * the answers of earlier ones (the log spool's append): it takes the connection for the whole
   * transaction, as `transaction()` does, one after the other.
   */
  db<DB>(): Kysely<DB>;
  close(): Promise<void>;
}

/** One holder of the writer's connection at a time (a batch, or a driven transaction). */
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

export function startSqliteWriter(path: string): SqliteWriter {
  const module = createRequire(import.meta.url).resolve('better-sqlite3');
  const worker = new Worker(CODE, { eval: true, workerData: { path, module } });
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
    return reply.results!.map(toResult);
  };
  const one = async (q: CompiledQuery): Promise<QueryResult<unknown>> => (await ask({ one: { sql: q.sql, params: q.parameters } }))[0];
  let kysely: Kysely<unknown> | undefined;
  return {
    async transaction(statements) {
      const release = await turn.take();
      try {
        return await ask({ statements: statements.map((s) => ({ sql: s.sql, params: s.parameters })) });
      } finally {
        release();
      }
    },
    db<DB>() {
      kysely ??= new Kysely<unknown>({ dialect: new WriterDialect(turn, one) });
      return kysely as Kysely<DB>;
    },
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

/** Kysely's SQLite dialect over the writer thread: a connection is the thread, held for a whole transaction. */
class WriterDialect implements Dialect {
  constructor(
    private readonly turn: Turn,
    private readonly one: (q: CompiledQuery) => Promise<QueryResult<unknown>>,
  ) {}
  createAdapter() {
    return new SqliteAdapter();
  }
  createDriver(): Driver {
    const { turn, one } = this;
    const releases = new WeakMap<DatabaseConnection, () => void>();
    const connection = (): DatabaseConnection => ({
      executeQuery: <R>(q: CompiledQuery) => one(q) as Promise<QueryResult<R>>,
      streamQuery: () => {
        throw new Error('streaming queries are not supported on the writer thread');
      },
    });
    return {
      async init() {},
      async acquireConnection() {
        const release = await turn.take();
        const c = connection();
        releases.set(c, release);
        return c;
      },
      // IMMEDIATE, as every transaction of this server on SQLite (store/db.ts).
      async beginTransaction(c) {
        await c.executeQuery(CompiledQuery.raw('begin immediate'));
      },
      async commitTransaction(c) {
        await c.executeQuery(CompiledQuery.raw('commit'));
      },
      // The thread rolls back only a transaction still open (SQLite ends one itself on SQLITE_FULL).
      async rollbackTransaction(c) {
        await c.executeQuery(CompiledQuery.raw('rollback'));
      },
      releaseConnection(c) {
        releases.get(c)?.();
        return Promise.resolve();
      },
      async destroy() {},
    };
  }
  createQueryCompiler() {
    return new SqliteQueryCompiler();
  }
  createIntrospector(db: Kysely<unknown>) {
    return new SqliteIntrospector(db);
  }
}
