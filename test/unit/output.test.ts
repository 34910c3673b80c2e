import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import {
  createListWriter,
  FieldError,
  FormatError,
  parseFields,
  parseOutputFormat,
  printList,
  printObject,
  printText,
  type Column,
  type OutputOptions,
} from '../../src/output/index.js';
import { memoryIO } from '../helpers/memory-io.js';
import { loadYaml } from '../../src/output/writer.js';

interface N {
  uuid: string;
  hostname: string;
  platform: string;
  last_seen: string;
  health: { status: string; reason: string };
  tags: { id: number; name: string }[];
  system_info: { os: { name: string; version: string } };
}

const node = (i: number, over: Partial<N> = {}): N => ({
  uuid: `uuid-${i}`,
  hostname: `host-${i}`,
  platform: 'linux',
  last_seen: '2026-01-02T03:04:05Z',
  health: { status: i % 2 ? 'degraded' : 'healthy', reason: '' },
  tags: [
    { id: 1, name: 'web' },
    { id: 2, name: 'eu' },
  ],
  system_info: { os: { name: 'Ubuntu', version: '22.04' } },
  ...over,
});
const nodes = [node(1), node(2)];

const columns: Column<N>[] = [
  { key: 'uuid' },
  { key: 'hostname' },
  { key: 'health.status', header: 'HEALTH', kind: 'status' },
  { key: 'last_seen', header: 'LAST SEEN', kind: 'time' },
  { key: 'os', get: (n) => n.system_info.os.name },
];

const o = (format: OutputOptions['format'], more: Partial<OutputOptions> = {}): OutputOptions => ({ format, ...more });

async function list(opts: OutputOptions, rows: N[] = nodes, tty = false): Promise<string> {
  const io = memoryIO({ tty });
  await printList(io, opts, rows, columns);
  return io.stdoutText();
}

async function object(opts: OutputOptions, tty = false): Promise<string> {
  const io = memoryIO({ tty });
  await printObject(io, opts, node(1), columns);
  return io.stdoutText();
}

describe('parseOutputFormat', () => {
  it('accepts the five formats, case-insensitively', () => {
    expect(['table', 'json', 'jsonl', 'yaml', 'csv'].map(parseOutputFormat)).toEqual(['table', 'json', 'jsonl', 'yaml', 'csv']);
    expect(parseOutputFormat('JSON')).toBe('json');
  });
  it('rejects others listing the valid ones, as a usage error', () => {
    expect(() => parseOutputFormat('xml')).toThrow(FormatError);
    expect(() => parseOutputFormat('xml')).toThrow('unknown output format "xml"; valid formats: table, json, jsonl, yaml, csv');
    try {
      parseOutputFormat('xml');
    } catch (e) {
      expect((e as FormatError).exitCode).toBe(2);
    }
  });
});

describe('lists in each format', () => {
  it('json: a pretty array with a trailing newline, identical to JSON.stringify', async () => {
    const out = await list(o('json'));
    expect(out).toBe(`${JSON.stringify(nodes, null, 2)}\n`);
  });
  it('json: an empty list is [] (and nothing else)', async () => {
    const io = memoryIO();
    await printList(io, o('json'), [], columns);
    expect(io.stdoutText()).toBe('[]\n');
    expect(io.stderrText()).toBe('');
  });
  it('jsonl: one compact object a line; empty list prints nothing', async () => {
    expect(await list(o('jsonl'))).toBe(nodes.map((n) => `${JSON.stringify(n)}\n`).join(''));
    expect(await list(o('jsonl'), [])).toBe('');
  });
  it('yaml: parses back to the same list; empty list is []', async () => {
    expect(parseYaml(await list(o('yaml')))).toEqual(nodes);
    expect((await list(o('yaml'), [])).trim()).toBe('[]');
  });
  it('csv: header of column keys, raw values, tag names, other nested values JSON-encoded', async () => {
    const out = await list(o('csv', { fields: ['uuid', 'tags', 'health'] }));
    expect(out.split('\n')[0]).toBe('uuid,tags,health');
    expect(out.split('\n')[1]).toBe('uuid-1,"web,eu","{""status"":""degraded"",""reason"":""""}"');
  });
  it('csv: default columns are the declared ones, by key', async () => {
    const out = await list(o('csv'));
    expect(out).toBe(
      'uuid,hostname,health.status,last_seen,os\n' +
        'uuid-1,host-1,degraded,2026-01-02T03:04:05Z,Ubuntu\n' +
        'uuid-2,host-2,healthy,2026-01-02T03:04:05Z,Ubuntu\n',
    );
  });
  it('csv: RFC 4180 quoting of comma and quote; cells are single-line (CR and LF become spaces: a CR would redraw the line at a terminal)', async () => {
    const rows = [
      node(1, { hostname: 'a,b' }),
      node(2, { hostname: 'say "hi"' }),
      node(3, { hostname: 'l1\nl2' }),
      node(4, { hostname: 'x\ry' }),
    ];
    const out = await list(o('csv', { fields: ['hostname', 'platform'] }), rows);
    expect(out).toBe('hostname,platform\n"a,b",linux\n"say ""hi""",linux\nl1 l2,linux\nx y,linux\n');
  });
  it('csv: cells a spreadsheet would run as a formula start with a quote (OWASP); numbers stay numbers', async () => {
    const names = ['=cmd|calc', '+1+1', '-2+3', '@SUM(A1)', '\tx', '\rx', 'ok-1'];
    const rows = names.map((h, i) => node(i + 1, { hostname: h }));
    const out = await list(o('csv', { fields: ['hostname'], noHeaders: true }), rows);
    expect(out.split('\n').slice(0, -1)).toEqual(["'=cmd|calc", "'+1+1", "'-2+3", "'@SUM(A1)", "' x", "' x", 'ok-1']);
    expect(await list(o('csv', { fields: ['n'], noHeaders: true }), [{ n: -5 }] as never)).toBe('-5\n');
  });
  it('control and bidi characters: escaped in table, tsv and csv cells; escaped as \\u in json, jsonl and yaml', async () => {
    const evil = 'a\u001b[2Jb\u009bc\u202ed\u2066e\u200ff\u061cg\u007fh';
    const rows = [node(1, { hostname: evil })];
    const cell = 'a\\x1b[2Jb\\x9bc\\u202ed\\u2066e\\u200ff\\u061cg\\x7fh';
    for (const fmt of ['table', 'csv'] as const) {
      const out = await list(o(fmt, { fields: ['hostname'], noHeaders: true }), rows);
      expect(out, fmt).toBe(`${cell}\n`);
    }

    const RAW = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;
    for (const fmt of ['json', 'jsonl', 'yaml'] as const) {
      const out = await list(o(fmt, { fields: ['hostname'] }), rows);
      expect(out, fmt).not.toMatch(RAW);
    }
    expect(JSON.parse(await list(o('json', { fields: ['hostname'] }), rows))[0].hostname).toBe(evil);
    const YAML = await import('yaml');
    expect(YAML.parse(await list(o('yaml', { fields: ['hostname'] }), rows))[0].hostname).toBe(evil);
  });
  it('csv and table: --no-headers drops the header', async () => {
    expect(await list(o('csv', { noHeaders: true, fields: ['uuid'] }))).toBe('uuid-1\nuuid-2\n');
    expect(await list(o('table', { noHeaders: true, fields: ['uuid'] }))).toBe('uuid-1\nuuid-2\n');
  });
  it('csv: an empty list still has its header', async () => {
    expect(await list(o('csv', { fields: ['uuid', 'hostname'] }), [])).toBe('uuid,hostname\n');
  });
  it('table piped: TSV with a header row, raw values, no ANSI', async () => {
    const io = memoryIO({ tty: false, color: false });
    await printList(io, o('table'), nodes, columns);
    const out = io.stdoutText();
    expect(out).toBe(
      'UUID\tHOSTNAME\tHEALTH\tLAST SEEN\tOS\n' +
        'uuid-1\thost-1\tdegraded\t2026-01-02T03:04:05Z\tUbuntu\n' +
        'uuid-2\thost-2\thealthy\t2026-01-02T03:04:05Z\tUbuntu\n',
    );

    expect(out).not.toMatch(/\x1b\[/);
  });
  it('table piped: tags as comma-joined names, booleans, null as empty, tabs/newlines flattened', async () => {
    const rows = [{ name: 'a\tb\nc', tags: [{ name: 'x' }, { name: 'y' }], ok: false, gone: null, obj: { a: 1 }, list: [1, 2] }];
    const io = memoryIO();
    await printList(io, o('table'), rows, []);
    expect(io.stdoutText()).toBe('NAME\tTAGS\tOK\tGONE\tOBJ\tLIST\na b c\tx,y\tfalse\t\t{"a":1}\t1,2\n');
  });
});

describe('single objects', () => {
  it('json prints the object, not an array', async () => {
    expect(await object(o('json'))).toBe(`${JSON.stringify(node(1), null, 2)}\n`);
  });
  it('jsonl prints one line; yaml round-trips', async () => {
    expect(await object(o('jsonl'))).toBe(`${JSON.stringify(node(1))}\n`);
    expect(parseYaml(await object(o('yaml')))).toEqual(node(1));
  });
  it('csv prints a header and one row', async () => {
    expect(await object(o('csv', { fields: ['uuid', 'hostname'] }))).toBe('uuid,hostname\nuuid-1,host-1\n');
  });
  it('table piped: key<TAB>value lines, nested objects flattened, arrays comma-joined', async () => {
    const io = memoryIO();
    await printObject(io, o('table'), node(1));
    expect(io.stdoutText()).toBe(
      [
        'uuid\tuuid-1',
        'hostname\thost-1',
        'platform\tlinux',
        'last_seen\t2026-01-02T03:04:05Z',
        'health.status\tdegraded',
        'health.reason\t',
        'tags\tweb,eu',
        'system_info.os.name\tUbuntu',
        'system_info.os.version\t22.04',
        '',
      ].join('\n'),
    );
  });
  it('table piped with columns: only those, in order', async () => {
    const io = memoryIO();
    await printObject(io, o('table'), node(1), columns);
    expect(io.stdoutText()).toBe('uuid\tuuid-1\nhostname\thost-1\nhealth.status\tdegraded\nlast_seen\t2026-01-02T03:04:05Z\nos\tUbuntu\n');
  });
  it('table on a TTY: FIELD  value, relative times, no ANSI without color', async () => {
    const io = memoryIO({ tty: true, color: false });
    const seen = new Date(Date.now() - 3 * 60_000).toISOString();
    await printObject(io, o('table'), { uuid: 'u1', last_seen: seen, health: { status: 'healthy' } });
    expect(io.stdoutText()).toBe(`uuid           u1\nlast_seen      ${seen} (3 minutes ago)\nhealth.status  healthy\n`);
  });
  it('--fields selects and validates for objects too', async () => {
    expect(JSON.parse(await object(o('json', { fields: ['hostname', 'health.status'] })))).toEqual({
      hostname: 'host-1',
      'health.status': 'degraded',
    });
    await expect(object(o('json', { fields: ['nope'] }))).rejects.toThrow(FieldError);
  });
});

describe('--fields', () => {
  it('keeps exactly the given keys in the given order, dotted paths as flat keys', async () => {
    const out = JSON.parse(await list(o('json', { fields: ['health.status', 'uuid', 'system_info.os.name'] })));
    expect(out).toEqual([
      { 'health.status': 'degraded', uuid: 'uuid-1', 'system_info.os.name': 'Ubuntu' },
      { 'health.status': 'healthy', uuid: 'uuid-2', 'system_info.os.name': 'Ubuntu' },
    ]);
    expect(Object.keys(out[0])).toEqual(['health.status', 'uuid', 'system_info.os.name']);
  });
  it('applies to jsonl, yaml, csv and table alike', async () => {
    const f = { fields: ['uuid', 'health.status'] };
    expect(await list(o('jsonl', f))).toBe('{"uuid":"uuid-1","health.status":"degraded"}\n{"uuid":"uuid-2","health.status":"healthy"}\n');
    expect(parseYaml(await list(o('yaml', f)))).toEqual([
      { uuid: 'uuid-1', 'health.status': 'degraded' },
      { uuid: 'uuid-2', 'health.status': 'healthy' },
    ]);
    expect(await list(o('csv', f))).toBe('uuid,health.status\nuuid-1,degraded\nuuid-2,healthy\n');
    // a declared column keeps its header in the table
    expect(await list(o('table', f))).toBe('UUID\tHEALTH\nuuid-1\tdegraded\nuuid-2\thealthy\n');
  });
  it('a declared computed column can be selected by its key', async () => {
    expect(await list(o('jsonl', { fields: ['os'] }))).toBe('{"os":"Ubuntu"}\n{"os":"Ubuntu"}\n');
  });
  it('unknown field: FieldError naming the field and listing the valid ones', async () => {
    const err = await list(o('json', { fields: ['uuid', 'bogus'] })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FieldError);
    const fe = err as FieldError;
    expect(fe.message).toBe(
      'unknown field "bogus"; valid fields: uuid, hostname, platform, last_seen, health, tags, system_info, health.status, os',
    );
    expect(fe.validFields).toEqual(['uuid', 'hostname', 'platform', 'last_seen', 'health', 'tags', 'system_info', 'health.status', 'os']);
    expect(fe.exitCode).toBe(2);
  });
  it('a path through an array applies to each element: tags.name gives the names', async () => {
    expect(JSON.parse(await list(o('json', { fields: ['uuid', 'tags.name'] })))[0]).toEqual({ uuid: 'uuid-1', 'tags.name': ['web', 'eu'] });
    expect(await list(o('csv', { fields: ['uuid', 'tags.name'] }))).toBe('uuid,tags.name\nuuid-1,"web,eu"\nuuid-2,"web,eu"\n');
    expect(JSON.parse(await list(o('json', { fields: ['tags.1.name'] })))[0]).toEqual({ 'tags.1.name': 'eu' });
  });
  it('an unknown field below an array of objects is an error listing the element keys', async () => {
    await expect(list(o('json', { fields: ['tags.nope'] }))).rejects.toThrow('unknown field "tags.nope"; valid fields: tags.id, tags.name');
  });
  it('unknown nested field lists the keys at that level', async () => {
    await expect(list(o('json', { fields: ['health.bogus'] }))).rejects.toThrow(
      'unknown field "health.bogus"; valid fields: health.status, health.reason',
    );
  });
  it('error is raised before anything is printed', async () => {
    const io = memoryIO();
    await expect(printList(io, o('table', { fields: ['x'] }), nodes, columns)).rejects.toThrow(FieldError);
    expect(io.stdoutText()).toBe('');
  });
  it('empty list: validated against declared columns only; no columns: anything goes', async () => {
    await expect(list(o('json', { fields: ['bogus'] }), [])).rejects.toThrow(
      'unknown field "bogus"; valid fields: uuid, hostname, health.status, last_seen, os',
    );
    expect(await list(o('json', { fields: ['hostname'] }), [])).toBe('[]\n');
    const io = memoryIO();
    await printList(io, o('json', { fields: ['anything'] }), [], []);
    expect(io.stdoutText()).toBe('[]\n');
  });
  it('parseFields splits, trims and dedupes', () => {
    expect(parseFields(' a, b.c,,a ')).toEqual(['a', 'b.c']);
  });
});

describe('createListWriter (streaming)', () => {
  const batches = [[node(1), node(2)], [node(3)], [node(4), node(5)]];
  const all = batches.flat();

  async function stream(opts: OutputOptions, bs: N[][], tty = false, columnsWidth = 80) {
    const io = memoryIO({ tty, columns: columnsWidth });
    const w = createListWriter(io, opts, columns);
    const seen: string[] = [];
    for (const b of bs) {
      await w.write(b);
      seen.push(io.stdoutText());
    }
    await w.end();
    return { out: io.stdoutText(), seen, count: w.count };
  }

  it('json over 3 batches is valid pretty JSON, the same text as printList, printed as it goes', async () => {
    const { out, seen, count } = await stream(o('json'), batches);
    expect(JSON.parse(out)).toEqual(all);
    expect(out).toBe(`${JSON.stringify(all, null, 2)}\n`);
    expect(seen[0]?.length).toBeGreaterThan(0);
    expect(seen[1].length).toBeGreaterThan(seen[0].length);
    expect(count).toBe(5);
  });
  it('json over 0 batches (or only empty ones) prints []', async () => {
    expect((await stream(o('json'), [])).out).toBe('[]\n');
    expect((await stream(o('json'), [[], []])).out).toBe('[]\n');
  });
  it('jsonl, csv and piped table stream with one header', async () => {
    expect(
      (await stream(o('jsonl'), batches)).out
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l)),
    ).toEqual(all);
    const csv = (await stream(o('csv', { fields: ['uuid'] }), batches)).out;
    expect(csv).toBe('uuid\nuuid-1\nuuid-2\nuuid-3\nuuid-4\nuuid-5\n');
    const tsv = (await stream(o('table', { fields: ['uuid', 'hostname'] }), batches)).out;
    expect(tsv.split('\n').filter((l) => l.startsWith('UUID'))).toHaveLength(1);
    expect(tsv.trim().split('\n')).toHaveLength(6);
  });
  it('yaml streams batch by batch, and the text equals the whole list printed at once', async () => {
    const { out, seen } = await stream(o('yaml'), batches);
    expect(seen[0]).not.toBe(''); // printed before end()
    expect(parseYaml(out)).toEqual(all);
    expect(out).toBe((await loadYaml())(all));
  });
  it('yaml of an empty list is []', async () => {
    expect((await stream(o('yaml'), [[]])).out).toBe('[]\n');
  });
  it('TTY table: widths from the first batch, later rows truncated to them', async () => {
    const later = node(9, { hostname: 'a-much-much-longer-hostname-than-before' });
    const { out } = await stream(o('table', { fields: ['uuid', 'hostname'] }), [[node(1)], [later]], true);
    const lines = out.trimEnd().split('\n');
    expect(lines).toEqual(['UUID    HOSTNAME', 'uuid-1  host-1', 'uuid-9  a-much-…']);
  });
  it('validates --fields on the first item, before printing anything', async () => {
    const io = memoryIO();
    const w = createListWriter(io, o('json', { fields: ['zzz'] }), columns);
    await expect(w.write([node(1)])).rejects.toThrow(FieldError);
    expect(io.stdoutText()).toBe('');
  });
  it('waits for a slow stdout to drain between batches (memory stays flat)', async () => {
    const chunks: string[] = [];
    const slow = new Writable({
      highWaterMark: 64,
      write(chunk: Buffer, _enc, cb) {
        setTimeout(() => {
          chunks.push(chunk.toString());
          cb();
        }, 1);
      },
    });
    const io = { ...memoryIO(), stdout: slow, out: (t: string) => void slow.write(t) };
    const w = createListWriter(io, o('jsonl'), columns);
    for (const b of batches) {
      await w.write(b);
      expect(slow.writableNeedDrain).toBe(false);
    }
    await w.end();
    await new Promise<void>((r) => slow.end(r));
    expect(chunks.join('').trim().split('\n')).toHaveLength(5);
  });
  it('refuses write after end', async () => {
    const w = createListWriter(memoryIO(), o('json'), columns);
    await w.end();
    await expect(w.write([node(1)])).rejects.toThrow(/after end/);
  });
});

describe('printText', () => {
  it('adds a missing trailing newline, never a second one', () => {
    const io = memoryIO();
    printText(io, 'a');
    printText(io, 'b\n');
    printText(io, '');
    expect(io.stdoutText()).toBe('a\nb\n');
  });
});

describe('errors go through the CLI error mapper', () => {
  it('FieldError, FormatError and JqError map to usage/error exit codes with their message', async () => {
    const { mapError } = await import('../../src/errors.js');
    const fe = await list(o('json', { fields: ['nope'] })).catch((e: unknown) => e);
    expect(mapError(fe)).toMatchObject({ exitCode: 2, message: expect.stringMatching(/^unknown field "nope"; valid fields: uuid, /) });
    expect(mapError(new FormatError('xml', ['json']))).toMatchObject({ exitCode: 2 });
  });
});
