// Issue 31: the log spool's append runs in the agent door's writer thread as two steps (two
// messages) instead of a message per statement. A step that fails, or a caller that throws
// between steps, must leave nothing of the transaction behind, and the thread must take the
// next transaction as if nothing happened.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { CompiledQuery } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { startSqliteWriter, type SqliteWriter } from '../../src/server/store/sqlite-writer.js';

const q = (sql: string, ...params: unknown[]) => CompiledQuery.raw(sql, params);

const dirs: string[] = [];
const writers: SqliteWriter[] = [];
afterEach(async () => {
  for (const w of writers.splice(0)) await w.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function open(o: Parameters<typeof startSqliteWriter>[1] = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'fleetctl-steps-'));
  dirs.push(dir);
  const path = join(dir, 'steps.db');
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.exec('create table t (id integer primary key, v text not null unique)');
  const writer = startSqliteWriter(path, o);
  writers.push(writer);
  const values = () => (db.prepare('select v from t order by id').all() as { v: string }[]).map((r) => r.v);
  return { db, writer, values };
}

describe('the writer thread, a step at a time', () => {
  it('commits after the last step, and the later step sees what the earlier one wrote', async () => {
    const { writer, values } = open();
    const n = await writer.steps(async (step) => {
      await step([q("insert into t (v) values ('a')"), q("insert into t (v) values ('b')")]);
      expect(values()).toEqual([]); // not committed yet: another connection sees nothing
      const [count] = await step([q('select count(*) as n from t')], true);
      return (count.rows[0] as { n: number }).n;
    });
    expect(n).toBe(2);
    expect(values()).toEqual(['a', 'b']);
  });

  it('commits when the caller ends without saying which step was last', async () => {
    const { writer, values } = open();
    await writer.steps(async (step) => void (await step([q("insert into t (v) values ('a')")])));
    expect(values()).toEqual(['a']);
  });

  it('a failing step leaves nothing of its transaction, and the next transaction runs', async () => {
    const { writer, values } = open();
    await expect(
      writer.steps(async (step) => {
        await step([q("insert into t (v) values ('a')")]);
        await step([q("insert into t (v) values ('b')"), q("insert into t (v) values ('a')")], true);
      }),
    ).rejects.toMatchObject({ code: 'SQLITE_CONSTRAINT_UNIQUE' });
    expect(values()).toEqual([]);
    await writer.transaction([q("insert into t (v) values ('c')")]);
    expect(values()).toEqual(['c']);
  });

  it('a caller that throws between steps rolls the transaction back', async () => {
    const { writer, values } = open();
    await expect(
      writer.steps(async (step) => {
        await step([q("insert into t (v) values ('a')")]);
        throw new Error('the caller gave up');
      }),
    ).rejects.toThrow('the caller gave up');
    expect(values()).toEqual([]);
    await writer.steps(async (step) => step([q("insert into t (v) values ('b')")], true));
    expect(values()).toEqual(['b']);
  });

  it('transactions asked for at once run one after the other, never interleaved', async () => {
    const { writer, values } = open();
    const one = (v: string) =>
      writer.steps(async (step) => {
        await step([q('insert into t (v) values (?)', `${v}1`)]);
        await new Promise((r) => setImmediate(r));
        await step([q('insert into t (v) values (?)', `${v}2`)], true);
      });
    await Promise.all([one('x'), one('y'), writer.transaction([q("insert into t (v) values ('z')")])]);
    expect(values()).toEqual(['x1', 'x2', 'y1', 'y2', 'z']);
  });

  it("times each stage of a transaction: its turn, SQLite's write lock once, each step's statements, the commit once", async () => {
    const stages: string[] = [];
    const { writer, values } = open({ onTiming: (stage, ms) => void (expect(ms).toBeGreaterThanOrEqual(0), stages.push(stage)) });
    await writer.steps(async (step) => {
      await step([q("insert into t (v) values ('a')")]);
      await step([q("insert into t (v) values ('b')")], true);
    });
    expect(stages).toEqual(['turn', 'lock', 'statements', 'statements', 'commit']);
    stages.length = 0;
    // A failed step is not timed: its transaction ended in the thread's rollback.
    await expect(writer.transaction([q("insert into t (v) values ('a')")])).rejects.toThrow(/UNIQUE/);
    expect(stages).toEqual(['turn']);
    expect(values()).toEqual(['a', 'b']);
  });
});
