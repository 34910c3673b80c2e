// zsh: completions/_fleetctl found through $fpath by compinit in a real interactive zsh (driven
// through zpty by zsh-complete.zsh), the matches read back.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { ZSH_DIR, requireTool, tree, zshComplete } from './shells.js';
import { mismatches, treeCases } from './cases.js';

let tmp: string;
beforeAll(() => {
  requireTool('zsh');
  tmp = mkdtempSync(join(tmpdir(), 'fleetctl-zsh-'));
  writeFileSync(join(tmp, 'ca.pem'), '');
  mkdirSync(join(tmp, 'certs'));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('zsh completion', () => {
  test('the script is valid zsh', async () => {
    const r = await execa('zsh', ['-n', join(ZSH_DIR, '_fleetctl')], { reject: false });
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
  });

  test('groups, verbs, flags and flag values', async () => {
    const r = await zshComplete([
      'fleetctl no',
      'fleetctl nodes list --status ',
      'fleetctl -o ',
      'fleetctl nodes list -o js',
      'fleetctl --env prod nodes list --platform ',
      'fleetctl nodes ls --sort ',
      'fleetctl nodes list --st',
      'fleetctl nodes list --status=ac',
      'fleetctl nodes show prod-web-0001 ',
      'fleetctl completion ',
      'fleetctl help nod',
      'fleetctl ',
    ]);
    expect(r[0]).toEqual(['nodes']);
    expect(r[1]).toEqual(['active', 'all', 'inactive']);
    expect(r[2]).toEqual(['csv', 'json', 'jsonl', 'table', 'wide', 'yaml']);
    expect(r[3]).toEqual(['json', 'jsonl']);
    expect(r[4]).toEqual(['darwin', 'linux', 'other', 'windows']);
    expect(r[5]).toEqual(expect.arrayContaining(['hostname', 'lastseen', 'osquery']));
    expect(r[6]).toEqual(['--status']);
    expect(r[7]).toEqual(['active']);
    // No more arguments: zsh's _arguments then offers the options (and nothing else).
    expect(r[8].length).toBeGreaterThan(0);
    expect(r[8].filter((m) => !m.startsWith('-'))).toEqual([]);
    expect(r[9]).toEqual(['bash', 'fish', 'zsh']);
    expect(r[10]).toEqual(['nodes']);
    expect(r[11]).toEqual((await tree()).root.commands.map((c) => c.name).sort());
  });

  test('every option and argument value with fixed choices in the tree', async () => {
    const cases = treeCases(await tree());
    const results = await zshComplete(cases.map((c) => c.line));
    expect(mismatches(cases, results)).toEqual([]);
  });

  test('file values complete file names', async () => {
    const [files, profile] = await zshComplete(['fleetctl --ca-file ', 'fleetctl config use '], { cwd: tmp });
    expect(files).toEqual(['ca.pem', 'certs']);
    expect(profile.filter((m) => !m.startsWith('-'))).toEqual([]); // a profile name, not a file
  });

  test('works from the documented install directory (~/.zfunc in $fpath)', async () => {
    const zfunc = join(tmp, '.zfunc');
    mkdirSync(zfunc, { recursive: true });
    copyFileSync(join(ZSH_DIR, '_fleetctl'), join(zfunc, '_fleetctl'));
    const [r] = await zshComplete(['fleetctl nodes list --order '], { dir: zfunc });
    expect(r).toEqual(['asc', 'desc']);
  });

  test('works when sourced after compinit instead (source <(fleetctl completion zsh))', async () => {
    const empty = join(tmp, 'empty');
    mkdirSync(empty, { recursive: true });
    const [r] = await zshComplete(['fleetctl nodes list --order '], { dir: empty, source: join(ZSH_DIR, '_fleetctl') });
    expect(r).toEqual(['asc', 'desc']);
  });

  test('without the script nothing is completed (the harness can tell)', async () => {
    const empty = join(tmp, 'empty');
    mkdirSync(empty, { recursive: true });
    const [r] = await zshComplete(['fleetctl nodes list --order '], { dir: empty });
    expect(r.filter((m) => m === 'asc' || m === 'desc')).toEqual([]);
  });
});
