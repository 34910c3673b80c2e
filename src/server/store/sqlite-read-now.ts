// A short read run at once on the event loop's own SQLite connection (issue 31). Through Kysely a
// read is a chain of promises (the connection's lock, the lock retry, the driver) that cost the
// agent door's change-counter read, one per request at an agent's pace, about ten times the
// statement itself on the virtual machines measured. better-sqlite3 reads synchronously anyway:
// this only skips the chain. Inside a transaction the loop holds open across awaits (a Kysely
// transaction on this connection) it answers nothing, and the caller goes through Kysely, which
// waits for that transaction: a read here would see its uncommitted writes.
import type { CompiledQuery, Kysely } from 'kysely';

/** Rows of `q` now, or undefined: the caller reads through Kysely instead. */
export type ReadNow = (q: CompiledQuery) => unknown[] | undefined;

const isBusy = (e: unknown) => {
  const code = (e as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
};

/** `sqlite`: the loop's connection (its prepare cached by SQL text, as Kysely uses it). */
export function sqliteReadNow(sqlite: InstanceType<typeof import('better-sqlite3')>): ReadNow {
  return (q) => {
    if (sqlite.inTransaction) return undefined;
    try {
      return sqlite.prepare(q.sql).all(q.parameters as unknown[]);
    } catch (e) {
      // Kysely's path retries a busy database (db.ts withLockRetry) without holding the loop.
      if (isBusy(e)) return undefined;
      throw e;
    }
  };
}

/** Rows of `q`: through `now` when it answers, else through `db` (a reader pool, PostgreSQL). */
export async function readRows<T>(db: Kysely<any>, now: ReadNow | undefined, q: CompiledQuery): Promise<T[]> {
  return (now?.(q) ?? (await db.executeQuery(q)).rows) as T[];
}
