// SQLite for the admin door (issue 21): better-sqlite3 answers on the calling thread, so an admin
// read of 100 ms (a count over a million audit rows, an export page) held the event loop, and
// every agent served by that process waited behind it. The admin door's reads go to a small pool
// of worker threads, each with its own connection to the same file (WAL: a reader never waits for
// the writer, and sees everything committed before it started); the event loop only hands them
// over and gets the rows back. Its writes and transactions (short: a login, a tag, a setting) go
// to the process's own connection, through the same Kysely instance the agent door uses, so one
// connection never has two transactions interleaved and a transaction reads its own writes.
import { Worker } from 'node:worker_threads';
import { createRequire } from 'node:module';
import { SQLITE_MMAP_BYTES } from './sqlite-mmap.js';
import { rollbackIfOpen } from './sqlite-rollback.js';
import {
  CompiledQuery,
  RawNode,
  SelectQueryNode,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type Kysely,
  type QueryResult,
} from 'kysely';

/** The thread's code (CommonJS, so it runs from the bundle and from the TypeScript sources alike). */
const CODE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.module);
const db = new Database(workerData.path);
db.pragma('busy_timeout = 5000');
db.pragma('foreign_keys = ON');
db.pragma('wal_autocheckpoint = 0');
db.pragma('cache_size = -32768');
db.pragma('mmap_size = ' + workerData.mmapBytes);
const statements = new Map();
parentPort.on('message', (m) => {
  if (m === 'close') {
    try { db.close(); } catch {}
    parentPort.postMessage({ closed: true });
    return;
  }
  try {
    let stmt = statements.get(m.sql);
    if (!stmt) {
      stmt = db.prepare(m.sql);
      if (statements.size >= 1000) statements.delete(statements.keys().next().value);
      statements.set(m.sql, stmt);
    }
    if (stmt.reader) parentPort.postMessage({ id: m.id, rows: stmt.all(m.params) });
    else {
      const r = stmt.run(m.params);
      parentPort.postMessage({ id: m.id, changes: r.changes, insertId: r.lastInsertRowid });
    }
  } catch (e) {
    parentPort.postMessage({ id: m.id, error: { message: String((e && e.message) || e), code: e && e.code, name: e && e.name } });
  }
});
`;

interface Reply {
  id: number;
  rows?: unknown[];
  changes?: number;
  insertId?: number | bigint;
  error?: { message: string; code?: string; name?: string };
}

class ThreadConnection implements DatabaseConnection {
  private next = 0;
  private readonly waiting = new Map<number, { resolve: (r: Reply) => void }>();

  constructor(readonly worker: Worker) {
    worker.on('message', (r: Reply) => {
      const w = this.waiting.get(r.id);
      if (!w) return;
      this.waiting.delete(r.id);
      w.resolve(r);
    });
    worker.on('error', (e) => this.failAll(e));
    worker.on('exit', () => this.failAll(Object.assign(new Error('the database thread ended'), { code: 'SQLITE_CANTOPEN' })));
  }

  private failAll(e: Error): void {
    for (const [id, w] of this.waiting) {
      this.waiting.delete(id);
      w.resolve({ id, error: { message: e.message, code: (e as { code?: string }).code } });
    }
  }

  async executeQuery<R>(q: CompiledQuery): Promise<QueryResult<R>> {
    const id = this.next++;
    const reply = await new Promise<Reply>((resolve) => {
      this.waiting.set(id, { resolve });
      this.worker.postMessage({ id, sql: q.sql, params: q.parameters });
    });
    if (reply.error) {
      // The same error as on the calling thread: its code decides 503 or 500 (lib/db-errors.ts).
      throw Object.assign(new Error(reply.error.message), { code: reply.error.code, name: reply.error.name ?? 'SqliteError' });
    }
    if (reply.rows) return { rows: reply.rows as R[] };
    return {
      rows: [],
      numAffectedRows: reply.changes === undefined ? undefined : BigInt(reply.changes),
      insertId: reply.insertId === undefined ? undefined : BigInt(reply.insertId),
    };
  }

  // eslint-disable-next-line require-yield
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('streaming queries are not supported on the admin threads');
  }
}

/** A read the threads may answer: a SELECT, or raw SQL that is one (the change counters). */
function isRead(q: CompiledQuery): boolean {
  if (SelectQueryNode.is(q.query)) return true;
  return RawNode.is(q.query) && /^\s*select\b/i.test(q.sql);
}

/** The process's own connection, held for one transaction (Kysely's connection() of the main instance). */
interface Held {
  conn: Kysely<any>;
  release: () => void;
}

class RoutingConnection implements DatabaseConnection {
  held?: Held;
  constructor(private readonly driver: RoutingSqliteDriver) {}

  executeQuery<R>(q: CompiledQuery): Promise<QueryResult<R>> {
    if (this.held) return this.held.conn.executeQuery<R>(q);
    if (isRead(q)) return this.driver.read<R>(q);
    return this.driver.main.executeQuery<R>(q);
  }

  // eslint-disable-next-line require-yield
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('streaming queries are not supported on the admin connections');
  }
}

class RoutingSqliteDriver implements Driver {
  private readonly threads: ThreadConnection[] = [];
  private readonly free: ThreadConnection[] = [];
  private readonly queue: ((c: ThreadConnection) => void)[] = [];

  constructor(
    readonly main: Kysely<any>,
    private readonly path: string,
    private readonly count: number,
  ) {}

  async init(): Promise<void> {
    const module = createRequire(import.meta.url).resolve('better-sqlite3');
    for (let i = 0; i < this.count; i++) {
      const worker = new Worker(CODE, { eval: true, workerData: { path: this.path, module, mmapBytes: SQLITE_MMAP_BYTES } });
      worker.unref();
      const c = new ThreadConnection(worker);
      this.threads.push(c);
      this.free.push(c);
    }
  }

  /** A read on a free thread (waiting for one when all are busy). */
  async read<R>(q: CompiledQuery): Promise<QueryResult<R>> {
    const t = this.free.pop() ?? (await new Promise<ThreadConnection>((resolve) => this.queue.push(resolve)));
    try {
      return await t.executeQuery<R>(q);
    } finally {
      const next = this.queue.shift();
      if (next) next(t);
      else this.free.push(t);
    }
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    return new RoutingConnection(this);
  }

  async beginTransaction(c: DatabaseConnection): Promise<void> {
    const rc = c as RoutingConnection;
    rc.held = await new Promise<Held>((resolve, reject) => {
      this.main
        .connection()
        .execute((conn) => new Promise<void>((release) => resolve({ conn, release })))
        .catch(reject);
    });
    try {
      // IMMEDIATE, as every transaction of the main connection (db.ts).
      await rc.held.conn.executeQuery(CompiledQuery.raw('begin immediate'));
    } catch (e) {
      rc.held.release();
      rc.held = undefined;
      throw e;
    }
  }

  async commitTransaction(c: DatabaseConnection): Promise<void> {
    await this.end(c as RoutingConnection, 'commit');
  }

  async rollbackTransaction(c: DatabaseConnection): Promise<void> {
    await this.end(c as RoutingConnection, 'rollback');
  }

  private async end(rc: RoutingConnection, how: 'commit' | 'rollback'): Promise<void> {
    const held = rc.held;
    if (!held) return;
    try {
      if (how === 'rollback') await rollbackIfOpen(held.conn);
      else await held.conn.executeQuery(CompiledQuery.raw(how));
    } finally {
      rc.held = undefined;
      held.release();
    }
  }

  async releaseConnection(): Promise<void> {}

  async destroy(): Promise<void> {
    await Promise.all(
      this.threads.map(
        (c) =>
          new Promise<void>((resolve) => {
            const done = () => void c.worker.terminate().finally(resolve);
            c.worker.on('message', (m: { closed?: boolean }) => m.closed && done());
            c.worker.once('exit', () => resolve());
            c.worker.postMessage('close');
            setTimeout(done, 5_000).unref();
          }),
      ),
    );
  }
}

/** Kysely's SQLite dialect over `main` for writes and `threads` worker-thread connections for reads. */
export class AdminSqliteDialect implements Dialect {
  constructor(
    private readonly main: Kysely<any>,
    private readonly path: string,
    private readonly threads = 2,
  ) {}
  createAdapter() {
    return new SqliteAdapter();
  }
  createDriver() {
    return new RoutingSqliteDriver(this.main, this.path, this.threads);
  }
  createQueryCompiler() {
    return new SqliteQueryCompiler();
  }
  createIntrospector(db: Kysely<any>) {
    return new SqliteIntrospector(db);
  }
}
