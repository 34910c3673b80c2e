// The SQL check of osquery configurations (src/lib/sql-check.ts): SQLite syntax through the
// grammar parser, its answers kept by text, and the server's parsing of new SQL in a worker
// thread (src/server/lib/sql-worker.ts) so that a write of long queries never holds the event loop.
import { describe, expect, it } from 'vitest';
import { checkSql, SQL_MAX, uncheckedSql } from '../../src/lib/sql-check.js';
import { parseOffLoop } from '../../src/server/lib/sql-worker.js';

const CASES: [string, string | RegExp | undefined][] = [
  ['SELECT uid, username FROM users WHERE uid > 500', undefined],
  ['SELECT * FORM users', /^SQL syntax error at line 1, column \d+ near "[^"]*FORM users/],
  ['SELECT 1; SELECT 2', 'must be one statement, not 2'],
  ['DELETE FROM users', 'must be a SELECT statement, not DELETE'],
  ['  ', 'must not be empty (the SQL to run)'],
  [`SELECT '${'x'.repeat(SQL_MAX)}'`, `is longer than ${SQL_MAX} characters`],
];

function expectAnswers(tag: string): void {
  for (const [sql, want] of CASES) {
    const got = checkSql(sql.trim() ? `${sql} -- ${tag}` : sql);
    if (want instanceof RegExp) expect(got).toMatch(want);
    else expect(got).toBe(want);
  }
}

describe('checkSql', () => {
  it('accepts one SELECT over tables it does not know; says what is wrong otherwise, the same each time', () => {
    expectAnswers('here');
    expectAnswers('here');
  });

  it('the server parses new SQL in a worker: the event loop keeps turning, and the answers are the same', async () => {
    const texts = CASES.map(([sql]) => (sql.trim() ? `${sql} -- worker` : sql));
    // A long query: most of a second of parsing, which on the event loop would let no timer run.
    const long = [`SELECT 1 FROM t WHERE ${Array.from({ length: 600 }, (_, i) => `c = ${i}`).join(' OR ')}`];
    const found = uncheckedSql(() => [...texts, ...long].forEach(checkSql));
    expect(found).toEqual([texts[0], texts[1], texts[2], texts[3], ...long]);
    // The loop turns while the worker parses: a callback queued now runs before the answers are in
    // (parsing on the loop would run first, whatever the machine's speed).
    let parsed = false;
    const turnedWhileParsing = new Promise<boolean>((resolve) => setImmediate(() => resolve(!parsed)));
    await parseOffLoop(found);
    parsed = true;
    expect(await turnedWhileParsing).toBe(true);
    expect(uncheckedSql(() => [...texts, ...long].forEach(checkSql))).toEqual([]);
    expectAnswers('worker');
    for (const sql of long) expect(checkSql(sql)).toBeUndefined();
  });
});
