// The PostgreSQL store: node-postgres (`pg`, loaded only when a postgres:// URL is given) under
// Kysely's PostgresDialect, a pool sized by --db-pool, TLS from the URL's sslmode and --db-ca.
import { readFileSync } from 'node:fs';
import { Kysely, PostgresDialect } from 'kysely';
import type { DB } from './schema.js';
import { migrate, MissingDependencyError, writeInTransaction, type Store } from './db.js';
import { ServerSetupError } from '../setup-error.js';
import { slowQueryLog, slowQueryMs } from './slow-queries.js';
import { stepsOver } from './write-steps.js';

export interface PostgresOptions {
  /** false: open without migrating (fleetctl server migrate --dry-run lists what is pending). */
  migrate?: boolean;
  /** Connections in the pool (default 10). */
  pool?: number;
  /** CA bundle (PEM) to verify the server's certificate; implies sslmode=verify-full. */
  caFile?: string;
  /** Sees every statement run (tests EXPLAIN them). */
  onQuery?: (sql: string, params: readonly unknown[]) => void;
  /** Told of connection errors (a restart, a dropped connection); they never end the process. */
  onError?: (e: Error) => void;
}

/** Arbitrary but fixed: the advisory lock every replica takes around migrations and bootstrap. */
const STARTUP_LOCK = 0x666c6565; // "flee"

type Pg = typeof import('pg');

async function loadPg(): Promise<Pg> {
  try {
    const m = (await import('pg')) as unknown as Pg & { default?: Pg };
    return m.default ?? m;
  } catch (e) {
    throw new MissingDependencyError(
      `PostgreSQL support needs the package pg, which is not installed (${(e as Error).message.split('\n')[0]}); run npm ci again`,
    );
  }
}

/** The URL without its password, for messages. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'postgres://…';
  }
}

/**
 * TLS as libpq's sslmode says (default: prefer is not offered by node-postgres, so no TLS unless
 * asked): disable, require (encrypted, certificate not checked, as libpq), verify-ca and
 * verify-full (checked against --db-ca or the system CAs). --db-ca alone means verify-full.
 */
function tlsOptions(
  url: URL,
  caFile: string | undefined,
): false | { rejectUnauthorized: boolean; ca?: string; checkServerIdentity?: () => undefined } {
  const mode = url.searchParams.get('sslmode') ?? (caFile ? 'verify-full' : 'disable');
  const ca = caFile ? readFileSync(caFile, 'utf8') : undefined;
  switch (mode) {
    case 'disable':
      return false;
    case 'require':
    case 'prefer':
    case 'allow':
      return { rejectUnauthorized: false };
    case 'verify-ca':
      return { rejectUnauthorized: true, ca, checkServerIdentity: () => undefined };
    case 'verify-full':
      return { rejectUnauthorized: true, ca };
    default:
      throw new ServerSetupError(`unknown sslmode "${mode}" in the database URL: use disable, require, verify-ca or verify-full`);
  }
}

/** One line for a connection that failed: what, where, never the password. */
function connectError(e: unknown, url: string): ServerSetupError {
  const err = e as NodeJS.ErrnoException & { code?: string };
  const where = redactUrl(url);
  const reason =
    err.code === 'ECONNREFUSED'
      ? 'connection refused'
      : err.code === 'ENOTFOUND'
        ? 'host not found'
        : err.code === '28P01'
          ? 'password authentication failed'
          : err.code === '3D000'
            ? 'database does not exist'
            : err.code === '28000'
              ? 'no access for this user'
              : (err.message ?? String(e)).split('\n')[0];
  return new ServerSetupError(`cannot open the PostgreSQL database ${where}: ${reason}`);
}

export async function openPostgres(url: string, opts: PostgresOptions = {}): Promise<Store> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ServerSetupError('invalid PostgreSQL URL: expected postgres://user:password@host:port/database');
  }
  const pg = await loadPg();
  // count(*), sum() and bigint columns come back as strings by default; every one of ours fits
  // in a double (counts, byte totals, TOTP steps), and the code expects numbers as on SQLite.
  pg.types.setTypeParser(20, (v) => Number(v)); // int8
  pg.types.setTypeParser(1700, (v) => Number(v)); // numeric
  const ssl = tlsOptions(parsed, opts.caFile);
  // sslmode is ours to interpret; node-postgres would read it again from the string.
  parsed.searchParams.delete('sslmode');
  const pool = new pg.Pool({
    connectionString: parsed.toString(),
    ssl,
    max: opts.pool ?? 10,
    connectionTimeoutMillis: 10_000,
    application_name: 'fleetctl-server',
  });
  // A connection the server dropped must not take the process down: the pool reports it for an
  // idle client, and a client in use (a query or transaction in progress, the start-up lock)
  // emits 'error' itself, which without a listener would be an uncaught exception. Its query
  // fails (answered 503 / retried by the task), the pool discards it, and the next checkout
  // connects anew: a database that comes back is used again without a restart.
  const onError = opts.onError ?? (() => {});
  pool.on('error', (e) => onError(e));
  pool.on('connect', (client) => {
    client.on('error', (e) => onError(e));
  });
  try {
    const c = await pool.connect();
    c.release();
  } catch (e) {
    await pool.end().catch(() => {});
    throw connectError(e, url);
  }
  const onQuery = opts.onQuery;
  // FLEETCTL_SLOW_QUERY_MS: statements slower than that logged with PostgreSQL's plan (slow-queries.ts).
  const slowMs = slowQueryMs();
  const slow =
    slowMs === undefined
      ? undefined
      : slowQueryLog(slowMs, async (text, params) =>
          (await pool.query<Record<string, string>>(`explain ${text}`, [...params])).rows.map((r) => r['QUERY PLAN'] ?? ''),
        );
  const db = new Kysely<DB>({
    dialect: new PostgresDialect({ pool }),
    ...(onQuery || slow
      ? {
          log: (e: import('kysely').LogEvent) => {
            onQuery?.(e.query.sql, e.query.parameters);
            slow?.(e);
          },
        }
      : {}),
  });
  const exclusive = async <T>(fn: () => Promise<T>): Promise<T> => {
    // A session lock on a connection of its own, held across the pool's statements.
    const lock = await pool.connect();
    try {
      await lock.query('select pg_advisory_lock($1)', [STARTUP_LOCK]);
      return await fn();
    } finally {
      await lock.query('select pg_advisory_unlock($1)', [STARTUP_LOCK]).catch(() => {});
      lock.release();
    }
  };
  let migrated: string[];
  try {
    migrated = opts.migrate === false ? [] : await exclusive(() => migrate(db, 'postgres'));
  } catch (e) {
    await db.destroy().catch(() => {});
    throw e;
  }
  // Autovacuum analyses tables as they change; a bulk load is analysed at once instead.
  const analyze = async () => void (await pool.query('analyze'));
  return {
    db,
    adminDb: db,
    dialect: 'postgres',
    write: (statements) => writeInTransaction(db, statements),
    writeSteps: stepsOver(db),
    migrated,
    exclusive,
    analyze,
    close: () => db.destroy(),
  };
}
