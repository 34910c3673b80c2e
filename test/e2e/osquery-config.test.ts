// `fleetctl schedule`, `env config` (print, --set, --edit, --agent), `apply -f` and `diff -f`
// (issue 22) end to end: the built CLI against a real `fleetctl server --dev` process; what the
// server stored is read back with raw API calls, never through the CLI under test.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cli, type ServerProcess } from '../helpers/cli.js';
import { apiCall, startAdminSession } from '../helpers/admin-cli.js';

let server: ServerProcess;
let cli: Cli;
let token: string;
let dir: string;

const stored = async (env = 'dev') => (await apiCall(server.url, 'GET', `/api/v1/environments/${env}/config`, { token })).body;
const audit = async () =>
  (await apiCall(server.url, 'GET', '/api/v1/audit-logs?page_size=500', { token })).body.items as { line: string; username: string }[];
const file = (name: string, text: string) => {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
};

const DOC = `apiVersion: fleetctl/v1
kind: OsqueryConfig
metadata:
  environment: dev
spec:
  schedule:
    users_query:
      query: SELECT uid, username FROM users
      interval: 60
  packs:
    web:
      platform: linux
      queries:
        procs:
          query: SELECT pid, name FROM processes
          interval: 300
          snapshot: true
`;

beforeAll(async () => {
  ({ server, cli, token } = await startAdminSession());
  dir = mkdtempSync(join(tmpdir(), 'fleetctl-apply-'));
});

afterAll(async () => {
  cli?.cleanup();
  await server?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('schedule', () => {
  it('add, list, show, edit, remove; each change stored and audited as admin', async () => {
    const add = await cli.run([
      'schedule',
      'add',
      'staging',
      'logged_in',
      '--query',
      'SELECT user, tty FROM logged_in_users',
      '--interval',
      '120',
      '--platform',
      'linux,darwin',
    ]);
    expect(add.exitCode, add.stderr).toBe(0);
    expect(add.stderr).toMatch(/^Added logged_in to the schedule of staging \(config hash [0-9a-f]{12} -> [0-9a-f]{12}/);
    expect((await stored('staging')).schedule.logged_in).toEqual({
      query: 'SELECT user, tty FROM logged_in_users',
      interval: 120,
      platform: 'linux,darwin',
    });

    const list = await cli.run(['schedule', 'list', 'staging', '-o', 'json']);
    expect(JSON.parse(list.stdout)).toEqual([
      {
        name: 'logged_in',
        interval: 120,
        platform: 'linux,darwin',
        snapshot: false,
        removed: true,
        version: '',
        shard: null,
        denylist: true,
        description: '',
        query: 'SELECT user, tty FROM logged_in_users',
      },
    ]);
    const table = await cli.run(['schedule', 'list', 'staging']);
    expect(table.stdout.split('\n')[0]).toMatch(/^NAME\tINTERVAL\tPLATFORM\tSNAPSHOT\tREMOVED\tVERSION\tQUERY$/);

    const edit = await cli.run(['schedule', 'edit', 'staging', 'logged_in', '--interval', '300', '--snapshot', '--min-version', '5.10.0']);
    expect(edit.exitCode, edit.stderr).toBe(0);
    expect((await stored('staging')).schedule.logged_in).toEqual({
      query: 'SELECT user, tty FROM logged_in_users',
      interval: 300,
      platform: 'linux,darwin',
      version: '5.10.0',
      snapshot: true,
    });
    const show = JSON.parse((await cli.run(['schedule', 'show', 'staging', 'logged_in', '-o', 'json'])).stdout);
    expect(show).toMatchObject({ name: 'logged_in', interval: 300, snapshot: true, version: '5.10.0' });

    const dup = await cli.run(['schedule', 'add', 'staging', 'logged_in', '--query', 'SELECT 1', '--interval', '60']);
    expect(dup.exitCode).toBe(6);
    expect(dup.stderr).toMatch(/already exists/);

    const noYes = await cli.run(['schedule', 'remove', 'staging', 'logged_in']);
    expect(noYes.exitCode).toBe(2);
    expect((await stored('staging')).schedule).toHaveProperty('logged_in');
    const rm = await cli.run(['schedule', 'remove', 'staging', 'logged_in', '--yes']);
    expect(rm.exitCode, rm.stderr).toBe(0);
    expect((await stored('staging')).schedule).toEqual({});
    const lines = (await audit()).filter((a) => a.line.startsWith('osquery configuration of staging'));
    expect(lines.map((a) => a.username)).toEqual(['admin', 'admin', 'admin']);
    expect(lines.map((a) => a.line.replace(/; config hash.*/, ''))).toEqual([
      'osquery configuration of staging changed: schedule (-logged_in)',
      'osquery configuration of staging changed: schedule (~logged_in)',
      'osquery configuration of staging changed: schedule (+logged_in)',
    ]);
  });

  it('bad SQL and a bad interval are one line each and change nothing', async () => {
    const before = await stored('staging');
    const sql = await cli.run(['schedule', 'add', 'staging', 'x', '--query', 'SELECT * FORM users', '--interval', '60']);
    expect(sql.exitCode).toBe(1);
    expect(sql.stderr).toMatch(/^error: schedule\.x\.query: SQL syntax error at line 1, column \d+ near "[^"]*FORM users"\n$/);
    const zero = await cli.run(['schedule', 'add', 'staging', 'x', '--query', 'SELECT 1', '--interval', '0']);
    expect(zero.exitCode).toBe(2);
    expect(zero.stderr).toMatch(/--interval.*expected an integer >= 1/);
    const big = await cli.run(['schedule', 'add', 'staging', 'x', '--query', 'SELECT 1', '--interval', '999999']);
    expect(big.stderr).toBe("error: schedule.x.interval: must be at most 604800 seconds (osquery's maximum, one week)\n");
    const missing = await cli.run(['schedule', 'edit', 'staging', 'nope', '--interval', '5']);
    expect(missing.exitCode).toBe(3);
    expect(await stored('staging')).toEqual(before);
  });
});

describe('env config', () => {
  it('prints an apply document; --set replaces a part from YAML or stdin; --agent shows the hash agents get', async () => {
    const set = await cli.run(['env', 'config', 'staging', '--set', 'decorators', '-'], {
      input: 'load:\n  - SELECT uuid AS host_uuid FROM system_info\n',
    });
    expect(set.exitCode, set.stderr).toBe(0);
    expect((await stored('staging')).decorators).toEqual({ load: ['SELECT uuid AS host_uuid FROM system_info'] });
    const shown = await cli.run(['env', 'config', 'staging', 'decorators']);
    expect(shown.stdout).toBe(
      `apiVersion: fleetctl/v1\nkind: OsqueryConfig\nmetadata:\n  environment: staging\n  hash: ${(await stored('staging')).hash}\nspec:\n  decorators:\n    load:\n      - SELECT uuid AS host_uuid FROM system_info\n`,
    );
    const agent = JSON.parse((await cli.run(['env', 'config', 'staging', '--agent', '-o', 'json'])).stdout);
    expect(agent.hash).toBe((await stored('staging')).hash);
    expect(agent.config.decorators).toEqual({ load: ['SELECT uuid AS host_uuid FROM system_info'] });
    const bad = await cli.run(['env', 'config', 'staging', '--set', 'options', file('opts.yaml', 'verbose: true\nverbose: false\n')]);
    expect(bad.exitCode).toBe(1);
    expect(bad.stderr).toMatch(/opts\.yaml:2:1: duplicate name/);
    expect((await cli.run(['env', 'config', 'staging', 'bogus'])).exitCode).toBe(2);
  });

  it('--edit: saved changes are stored; an error reopens the editor with it on top', async () => {
    // An "editor" that fixes the file on its second run: first an interval of 0, then 90.
    const script = join(dir, 'editor.sh');
    const count = join(dir, 'count');
    writeFileSync(count, '0');
    writeFileSync(
      script,
      `#!/bin/sh
n=$(cat ${count}); n=$((n+1)); echo $n > ${count}
cp "$1" ${join(dir, 'seen')}.$n
if [ $n -eq 1 ]; then
  sed -i "s/^  schedule: {}$/  schedule:\\n    edited:\\n      query: SELECT 1\\n      interval: 0/" "$1"
else
  # Longer than the server's keep-alive (5 s): the connection of the read is closed meanwhile.
  sleep 6
  sed -i "s/^      interval: 0$/      interval: 90/" "$1"
fi
`,
    );
    chmodSync(script, 0o755);
    const r = await cli.run(['env', 'config', 'staging', '--edit'], { env: { EDITOR: script } });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).toContain('error: spec.schedule.edited.interval: must be a positive integer (seconds)');
    expect(r.stderr).toMatch(/osqueryconfig\/staging edited \(schedule \+1/);
    expect(readFileSync(`${join(dir, 'seen')}.2`, 'utf8')).toMatch(
      /^# error: spec\.schedule\.edited\.interval: must be a positive integer/,
    );
    expect((await stored('staging')).schedule).toEqual({ edited: { query: 'SELECT 1', interval: 90 } });
    // An editor that changes nothing: nothing stored.
    const hash = (await stored('staging')).hash;
    const none = await cli.run(['env', 'config', 'staging', '--edit'], { env: { EDITOR: 'true' } });
    expect(none.stderr).toBe('Edit cancelled: no changes made.\n');
    expect((await stored('staging')).hash).toBe(hash);
  });
});

describe('apply and diff', () => {
  it('diff exits 1 on differences, apply shows the diff and stores it, then both find nothing to do', async () => {
    const f = file('dev.yaml', DOC);
    const diff = await cli.run(['diff', '-f', f]);
    expect(diff.exitCode, diff.stderr).toBe(1);
    expect(diff.stdout).toContain('--- dev (server)');
    expect(diff.stdout).toContain('+    users_query:');
    const before = (await stored()).hash;

    const dry = await cli.run(['apply', '-f', f, '--dry-run']);
    expect(dry.exitCode, dry.stderr).toBe(0);
    expect(dry.stdout).toMatch(
      /osqueryconfig\/dev would be configured \(schedule \+1, packs \+1; hash [0-9a-f]{12} -> [0-9a-f]{12}\) \(dry run\)/,
    );
    expect((await stored()).hash).toBe(before);

    const apply = await cli.run(['apply', '-f', f]);
    expect(apply.exitCode, apply.stderr).toBe(0);
    expect(apply.stdout).toContain('+      query: SELECT uid, username FROM users');
    expect(apply.stdout).toMatch(/osqueryconfig\/dev configured \(schedule \+1, packs \+1/);
    const after = await stored();
    expect(after.hash).not.toBe(before);
    expect(after.schedule).toEqual({ users_query: { query: 'SELECT uid, username FROM users', interval: 60 } });
    expect(after.packs.web.queries.procs).toEqual({ query: 'SELECT pid, name FROM processes', interval: 300, snapshot: true });

    const again = await cli.run(['apply', '-f', f]);
    expect(again.stdout).toBe('osqueryconfig/dev unchanged\n');
    expect((await stored()).hash).toBe(after.hash);
    const same = await cli.run(['diff', '-f', f]);
    expect(same.exitCode).toBe(0);
    expect(same.stdout).toBe('');
  });

  it('env config -o yaml round-trips through apply; --prune removes what the files do not list', async () => {
    const out = await cli.run(['env', 'config', 'dev', '-o', 'yaml']);
    const f = file('roundtrip.yaml', out.stdout);
    expect((await cli.run(['diff', '-f', f])).exitCode).toBe(0);
    expect((await cli.run(['apply', '-f', f])).stdout).toBe('osqueryconfig/dev unchanged\n');
    const json = file('rt.json', (await cli.run(['env', 'config', 'dev', '-o', 'json'])).stdout);
    expect((await cli.run(['diff', '-f', json])).exitCode).toBe(0);

    const only = file('only.yaml', DOC.replace(/ {2}packs:[\s\S]*$/, ''));
    const kept = await cli.run(['diff', '-f', only]);
    expect(kept.exitCode).toBe(0);
    const pruneDiff = await cli.run(['diff', '-f', only.replace('only', 'only'), '--prune']);
    expect(pruneDiff.exitCode).toBe(0); // packs is not named by the document: --prune leaves it
    const noPacks = file('nopacks.yaml', `${DOC.replace(/ {2}packs:[\s\S]*$/, '')}  packs: {}\n`);
    expect((await cli.run(['diff', '-f', noPacks])).exitCode).toBe(0);
    const pruned = await cli.run(['apply', '-f', noPacks, '--prune']);
    expect(pruned.stdout).toMatch(/osqueryconfig\/dev configured \(packs -1/);
    expect((await stored()).packs).toEqual({});
  });

  it('malformed YAML, bad SQL, a duplicate name, an interval of 0: one clear line each, nothing changed', async () => {
    const before = await stored();
    const audits = (await audit()).length;
    const cases: [string, string, RegExp][] = [
      ['malformed.yaml', DOC.replace('interval: 60', 'interval: [60'), /^error: .*malformed\.yaml:\d+:\d+: .+\n$/],
      [
        'badsql.yaml',
        DOC.replace('SELECT uid, username FROM users', 'SELECT uid username FROM WHERE'),
        /^error: .*badsql\.yaml: spec\.schedule\.users_query\.query: SQL syntax error at line 1, column \d+/,
      ],
      [
        'dup.yaml',
        DOC.replace('  packs:', '    users_query:\n      query: SELECT 1\n      interval: 5\n  packs:'),
        /^error: .*dup\.yaml:10:5: duplicate name "users_query"/,
      ],
      [
        'zero.yaml',
        DOC.replace('interval: 60', 'interval: 0'),
        /^error: .*zero\.yaml: spec\.schedule\.users_query\.interval: must be a positive integer \(seconds\)\n$/,
      ],
    ];
    for (const [name, text, message] of cases) {
      const f = file(name, text);
      for (const cmd of [
        ['apply', '-f', f],
        ['apply', '-f', f, '--dry-run'],
      ]) {
        const r = await cli.run(cmd);
        expect(r.exitCode, `${name}: ${r.stderr}`).toBe(1);
        expect(r.stderr, name).toMatch(message);
        expect(r.stderr.trim().split('\n'), name).toHaveLength(1);
        expect(r.stdout, name).toBe('');
      }
      expect((await cli.run(['diff', '-f', f])).exitCode, name).toBe(2);
    }
    expect(await stored()).toEqual(before);
    expect((await audit()).length).toBe(audits);
  });

  it('two documents for one environment (by name and by UUID) are refused before any change', async () => {
    const uuid = (await apiCall(server.url, 'GET', '/api/v1/environments/dev', { token })).body.uuid as string;
    const f = file(
      'twins.yaml',
      `${DOC}---\n${DOC.replace('environment: dev', `environment: ${uuid}`).replace('interval: 60', 'interval: 62')}`,
    );
    const before = await stored();
    const r = await cli.run(['apply', '-f', f]);
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toMatch(/twins\.yaml \(document 2\): environment dev is already configured by .*twins\.yaml \(document 1\)/);
    expect(await stored()).toEqual(before);
  });

  it('the server refuses what the CLI cannot know: nothing is stored in any environment', async () => {
    // Two documents; the second names an environment that does not exist.
    const f = file(
      'two.yaml',
      `${DOC.replace('interval: 60', 'interval: 61')}---\n${DOC.replace('environment: dev', 'environment: nowhere')}`,
    );
    const before = await stored();
    const r = await cli.run(['apply', '-f', f]);
    expect(r.exitCode).toBe(3);
    expect(r.stderr).toMatch(/environment "nowhere" not found/);
    expect(await stored()).toEqual(before);
  });
});
