// Opening the database: the one query layer (Kysely) over SQLite (a file path, the default) or
// PostgreSQL (a postgres:// URL, for several replicas on one database). Migrations run on open.
import {
  CompiledQuery,
  Kysely,
  Migrator,
  SqliteDialect,
  SqliteDriver,
  type DatabaseConnection,
  type QueryResult,
  type SqliteDialectConfig,
} from 'kysely';
import { statfs } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import type { DB } from './schema.js';
import { migrationProvider } from './migrations.js';
import type { Dialect } from './dialect.js';
import { startCheckpointer, type CheckpointTiming } from './sqlite-checkpoint.js';
import { startWarmer } from './sqlite-warm.js';
import { AdminSqliteDialect } from './sqlite-thread.js';
import { rollbackIfOpen } from './sqlite-rollback.js';
import { startSqliteWriter, type WriteStage } from './sqlite-writer.js';
import { sqliteReadNow, type ReadNow } from './sqlite-read-now.js';
import { stepsOver, type WriteNow, type WriteSteps } from './write-steps.js';
import { sqliteWriteNow } from './sqlite-write-now.js';
import { SQLITE_MMAP_BYTES } from './sqlite-mmap.js';
import { ServerSetupError } from '../setup-error.js';
import { SERVER_VERSION } from '../version.js';
import { slowQueryLog, slowQueryMs } from './slow-queries.js';

/** Read connections (threads) of the admin door on SQLite: one long read leaves the other free. */
const ADMIN_THREADS = 2;

export interface Store {
  db: Kysely<DB>;
  /**
   * What the admin door queries through. SQLite: its reads on connections of worker threads, its
   * writes and transactions on `db`'s connection (store/sqlite-thread.ts), so an admin read never
   * holds the event loop; PostgreSQL: `db` itself (node-postgres never blocks the loop).
   */
  adminDb: Kysely<DB>;
  dialect: Dialect;
  /**
   * The agent door's batched writes (check-in flushes, enrolls): the statements in one
   * transaction, their results in order. SQLite: in a writer thread (store/sqlite-writer.ts), so
   * neither the work nor a wait for another process's lock holds the event loop; PostgreSQL: a
   * transaction on the pool (node-postgres never blocks the loop).
   */
  write: (statements: CompiledQuery[]) => Promise<QueryResult<unknown>[]>;
  /**
   * The same connection as `write`, for an agent-door transaction whose statements depend on
   * earlier answers (the log spool's append), a step of statements at a time (write-steps.ts).
   */
  writeSteps: WriteSteps;
  /**
   * SQLite: a small agent-door transaction (a log batch's append) run at once on the event loop's
   * own connection when the write lock is free (sqlite-write-now.ts); absent on PostgreSQL.
   */
  writeNow?: WriteNow;
  /** SQLite: a short read at once on the event loop's own connection (sqlite-read-now.ts); absent on PostgreSQL. */
  readNow?: ReadNow;
  /**
   * Runs `fn` while no other process holds the start-up lock of this database (PostgreSQL: an
   * advisory lock), so replicas starting together migrate and bootstrap one after the other.
   */
  exclusive<T>(fn: () => Promise<T>): Promise<T>;
  /** SQLite: why a write would fail for lack of space now (see Deps.outOfSpace). */
  outOfSpace?: () => Promise<string | undefined>;
  /** The migrations this open applied (empty when the schema was current). */
  migrated: string[];
  /**
   * Brings the planner's statistics up to date after a bulk load (the --dev seed): which index
   * answers a filter best depends on how many rows match (a tag on 1% or 70% of the nodes).
   */
  analyze(): Promise<void>;
  close(): Promise<void>;
}

/** Below this much free space on the database's file system, SQLite writes are expected to fail. */
export const MIN_FREE_BYTES = 1024 * 1024;

/** Where the data lives: a postgres:// URL, or else a SQLite file path. */
export function isPostgresUrl(db: string): boolean {
  return /^postgres(ql)?:\/\//i.test(db);
}

export class MissingDependencyError extends Error {}

export async function loadSqlite(): Promise<typeof import('better-sqlite3')> {
  try {
    const Database = (await import('better-sqlite3')).default;
    // The native binding loads at the first open, not at import: a package whose build failed
    // must fail here, as one line, not with the binding loader's list of paths.
    new Database(':memory:').close();
    return Database;
  } catch (e) {
    throw new MissingDependencyError(
      'the embedded database needs the optional package better-sqlite3, which is not installed or did not build ' +
        `(${(e as Error).message.split('\n')[0]}); install python3, make and g++, then run npm ci again (or npm rebuild better-sqlite3)`,
    );
  }
}

/**
 * `migrate: false` opens without migrating (fleetctl server migrate --dry-run); `warn` hears of
 * background trouble (a checkpoint or an optimize that failed), the server's log (issue 27).
 */
export async function openSqlite(
  path: string,
  o: {
    migrate?: boolean;
    warn?: (line: string) => void;
    onCheckpoint?: (mode: CheckpointTiming[0], ms: number) => void;
    /** Each stage of each agent-door write transaction (sqlite-writer.ts) and its milliseconds. */
    onWrite?: (stage: WriteStage, ms: number) => void;
    /** Read the whole file again and again (sqlite-warm.ts): a process that serves requests. */
    warm?: boolean;
  } = {},
): Promise<Store> {
  const warn = o.warn ?? ((line: string) => console.error(line));
  const Database = await loadSqlite();
  const sqlite = new Database(path);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('foreign_keys = ON');
  // No sleeping inside SQLite on the event loop: a write that finds the lock taken (by the agent
  // writer thread, another worker or replica) is retried after an await (withLockRetry, below).
  sqlite.pragma('busy_timeout = 0');
  sqlite.pragma('cache_size = -65536'); // 64 MiB of page cache: a 100k-node fleet's indexes stay in memory
  sqlite.pragma(`mmap_size = ${SQLITE_MMAP_BYTES}`);
  // Checkpoints run in a thread of their own (store/sqlite-checkpoint.ts), never inside a commit
  // on the event loop. No journal_size_limit: a commit that starts the log over would truncate
  // the WAL file there, on the event loop; the checkpoint thread keeps the file small instead.
  sqlite.pragma('wal_autocheckpoint = 0');
  const checkpointer = startCheckpointer(
    path,
    (message, code) => warn(`sqlite checkpoint of ${path} failed${code ? ` (${code})` : ''}: ${message}`),
    { onTiming: o.onCheckpoint },
  );
  // The file's pages read again and again: a read through the map whose page the machine dropped
  // waits for the disk on the event loop (sqlite-warm.ts).
  let warnedWarm = 0;
  const warmer = o.warm
    ? startWarmer(path, {
        onError: (e) => {
          if (Date.now() - warnedWarm < 600_000) return;
          warnedWarm = Date.now();
          warn(`sqlite: reading ${path} into the page cache failed: ${e.message}`);
        },
      })
    : undefined;
  // FLEETCTL_SLOW_QUERY_MS: statements slower than that logged with SQLite's plan (slow-queries.ts).
  const slowMs = slowQueryMs();
  const explain = (text: string, params: readonly unknown[]) =>
    Promise.resolve(
      (sqlite.prepare(`explain query plan ${text}`).all(...(params as unknown[])) as { detail: string }[]).map((r) => r.detail),
    );
  const log = slowMs === undefined ? undefined : slowQueryLog(slowMs, explain);
  const cached = withStatementCache(sqlite);
  const db = new Kysely<DB>({ dialect: new ImmediateSqliteDialect({ database: cached }), ...(log ? { log } : {}) });
  let migrated: string[];
  try {
    migrated = o.migrate === false ? [] : await migrate(db, 'sqlite');
  } catch (e) {
    await warmer?.close();
    await checkpointer.close();
    throw e;
  }
  const outOfSpace = async (): Promise<string | undefined> => {
    // The page limit (PRAGMA max_page_count) and the file system's free space.
    const pages = Number(sqlite.pragma('page_count', { simple: true }));
    const max = Number(sqlite.pragma('max_page_count', { simple: true }));
    const free = Number(sqlite.pragma('freelist_count', { simple: true }));
    if (pages >= max && free === 0) return `the database reached its page limit (${max} pages)`;
    const fs = await statfs(dirname(resolve(path)));
    const avail = Number(fs.bavail) * Number(fs.bsize);
    if (avail < MIN_FREE_BYTES) return `${avail} bytes free on the database's file system`;
    return undefined;
  };
  // Statistics for the planner (SQLite keeps none unless asked): at open, then hourly, the
  // tables that changed much since their last analysis, each sampled (analysis_limit) so it
  // costs milliseconds, not a pass over a million rows. SQLite's documented practice.
  const optimize = () => {
    try {
      sqlite.pragma('analysis_limit = 1000');
      sqlite.pragma('optimize = 0x10002');
    } catch (e) {
      // Busy (another process writing) or read-only: the old statistics stay; try next time.
      if (!/SQLITE_BUSY|readonly/i.test(String((e as { code?: string }).code ?? e)))
        warn(`sqlite optimize failed: ${(e as Error).message ?? String(e)}`);
    }
  };
  optimize();
  const timer = setInterval(optimize, 3600_000);
  timer.unref();
  const adminDb = new Kysely<DB>({ dialect: new AdminSqliteDialect(db, path, ADMIN_THREADS), ...(log ? { log } : {}) });
  const writer = startSqliteWriter(path, { onTiming: o.onWrite });
  // One process at a time per file already: SQLite's own locks serialise writers.
  return {
    db,
    dialect: 'sqlite',
    write: (statements) => writer.transaction(statements),
    migrated,
    writeSteps: writer.steps,
    writeNow: sqliteWriteNow(cached),
    readNow: sqliteReadNow(cached),
    exclusive: (fn) => fn(),
    outOfSpace,
    analyze: async () => optimize(),
    adminDb,
    close: async () => {
      clearInterval(timer);
      await adminDb.destroy();
      await writer.close();
      await db.destroy();
      await warmer?.close();
      await checkpointer.close();
    },
  };
}

/** How long a write waits for the database's write lock, in all (as busy_timeout did). */
const LOCK_WAIT_MS = 5000;

const isBusy = (e: unknown) => {
  const code = (e as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
};

/**
 * Runs `q`, and when SQLite answers SQLITE_BUSY (the write lock is another connection's), tries
 * again after an await, 1 ms doubling to 50 ms, for LOCK_WAIT_MS in all. better-sqlite3 waits
 * inside SQLite otherwise (busy_timeout), on the calling thread: the event loop stopped for as
 * long as another process's transaction took, and a transaction of this process's own agent
 * writer thread that was waiting for the event loop to send its next statement could then never
 * finish (the two waited for each other until the timeout). SQLITE_BUSY comes before the
 * statement changed anything, so trying it again is safe.
 */
async function withLockRetry<T>(run: () => Promise<T>): Promise<T> {
  const give = Date.now() + LOCK_WAIT_MS;
  for (let pause = 1; ; pause = Math.min(50, pause * 2)) {
    try {
      return await run();
    } catch (e) {
      if (!isBusy(e) || Date.now() >= give) throw e;
      await new Promise((r) => setTimeout(r, pause));
    }
  }
}

/**
 * Transactions begin IMMEDIATE: they take the write lock up front (a deferred BEGIN that reads
 * first and then writes fails at once with SQLITE_BUSY when another process wrote meanwhile).
 * Taking the lock, and any statement outside a transaction, waits for it without blocking the
 * event loop (withLockRetry); inside a transaction the lock is held, and nothing waits.
 */
class ImmediateSqliteDialect extends SqliteDialect {
  constructor(private readonly cfg: SqliteDialectConfig) {
    super(cfg);
  }
  override createDriver() {
    const inTransaction = new WeakSet<DatabaseConnection>();
    const retrying = (c: DatabaseConnection): DatabaseConnection => ({
      executeQuery: (q) => (inTransaction.has(c) ? c.executeQuery(q) : withLockRetry(() => c.executeQuery(q))),
      streamQuery: (q, chunk) => c.streamQuery(q, chunk),
    });
    const wrapped = new WeakMap<DatabaseConnection, DatabaseConnection>();
    const inner = new WeakMap<DatabaseConnection, DatabaseConnection>();
    return new (class extends SqliteDriver {
      override async acquireConnection(): Promise<DatabaseConnection> {
        const c = await super.acquireConnection();
        let w = wrapped.get(c);
        if (!w) {
          w = retrying(c);
          wrapped.set(c, w);
          inner.set(w, c);
        }
        return w;
      }
      override async beginTransaction(connection: DatabaseConnection): Promise<void> {
        const c = inner.get(connection) ?? connection;
        await withLockRetry(() => c.executeQuery(CompiledQuery.raw('begin immediate')));
        inTransaction.add(c);
      }
      override async commitTransaction(connection: DatabaseConnection): Promise<void> {
        const c = inner.get(connection) ?? connection;
        await c.executeQuery(CompiledQuery.raw('commit'));
        inTransaction.delete(c);
      }
      override async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
        const c = inner.get(connection) ?? connection;
        try {
          await rollbackIfOpen(c);
        } finally {
          inTransaction.delete(c);
        }
      }
    })(this.cfg);
  }
}

type SqliteDb = InstanceType<typeof import('better-sqlite3')>;

/**
 * Kysely prepares every query it runs; preparing is a large share of a short query's cost.
 * Kysely compiles the same SQL text for the same query shape, so prepared statements are kept
 * by text (bounded). Safe because Kysely runs each statement to completion (all/run) before the
 * next one on this single connection; nothing here streams with iterate().
 */
function withStatementCache(sqlite: SqliteDb): SqliteDb {
  const cache = new Map<string, ReturnType<SqliteDb['prepare']>>();
  const prepare = sqlite.prepare.bind(sqlite);
  return new Proxy(sqlite, {
    get(target, prop) {
      if (prop !== 'prepare') {
        const v = Reflect.get(target, prop, target) as unknown;
        return typeof v === 'function' ? ((v as (...a: unknown[]) => unknown).bind(target) as unknown) : v;
      }
      return (text: string) => {
        let stmt = cache.get(text);
        if (!stmt) {
          stmt = prepare(text);
          if (cache.size >= 1000) cache.delete(cache.keys().next().value!);
          cache.set(text, stmt);
        }
        return stmt;
      };
    },
  });
}

/**
 * A database migrated by a newer fleetctl (issue 27): this binary does not know its schema, and
 * running on it could corrupt what the newer release stores.
 */
export class SchemaTooNewError extends ServerSetupError {}

/** Names of the migrations applied to the database (none on a new one). */
export async function appliedMigrations(db: Kysely<DB>): Promise<string[]> {
  const tables = await db.introspection.getTables({ withInternalKyselyTables: true });
  if (!tables.some((t) => t.name === 'kysely_migration')) return [];
  const rows = await (db as unknown as Kysely<{ kysely_migration: { name: string } }>)
    .selectFrom('kysely_migration')
    .select('name')
    .orderBy('name')
    .execute();
  return rows.map((r) => r.name);
}

/** The migrations this release knows, in order. */
export async function migrationNames(dialect: Dialect): Promise<string[]> {
  return Object.keys(await migrationProvider(dialect).getMigrations()).sort();
}

/** The migrations this release would apply to the database (none when it is current). */
export async function pendingMigrations(db: Kysely<DB>, dialect: Dialect): Promise<string[]> {
  const applied = new Set(await appliedMigrations(db));
  return Object.keys(await migrationProvider(dialect).getMigrations())
    .filter((n) => !applied.has(n))
    .sort();
}

/**
 * Applies the migrations this release knows and the database lacks; returns their names. Refuses
 * (SchemaTooNewError, before any change) a database that has migrations this release does not know.
 */
export async function migrate(db: Kysely<DB>, dialect: Dialect): Promise<string[]> {
  const provider = migrationProvider(dialect);
  const known = new Set(Object.keys(await provider.getMigrations()));
  const unknown = (await appliedMigrations(db)).filter((n) => !known.has(n));
  if (unknown.length > 0) {
    throw new SchemaTooNewError(
      `the database's schema is newer than this fleetctl ${SERVER_VERSION} knows (its migration ${unknown[unknown.length - 1]} is not one of ours): run the release that upgraded it, or restore the backup taken before the upgrade`,
    );
  }
  const migrator = new Migrator({ db, provider });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error');
    throw new Error(`database migration ${failed?.migrationName ?? ''} failed: ${(error as Error).message}`);
  }
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/** `statements` in one transaction on `db` (Store.write where there is no writer thread: PostgreSQL, tests). */
export function writeInTransaction(db: Kysely<DB>, statements: CompiledQuery[]): Promise<QueryResult<unknown>[]> {
  return stepsOver(db)((step) => step(statements, true));
}

/**
 * Runs fn in a transaction, or inside the one `db` already is: a service that changes several
 * rows can join the transaction of a caller that also writes its audit row, so the change and
 * its audit commit together or not at all.
 */
export function inTransaction<T>(db: Kysely<DB>, fn: (trx: Kysely<DB>) => Promise<T>): Promise<T> {
  return db.isTransaction ? fn(db) : db.transaction().execute(fn);
}

/**
 * Runs a service with `deps.db` as one transaction: the rows it changes and its audit row commit
 * together or not at all (a crash or an error half-way leaves nothing behind). For services that
 * audit only what succeeded; failures audited before a refusal must not be rolled back with it.
 */
export function atomically<D extends { db: Kysely<DB> }, T>(deps: D, fn: (deps: D) => Promise<T>): Promise<T> {
  return inTransaction(deps.db, (trx) => fn({ ...deps, db: trx }));
}
