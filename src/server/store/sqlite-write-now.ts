// A small agent-door write transaction run at once on the event loop's own SQLite connection
// (issue 31). Each transaction handed to the writer thread (sqlite-writer.ts) costs two thread
// wake-ups besides its SQL, and on the virtual machines measured a wake-up costs more CPU than a
// log batch's whole SQL (npm run bench:handoff). So the spool's append of a small group is tried
// here first: BEGIN IMMEDIATE with busy_timeout 0 (db.ts) either takes the write lock at once or
// fails with SQLITE_BUSY having changed nothing, and then the group goes to the writer thread as
// before. The plan runs synchronously from BEGIN to COMMIT, so no other code of this process
// runs inside the transaction, and a transaction of the loop's own that spans turns (a Kysely
// transaction waiting on an await) is never joined: the append then goes to the thread too.
import type { QueryResult } from 'kysely';
import type { StepPlan, WriteNow } from './write-steps.js';

const isBusy = (e: unknown) => {
  const code = (e as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
};

/** `sqlite`: the loop's connection (its prepare cached by SQL text, as Kysely uses it). */
export function sqliteWriteNow(sqlite: InstanceType<typeof import('better-sqlite3')>): WriteNow {
  const run = (sql: string, params: readonly unknown[]): QueryResult<unknown> => {
    const stmt = sqlite.prepare(sql);
    if (stmt.reader) return { rows: stmt.all(params) };
    const r = stmt.run(params);
    return { rows: [], numAffectedRows: BigInt(r.changes), insertId: BigInt(r.lastInsertRowid) };
  };
  return <T>(plan: () => StepPlan<T>): { value: T } | undefined => {
    if (sqlite.inTransaction) return undefined;
    try {
      sqlite.exec('begin immediate');
    } catch (e) {
      if (isBusy(e)) return undefined;
      throw e;
    }
    try {
      const gen = plan();
      let r = gen.next();
      while (!r.done) r = gen.next(r.value.statements.map((s) => run(s.sql, s.parameters)));
      sqlite.exec('commit');
      return { value: r.value };
    } catch (e) {
      // SQLite may have ended the transaction itself (SQLITE_FULL): roll back only an open one.
      if (sqlite.inTransaction) sqlite.exec('rollback');
      throw e;
    }
  };
}
