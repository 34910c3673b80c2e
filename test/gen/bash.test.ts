// bash: completions/fleetctl.bash sourced into a real bash, COMPREPLY read back.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BASH_FILE, bashComplete, bashWords, requireTool, tree } from './shells.js';
import { mismatches, treeCases } from './cases.js';

let tmp: string;
beforeAll(() => {
  requireTool('bash');
  tmp = mkdtempSync(join(tmpdir(), 'fleetctl-bash-'));
  writeFileSync(join(tmp, 'ca.pem'), '');
  mkdirSync(join(tmp, 'certs'));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('bash completion', () => {
  test('the test splits words as bash does', () => {
    expect(bashWords('fleetctl nodes list --status=ac')).toEqual(['fleetctl', 'nodes', 'list', '--status', '=', 'ac']);
    expect(bashWords('fleetctl -o ')).toEqual(['fleetctl', '-o', '']);
  });

  test('groups, verbs, flags and flag values', async () => {
    const lines = [
      'fleetctl no',
      'fleetctl nodes list --status ',
      'fleetctl -o ',
      'fleetctl nodes list -o js',
      'fleetctl --env prod nodes list --platform ',
      'fleetctl nodes ls --sort ',
      'fleetctl nodes list --order ',
      'fleetctl nodes list --st',
      'fleetctl nodes list --status=ac',
      'fleetctl nodes list --status=',
      'fleetctl nodes list --status active --pl',
      'fleetctl nodes list -- --st',
      'fleetctl nodes show prod-web-0001 ',
      'fleetctl nosuchgroup ',
      'fleetctl completion ',
      'fleetctl help nod',
    ];
    const r = await bashComplete(lines);
    expect(r[0]).toEqual(['nodes']);
    expect(r[1]).toEqual(['active', 'all', 'inactive']);
    expect(r[2]).toEqual(['csv', 'json', 'jsonl', 'table', 'wide', 'yaml']);
    expect(r[3]).toEqual(['json', 'jsonl']);
    expect(r[4]).toEqual(['darwin', 'linux', 'other', 'windows']);
    expect(r[5]).toContain('hostname');
    expect(r[5]).toContain('lastseen');
    expect(r[6]).toEqual(['asc', 'desc']);
    expect(r[7]).toEqual(['--status']);
    expect(r[8]).toEqual(['active']);
    expect(r[9]).toEqual(['active', 'all', 'inactive']);
    expect(r[10]).toEqual(['--platform']);
    expect(r[11]).toEqual([]); // after "--" only arguments
    expect(r[12]).toEqual([]); // a node name: nothing fixed to offer
    expect(r[13]).toEqual([]);
    expect(r[14]).toEqual(['bash', 'fish', 'zsh']);
    expect(r[15]).toEqual(['nodes']);
  });

  test('the top level offers every command of the tree, and options after a dash', async () => {
    const p = await tree();
    const [top, dash] = await bashComplete(['fleetctl ', 'fleetctl --']);
    expect(top).toEqual(p.root.commands.map((c) => c.name).sort());
    expect(top).toEqual(expect.arrayContaining(['nodes', 'users', 'login', 'completion', 'help']));
    expect(dash).toEqual(expect.arrayContaining(['--help', '--version', '--output', '--json', '--env', '--url', '--no-color']));
  });

  test('every option and argument value with fixed choices in the tree', async () => {
    const cases = treeCases(await tree());
    expect(cases.length).toBeGreaterThan(20);
    const results = await bashComplete(cases.map((c) => c.line));
    expect(mismatches(cases, results)).toEqual([]);
  });

  test('file values complete file names', async () => {
    const [files, db, profile] = await bashComplete(['fleetctl --ca-file ', 'fleetctl server --db ce', 'fleetctl config use '], {
      cwd: tmp,
    });
    expect(files).toEqual(['ca.pem', 'certs']);
    expect(db).toEqual(['certs']);
    expect(profile).toEqual([]); // a profile name, not a file
  });

  test('bash-completion loads it on demand from the documented install path', async () => {
    const home = join(tmp, 'home');
    const dir = join(home, '.local/share/bash-completion/completions');
    mkdirSync(dir, { recursive: true });
    copyFileSync(BASH_FILE, join(dir, 'fleetctl'));
    const preamble = [
      `export HOME='${home}'; unset XDG_DATA_HOME BASH_COMPLETION_USER_DIR`,
      'source /usr/share/bash-completion/bash_completion',
      'complete -p fleetctl >/dev/null 2>&1 && exit 8', // not loaded before it is needed
      '_completion_loader fleetctl',
    ].join('\n');
    const [r] = await bashComplete(['fleetctl nodes list --status '], { preamble });
    expect(r).toEqual(['active', 'all', 'inactive']);
  });

  test('the script is valid bash', async () => {
    const { execa } = await import('execa');
    const r = await execa('bash', ['-n', BASH_FILE], { reject: false });
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
  });
});
