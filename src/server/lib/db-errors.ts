// What kind of database trouble an error is, on either database: the one place that knows
// SQLite's and PostgreSQL's error codes. Both doors and every background task ask it, so a
// database that is down or full is answered 503 (retry later) everywhere, never 500, and never
// taken for a client's fault.

export type DbFault =
  /** The database cannot be reached or refused the connection (restart, network, pool exhausted). */
  | 'unavailable'
  /** A write failed for lack of space (disk full, SQLite's page limit). */
  | 'no_space'
  /** Locked or busy longer than the busy timeout: transient. */
  | 'busy';

const PG_CONNECTION_MESSAGES = [
  'connection terminated',
  'timeout exceeded when trying to connect',
  'client has encountered a connection error',
  'connection refused',
  'the database system is starting up',
  'the database system is shutting down',
  'terminating connection due to administrator command',
  'cannot use a pool after calling end',
  'client was closed and is not queryable',
];

export function dbFault(e: unknown): DbFault | undefined {
  if (!e || typeof e !== 'object') return undefined;
  const err = e as { code?: unknown; message?: unknown };
  const code = typeof err.code === 'string' ? err.code : '';
  const message = typeof err.message === 'string' ? err.message.toLowerCase() : '';
  // SQLite (better-sqlite3 puts the extended code in `code`).
  if (code === 'SQLITE_FULL' || (code === 'SQLITE_IOERR_WRITE' && /no space|disk/.test(message))) return 'no_space';
  if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) return 'busy';
  if (code.startsWith('SQLITE_IOERR') || code === 'SQLITE_CANTOPEN' || code.startsWith('SQLITE_READONLY')) return 'unavailable';
  // PostgreSQL SQLSTATEs: 53100 disk_full, 53xxx insufficient resources, 08xxx connection
  // exceptions, 57P01-57P03 shutdown / cannot connect now, 40001/40P01 serialisation and deadlock.
  if (/^[0-9A-Z]{5}$/.test(code)) {
    if (code === '53100') return 'no_space';
    if (code.startsWith('53') || code.startsWith('08') || code.startsWith('57P')) return 'unavailable';
    if (code === '40001' || code === '40P01' || code === '55P03') return 'busy';
    return undefined;
  }
  // Node's socket errors (node-postgres connecting or mid-query).
  if (['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN'].includes(code))
    return 'unavailable';
  if (code === 'ENOSPC' || code === 'EDQUOT') return 'no_space';
  if (PG_CONNECTION_MESSAGES.some((m) => message.includes(m))) return 'unavailable';
  return undefined;
}

/**
 * What a query meets once the store was closed under it: Kysely's own refusal, better-sqlite3's,
 * node-postgres's, and our SQLite threads'. Only the server's shutdown closes the store, so the
 * admin error handler (app.ts) takes these for the shutdown while the server is closing; at any
 * other time they are what they were (dbFault decides: an outage, or a bug).
 */
const STORE_CLOSED_MESSAGES = [
  'driver has already been destroyed',
  'the database connection is not open',
  'cannot use a pool after calling end',
  'client was closed and is not queryable',
  'the database thread ended',
  'the database writer thread is closed',
];

export function storeClosed(e: unknown): boolean {
  const message = e instanceof Error ? e.message.toLowerCase() : '';
  return STORE_CLOSED_MESSAGES.some((m) => message.includes(m));
}
