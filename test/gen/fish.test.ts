// fish: completions/fleetctl.fish sourced into a real fish, asked with `complete -C`.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { FISH_FILE, fishComplete, requireTool, tree } from './shells.js';
import { mismatches, treeCases } from './cases.js';

let tmp: string;
beforeAll(() => {
  requireTool('fish');
  tmp = mkdtempSync(join(tmpdir(), 'fleetctl-fish-'));
  writeFileSync(join(tmp, 'ca.pem'), '');
  mkdirSync(join(tmp, 'certs'));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('fish completion', () => {
  test('groups, verbs, flags and flag values', async () => {
    const r = await fishComplete([
      'fleetctl no',
      'fleetctl nodes list --platform ',
      'fleetctl nodes list --status ',
      'fleetctl -o ',
      'fleetctl nodes list -o js',
      'fleetctl --env prod nodes ls --sort ',
      'fleetctl nodes list --st',
      'fleetctl nodes list --status=ac',
      'fleetctl nodes list -- --st',
      'fleetctl nodes show prod-web-0001 ',
      'fleetctl nosuchgroup ',
      'fleetctl completion ',
      'fleetctl help nod',
    ]);
    expect(r[0]).toEqual(['nodes']);
    expect(r[1]).toEqual(['darwin', 'linux', 'other', 'windows']);
    expect(r[2]).toEqual(['active', 'all', 'inactive']);
    expect(r[3]).toEqual(['csv', 'json', 'jsonl', 'table', 'wide', 'yaml']);
    expect(r[4]).toEqual(['json', 'jsonl']);
    expect(r[5]).toEqual(expect.arrayContaining(['hostname', 'lastseen', 'osquery']));
    expect(r[6]).toEqual(['--status']);
    expect(r[7]).toEqual(['--status=active']);
    expect(r[8]).toEqual([]);
    expect(r[9]).toEqual([]);
    expect(r[10]).toEqual([]);
    expect(r[11]).toEqual(['bash', 'fish', 'zsh']);
    expect(r[12]).toEqual(['nodes']);
  });

  test('the top level offers every command of the tree, with its summary', async () => {
    const p = await tree();
    const [top] = await fishComplete(['fleetctl ']);
    expect(top).toEqual(p.root.commands.map((c) => c.name).sort());
    const raw = await execa('fish', ['--no-config', '-c', `source '${FISH_FILE}'; complete -C 'fleetctl nod'`]);
    expect(raw.stdout).toBe(`nodes\t${p.root.commands.find((c) => c.name === 'nodes')!.summary}`);
  });

  test('every option and argument value with fixed choices in the tree', async () => {
    const cases = treeCases(await tree());
    const results = await fishComplete(cases.map((c) => c.line));
    expect(mismatches(cases, results)).toEqual([]);
  });

  test('file values complete file names', async () => {
    const [files, profile] = await fishComplete(['fleetctl --ca-file ', 'fleetctl config use '], { cwd: tmp });
    expect(files).toEqual(['ca.pem', 'certs/']);
    expect(profile).toEqual([]); // a profile name, not a file
  });

  test('the script is valid fish', async () => {
    const r = await execa('fish', ['--no-execute', FISH_FILE], { reject: false });
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
  });
});
