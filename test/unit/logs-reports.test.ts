// Issue 30: a query's current rows from the result lines osquery sends (report-state.ts), and
// how the CLI turns lines into table rows (commands/logs/rows.ts). Formats as osquery 5 sends
// them: event (one row per line), snapshot, and batch (diffResults).
import { describe, expect, it } from 'vitest';
import { applyEntry, boundedRows, REPORT_MAX_ROWS, stateRows, type ReportState } from '../../src/server/services/logs/report-state.js';
import { logRows, pairsText, severityName } from '../../src/commands/logs/rows.js';
import type { LogLine } from '../../src/api/index.js';

const ev = (action: 'added' | 'removed', columns: Record<string, string>, counter = 1, epoch = 0) => ({
  name: 'q',
  action,
  columns,
  counter,
  epoch,
  unixTime: 1,
});
const apply = (entries: unknown[], s?: ReportState) => entries.reduce<ReportState | undefined>((st, e) => applyEntry(st, e), s);

describe('query report state', () => {
  it('a snapshot replaces the rows whole', () => {
    let s = apply([{ name: 'q', action: 'snapshot', snapshot: [{ a: '1' }, { a: '2' }] }]);
    expect(s!.kind).toBe('snapshot');
    s = apply([{ name: 'q', action: 'snapshot', snapshot: [{ a: '3' }] }], s);
    expect(stateRows(s!)).toEqual([{ a: '3' }]);
  });
  it('differential events add and remove rows, matched whatever the key order', () => {
    const s = apply([
      ev('added', { a: '1', b: 'x' }, 0),
      ev('added', { a: '2', b: 'y' }, 0),
      ev('removed', { b: 'x', a: '1' }, 1),
      ev('added', { a: '3', b: 'z' }, 1),
    ]);
    expect(s!.kind).toBe('differential');
    expect(stateRows(s!)).toEqual([
      { a: '2', b: 'y' },
      { a: '3', b: 'z' },
    ]);
    expect(s!.counter).toBe(1);
  });
  it('identical rows count: one removal takes one', () => {
    const s = apply([ev('added', { a: '1' }, 0), ev('added', { a: '1' }, 0), ev('removed', { a: '1' }, 1)]);
    expect(stateRows(s!)).toEqual([{ a: '1' }]);
  });
  it('batch format (diffResults) applies removed, then added', () => {
    const s = apply([
      { name: 'q', counter: 0, epoch: 0, diffResults: { added: [{ a: '1' }, { a: '2' }], removed: [] } },
      { name: 'q', counter: 1, epoch: 0, diffResults: { added: [{ a: '3' }], removed: [{ a: '1' }] } },
    ]);
    expect(stateRows(s!)).toEqual([{ a: '2' }, { a: '3' }]);
  });
  it("a first run again (counter 0 after a later one, or a new epoch) starts from its rows: a wiped agent's old rows go", () => {
    let s = apply([ev('added', { a: '1' }, 0), ev('added', { a: '2' }, 3)]);
    s = apply([ev('added', { a: '9' }, 0)], s);
    expect(stateRows(s!)).toEqual([{ a: '9' }]);
    s = apply([ev('added', { a: '8' }, 5, 7)], s);
    expect(stateRows(s!)).toEqual([{ a: '8' }]);
  });
  it('counters and epochs as strings count the same', () => {
    const s = apply([
      { ...ev('added', { a: '1' }), counter: '0', epoch: '0' },
      { ...ev('added', { a: '2' }), counter: '1', epoch: '0' },
    ]);
    expect(stateRows(s!)).toHaveLength(2);
  });
  it('lines without rows leave the state alone', () => {
    const s = apply([ev('added', { a: '1' }, 0)]);
    expect(apply([{ name: 'q' }, 'text', null, { action: 'added' }], s)).toBe(s);
    expect(apply([{ name: 'q' }])).toBeUndefined();
  });
  it('keeps at most REPORT_MAX_ROWS, the oldest let go, and says truncated', () => {
    const rows = Array.from({ length: REPORT_MAX_ROWS + 5 }, (_, i) => ({ i: String(i) }));
    const s = apply([{ name: 'q', counter: 0, epoch: 0, diffResults: { added: rows, removed: [] } }])!;
    const b = boundedRows(s);
    expect(b.count).toBe(REPORT_MAX_ROWS);
    expect(b.truncated).toBe(true);
    expect(JSON.parse(b.json)[0]).toEqual({ i: '5' });
    // The next diff starts from what is stored.
    expect(stateRows(s)).toHaveLength(REPORT_MAX_ROWS);
  });
  it('keeps at most 1 MiB of rows', () => {
    const big = 'x'.repeat(100_000);
    const s = apply([{ name: 'q', action: 'snapshot', snapshot: Array.from({ length: 20 }, (_, i) => ({ i: String(i), big })) }])!;
    const b = boundedRows(s);
    expect(b.json.length).toBeLessThanOrEqual(1024 * 1024);
    expect(b.truncated).toBe(true);
    expect(JSON.parse(b.json).at(-1).i).toBe('19');
  });
});

const line = (entry: unknown, o: Partial<LogLine> = {}): LogLine => ({
  id: 1,
  environment: 'prod',
  node_uuid: 'u1',
  hostname: 'web-1',
  log_type: 'result',
  name: 'q',
  received_at: '2026-11-25T10:00:00.000Z',
  entry,
  ...o,
});

describe('log lines as table rows', () => {
  it('one row per result row, whatever the format', () => {
    expect(logRows(line(ev('added', { user: 'root', uid: '0' }))).map((r) => [r.node, r.name, r.action, r.row])).toEqual([
      ['web-1', 'q', 'added', 'user=root uid=0'],
    ]);
    expect(logRows(line({ action: 'snapshot', snapshot: [{ a: '1' }, { a: '2' }] })).map((r) => r.row)).toEqual(['a=1', 'a=2']);
    expect(logRows(line({ diffResults: { added: [{ a: '1' }], removed: [{ a: '0' }] } })).map((r) => `${r.action} ${r.row}`)).toEqual([
      'added a=1',
      'removed a=0',
    ]);
    expect(logRows(line({ action: 'snapshot', snapshot: [] }))).toEqual([]);
  });
  it('a status line shows its severity and where osquery said it', () => {
    const [r] = logRows(
      line(
        { severity: '1', filename: 'scheduler.cpp', line: '84', message: 'Error executing scheduled query q: no such table: nope' },
        { log_type: 'status', name: undefined },
      ),
    );
    expect([r.action, r.row, r.name]).toEqual(['warning', 'scheduler.cpp:84 Error executing scheduled query q: no such table: nope', '']);
    expect([0, '2', 3, 'x', undefined].map(severityName)).toEqual(['info', 'error', 'fatal', undefined, undefined]);
  });
  it('quotes values with spaces, quotes or equals signs, and empty ones', () => {
    expect(pairsText({ a: 'x y', b: '', c: 'k=v', d: 'plain', e: 5 })).toBe('a="x y" b="" c="k=v" d=plain e=5');
  });
  it('an entry it does not know is shown whole, never hidden', () => {
    expect(logRows(line({ something: 'else' }))[0].row).toBe('{"something":"else"}');
  });
});

describe('what the real osqueryd 5.23.0 sent (test/fixtures/osquery/logs-5.23.0.json)', async () => {
  const { readFileSync } = await import('node:fs');
  const real = JSON.parse(readFileSync(new URL('../fixtures/osquery/logs-5.23.0.json', import.meta.url), 'utf8')) as {
    status: unknown[];
    result: { name: string }[];
  };
  it('a differential query ends with its last row; a snapshot query with its snapshot', () => {
    const time = apply(real.result.filter((e) => e.name === 'time_q'));
    expect(stateRows(time!)).toEqual([{ unix_time: '1795666755' }]);
    expect(time!.counter).toBe(2);
    expect(stateRows(apply(real.result.filter((e) => e.name === 'snap_q'))!)).toEqual([{ version: '5.23.0' }]);
  });
  it('status lines: severities as numbers, lines as numbers', () => {
    const rows = real.status.flatMap((entry) => logRows(line(entry, { log_type: 'status', name: undefined })));
    expect(rows.map((r) => r.action)).toEqual(['info', 'warning', 'info', 'error']);
    expect(rows[1].row).toBe('options.cpp:101 Cannot set unknown or invalid flag: bogus_option_xyz');
  });
});
