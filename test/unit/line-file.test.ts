// The sink tests read what a peer (the GELF reader, rsyslog) writes while it is still writing:
// a line caught half-written must wait for its end, never be parsed in pieces (issue 28; CI of
// main 438af96 failed on exactly that, "Unterminated string in JSON").
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LineFile } from '../helpers/peers/lines.js';

describe('LineFile', () => {
  const dir = mkdtempSync(join(tmpdir(), 'fleetctl-linefile-'));
  afterEach(() => rmSync(join(dir, 'out'), { force: true }));

  it('returns only lines ended by a newline and completes a half-written one on a later read', () => {
    const f = new LineFile(join(dir, 'out'));
    expect(f.lines()).toEqual([]);
    appendFileSync(f.path, '{"a":1}\n{"b":"tw');
    expect(f.lines()).toEqual(['{"a":1}']);
    appendFileSync(f.path, 'o"}\n\n{"c"');
    expect(f.lines()).toEqual(['{"a":1}', '{"b":"two"}', '']);
    expect(f.lines().map((l) => (l ? (JSON.parse(l) as unknown) : null))).toEqual([{ a: 1 }, { b: 'two' }, null]);
    appendFileSync(f.path, ':3}\n');
    expect(f.lines().at(-1)).toBe('{"c":3}');
  });

  it('decodes a UTF-8 character split between two reads whole', () => {
    const f = new LineFile(join(dir, 'out'));
    const snow = Buffer.from('☃\n', 'utf8');
    appendFileSync(f.path, snow.subarray(0, 1));
    expect(f.lines()).toEqual([]);
    appendFileSync(f.path, snow.subarray(1));
    expect(f.lines()).toEqual(['☃']);
  });

  it('reads a line longer than one read buffer', () => {
    const f = new LineFile(join(dir, 'out'));
    const long = 'x'.repeat(200_000);
    appendFileSync(f.path, long.slice(0, 150_000));
    expect(f.lines()).toEqual([]);
    appendFileSync(f.path, `${long.slice(150_000)}\nnext`);
    expect(f.lines()).toEqual([long]);
  });
});
