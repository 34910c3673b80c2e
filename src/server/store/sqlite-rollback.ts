import { CompiledQuery } from 'kysely';

/**
 * ROLLBACK, unless SQLite has ended the transaction itself: it does on some errors (SQLITE_FULL
 * on a full disk among them), and the ROLLBACK then fails with "cannot rollback - no transaction
 * is active", which Kysely throws in place of the error that caused it. Found on a real full
 * file system: every check-in flush was reported as a bug instead of the database being out of
 * space.
 */
export async function rollbackIfOpen(connection: { executeQuery(q: CompiledQuery): Promise<unknown> }): Promise<void> {
  try {
    await connection.executeQuery(CompiledQuery.raw('rollback'));
  } catch (e) {
    if (!/no transaction is active/.test((e as Error).message)) throw e;
  }
}
