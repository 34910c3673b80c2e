// Issue 31: a small log-spool append is committed at once on the event loop's own connection when
// SQLite's write lock is free, and otherwise handed to the writer thread. "Not now" must change
// nothing, a failure must leave nothing behind, and the same plan must give the same result on
// either runner.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { CompiledQuery } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { sqliteWriteNow } from '../../src/server/store/sqlite-write-now.js';
import { sqliteReadNow } from '../../src/server/store/sqlite-read-now.js';
import { startSqliteWriter, type SqliteWriter } from '../../src/server/store/sqlite-writer.js';
import { runPlan, type StepPlan } from '../../src/server/store/write-steps.js';

const q = (sql: string, ...params: unknown[]) => CompiledQuery.raw(sql, params);

const dirs: string[] = [];
const writers: SqliteWriter[] = [];
const dbs: Database.Database[] = [];
afterEach(async () => {
  for (const w of writers.splice(0)) await w.close();
  for (const d of dbs.splice(0)) d.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function open() {
  const dir = mkdtempSync(join(tmpdir(), 'fleetctl-now-'));
  dirs.push(dir);
  const path = join(dir, 'now.db');
  const loop = new Database(path);
  loop.pragma('journal_mode = WAL');
  loop.pragma('busy_timeout = 0'); // as the server's loop connection (store/db.ts)
  loop.exec('create table t (id integer primary key, v text not null unique)');
  const other = new Database(path);
  dbs.push(loop, other);
  const values = () => (other.prepare('select v from t order by id').all() as { v: string }[]).map((r) => r.v);
  return { path, loop, other, now: sqliteWriteNow(loop), values };
}

/** Two steps, the second depending on the first's answer (as the spool's append with a report read). */
function* plan(v: string): StepPlan<number> {
  const [ins] = yield { statements: [q('insert into t (v) values (?) returning id', v)] };
  const id = (ins.rows[0] as { id: number }).id;
  const [, count] = yield {
    statements: [q('insert into t (v) values (?)', `${v}-after-${id}`), q('select count(*) as n from t')],
    last: true,
  };
  return (count.rows[0] as { n: number }).n;
}

describe('a write now on the event loop (sqlite-write-now.ts)', () => {
  it('commits the whole plan at once when the write lock is free', () => {
    const { now, values } = open();
    expect(now(() => plan('a'))).toEqual({ value: 2 });
    expect(values()).toEqual(['a', 'a-after-1']);
  });

  it('does not start, and changes nothing, while another connection holds the write lock', () => {
    const { now, other, values } = open();
    other.exec('begin immediate');
    other.exec("insert into t (v) values ('theirs')");
    let started = false;
    expect(
      now(function* () {
        started = true;
        return yield* plan('mine');
      }),
    ).toBeUndefined();
    expect(started).toBe(false);
    other.exec('commit');
    expect(values()).toEqual(['theirs']);
    expect(now(() => plan('mine'))).toEqual({ value: 3 });
  });

  it('does not join a transaction of its own connection left open across turns', () => {
    const { loop, now, values } = open();
    loop.exec('begin immediate');
    expect(now(() => plan('a'))).toBeUndefined();
    loop.exec('rollback');
    expect(values()).toEqual([]);
  });

  it('a failing statement rolls the plan back, keeps the database error, and the next plan runs', () => {
    const { loop, now, values } = open();
    now(() => plan('a'));
    expect(() =>
      now(function* () {
        yield { statements: [q("insert into t (v) values ('b')")] };
        yield { statements: [q("insert into t (v) values ('a')")], last: true };
      }),
    ).toThrow(expect.objectContaining({ code: 'SQLITE_CONSTRAINT_UNIQUE' }));
    expect(loop.inTransaction).toBe(false);
    expect(values()).toEqual(['a', 'a-after-1']);
    expect(now(() => plan('c'))).toEqual({ value: 4 });
  });

  it('a plan that throws between steps is rolled back', () => {
    const { loop, now, values } = open();
    expect(() =>
      now(function* () {
        yield { statements: [q("insert into t (v) values ('a')")] };
        throw new Error('the plan gave up');
      }),
    ).toThrow('the plan gave up');
    expect(loop.inTransaction).toBe(false);
    expect(values()).toEqual([]);
  });

  it('the writer thread runs the same plan to the same result', async () => {
    const { path, values } = open();
    const writer = startSqliteWriter(path);
    writers.push(writer);
    expect(await runPlan(writer.steps, () => plan('a'))).toBe(2);
    expect(values()).toEqual(['a', 'a-after-1']);
  });
});

describe('a read now on the event loop (sqlite-read-now.ts)', () => {
  it("reads the committed rows, another connection's commits included", () => {
    const { loop, other } = open();
    const read = sqliteReadNow(loop);
    other.prepare('insert into t (v) values (?)').run('x');
    expect(read(q('select v from t where v = ?', 'x'))).toEqual([{ v: 'x' }]);
    other.prepare('insert into t (v) values (?)').run('y');
    expect(read(q('select count(*) as n from t'))).toEqual([{ n: 2 }]);
  });

  it('answers nothing inside a transaction the loop holds open (its writes are not committed)', () => {
    const { loop, values } = open();
    const read = sqliteReadNow(loop);
    loop.exec('begin immediate');
    loop.prepare('insert into t (v) values (?)').run('uncommitted');
    expect(read(q('select v from t'))).toBeUndefined();
    loop.exec('rollback');
    expect(read(q('select v from t'))).toEqual([]);
    expect(values()).toEqual([]);
  });

  it('throws what SQLite reports, other than busy', () => {
    const { loop } = open();
    expect(() => sqliteReadNow(loop)(q('select nope from t'))).toThrow(/no such column/);
  });
});
