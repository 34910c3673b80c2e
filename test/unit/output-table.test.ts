import { describe, expect, it } from 'vitest';
import { printList, printObject, relativeTime, type Column } from '../../src/output/index.js';
import { displayWidth, truncate } from '../../src/output/cell.js';
import { fitWidths } from '../../src/output/table.js';
import { memoryIO } from '../helpers/memory-io.js';

const ANSI = /\x1b\[[0-9;]*m/g;
const strip = (s: string) => s.replace(ANSI, '');

interface Row {
  uuid: string;
  hostname: string;
  status: string;
  last_seen: string;
  bytes: number;
}

const ago = (ms: number) => new Date(Date.now() - ms).toISOString();
const rows: Row[] = [
  {
    uuid: '6f1c2a3b-1234-4cde-8f00-000000000001',
    hostname: 'web-1.prod.eu-west-1.example.com',
    status: 'active',
    last_seen: ago(3 * 60_000),
    bytes: 12,
  },
  { uuid: '6f1c2a3b-1234-4cde-8f00-000000000002', hostname: 'db-1', status: 'inactive', last_seen: '0001-01-01T00:00:00Z', bytes: 123456 },
  { uuid: '6f1c2a3b-1234-4cde-8f00-000000000003', hostname: 'cache', status: 'weird', last_seen: ago(2 * 86_400_000), bytes: 7 },
];
const columns: Column<Row>[] = [
  { key: 'uuid' },
  { key: 'hostname' },
  { key: 'status', kind: 'status' },
  { key: 'last_seen', header: 'LAST SEEN', kind: 'time' },
  { key: 'bytes', kind: 'number' },
];

describe('TTY table', () => {
  it('fits into 60 columns, truncating the widest columns with …', async () => {
    const io = memoryIO({ tty: true, columns: 60 });
    await printList(io, { format: 'table' }, rows, columns);
    const lines = io.stdoutText().trimEnd().split('\n');
    expect(lines).toHaveLength(4);
    for (const l of lines) expect(displayWidth(l)).toBeLessThanOrEqual(60);
    expect(lines[0]).toMatch(/^UUID +HOSTNAME +STATUS +LAST SEEN +BYTES$/);
    expect(lines[1]).toContain('…');
    // narrow columns keep their full content
    expect(lines[1]).toContain('3 minutes ago');
    expect(lines[2]).toContain('never');
    expect(lines[3]).toContain('2 days ago');
    expect(lines[2]).toMatch(/123456$/);
    expect(lines[1]).toMatch(/ {5}12$/); // numbers right-aligned
  });
  it('uses natural widths when they fit; no trailing spaces', async () => {
    const io = memoryIO({ tty: true, columns: 200 });
    await printList(io, { format: 'table' }, rows, columns);
    const lines = io.stdoutText().split('\n');
    expect(lines[1]).toContain(rows[0].uuid);
    expect(lines[1]).toContain(rows[0].hostname);
    for (const l of lines) expect(l).toBe(l.trimEnd());
  });
  it('no ANSI without color; bold header and status colors with color', async () => {
    const plain = memoryIO({ tty: true, columns: 120, color: false });
    await printList(plain, { format: 'table' }, rows, columns);
    expect(plain.stdoutText()).not.toMatch(ANSI);

    const colored = memoryIO({ tty: true, columns: 120, color: true });
    await printList(colored, { format: 'table' }, rows, columns);
    const out = colored.stdoutText();
    expect(out).toContain('\x1b[1mUUID');
    expect(out).toContain('\x1b[32mactive');
    expect(out).toContain('\x1b[31minactive');
    expect(out).not.toMatch(/\x1b\[\d+mweird/);
    expect(strip(out)).toBe(plain.stdoutText());
  });
  it('--no-headers drops the header row', async () => {
    const io = memoryIO({ tty: true, columns: 200 });
    await printList(io, { format: 'table', noHeaders: true }, rows, columns);
    const lines = io.stdoutText().trimEnd().split('\n');
    // Only the rows, the first line being the first row.
    expect(lines).toHaveLength(rows.length);
    expect(lines[0]).toMatch(/^6f1c2a3b-1234-4cde-8f00-000000000001 +web-1/);
    expect(io.stdoutText()).not.toContain('UUID');
  });
  it('empty list prints nothing on a TTY', async () => {
    const io = memoryIO({ tty: true });
    await printList(io, { format: 'table' }, [], columns);
    expect(io.stdoutText()).toBe('');
  });
  it('strips control characters from server data', async () => {
    const io = memoryIO({ tty: true, columns: 200 });
    await printList(io, { format: 'table' }, [{ ...rows[0], hostname: 'evil\x1b[2Jname' }], columns);
    expect(io.stdoutText()).not.toContain('\x1b');
    // The value is still shown, its escape character written out as text.
    expect(io.stdoutText()).toContain('evil\\x1b[2Jname');
  });
  it('status colors: yellow for degraded/PENDING, dim for unknown', async () => {
    const io = memoryIO({ tty: true, color: true });
    const items = [{ s: 'degraded' }, { s: 'PENDING' }, { s: 'IN PROGRESS' }, { s: 'unknown' }, { s: 'COMPLETED' }, { s: 'EXPIRED' }];
    await printList(io, { format: 'table', noHeaders: true }, items, [{ key: 's', kind: 'status' }]);
    expect(io.stdoutText().trimEnd().split('\n')).toEqual([
      '\x1b[33mdegraded\x1b[39m',
      '\x1b[33mPENDING\x1b[39m',
      '\x1b[33mIN PROGRESS\x1b[39m',
      '\x1b[2munknown\x1b[22m',
      '\x1b[32mCOMPLETED\x1b[39m',
      '\x1b[31mEXPIRED\x1b[39m',
    ]);
  });
});

describe('piped table', () => {
  it('is TSV with raw timestamps ("never" for the zero time), no padding and no ANSI even when color is forced', async () => {
    const io = memoryIO({ tty: false, color: true });
    await printList(io, { format: 'table' }, rows, columns);
    const out = io.stdoutText();
    expect(out).not.toMatch(ANSI);
    const lines = out.trimEnd().split('\n');
    expect(lines[0]).toBe('UUID\tHOSTNAME\tSTATUS\tLAST SEEN\tBYTES');
    expect(lines[2]).toBe(`${rows[1].uuid}\tdb-1\tinactive\tnever\t123456`);
    expect(lines[1]).toContain(rows[0].last_seen);
    for (const l of lines) expect(l.split('\t')).toHaveLength(5);
  });

  it('csv and the piped key/value view say "never" too; json keeps the API\'s zero time', async () => {
    const csv = memoryIO({ tty: false });
    await printList(csv, { format: 'csv' }, rows, columns);
    expect(csv.stdoutText().split('\n')[2]).toBe(`${rows[1].uuid},db-1,inactive,never,123456`);
    const kv = memoryIO({ tty: false });
    await printObject(kv, { format: 'table' }, rows[1], columns);
    expect(kv.stdoutText()).toContain('last_seen\tnever\n');
    const json = memoryIO({ tty: false });
    await printList(json, { format: 'json' }, rows, columns);
    expect(JSON.parse(json.stdoutText())[1].last_seen).toBe('0001-01-01T00:00:00Z');
  });
});

describe('object view on a TTY', () => {
  it('aligns FIELD names, colors statuses, shows never', async () => {
    const io = memoryIO({ tty: true, color: true });
    await printObject(io, { format: 'table' }, rows[1], columns);
    const out = strip(io.stdoutText());
    expect(out).toBe(
      [`uuid       ${rows[1].uuid}`, 'hostname   db-1', 'status     inactive', 'last_seen  never', 'bytes      123456', ''].join('\n'),
    );
    expect(io.stdoutText()).toContain('\x1b[31minactive');
  });
});

describe('fitWidths / truncate', () => {
  it('shrinks only the widest columns', () => {
    expect(fitWidths([4, 30, 10], 40)).toEqual([4, 22, 10]);
    expect(fitWidths([4, 30, 30], 40)).toEqual([4, 16, 16]);
    expect(fitWidths([4, 5], 100)).toEqual([4, 5]);
  });
  it('cuts free-text columns before times/statuses/numbers', () => {
    expect(fitWidths([36, 32, 13, 6], 60, [true, true, false, false])).toEqual([18, 17, 13, 6]);
    // when that is not enough, every column is capped
    expect(fitWidths([30, 30, 30], 30, [true, false, false])).toEqual([9, 9, 8]);
  });
  it('truncates by display width with an ellipsis', () => {
    expect(truncate('hostname', 5)).toBe('host…');
    expect(truncate('host', 5)).toBe('host');
    expect(truncate('日本語テキスト', 5)).toBe('日本…');
    expect(displayWidth('日本')).toBe(4);
  });
});

describe('relativeTime', () => {
  const now = new Date('2026-11-21T12:00:00Z');
  const at = (ms: number) => new Date(now.getTime() + ms).toISOString();
  it.each([
    [at(-3 * 60_000), '3 minutes ago'],
    [at(-1 * 60_000), '1 minute ago'],
    [at(-2 * 86_400_000), '2 days ago'],
    [at(5 * 3_600_000), 'in 5 hours'],
    [at(-10_000), 'just now'],
    [at(5_000), 'just now'],
    [at(-3 * 3_600_000), '3 hours ago'],
    [at(-45 * 86_400_000), '2 months ago'],
    [at(-400 * 86_400_000), '1 year ago'],
    ['0001-01-01T00:00:00Z', 'never'],
    ['', 'never'],
    ['not a time', 'not a time'],
  ])('%s -> %s', (iso, want) => {
    expect(relativeTime(iso, now)).toBe(want);
  });
  it('moves up a unit instead of saying 60 minutes', () => {
    expect(relativeTime(at(-59.7 * 60_000), now)).toBe('1 hour ago');
  });
});
