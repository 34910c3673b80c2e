// Profiles: several servers or users side by side (`config list|use|show|remove|set`,
// --profile, FLEETCTL_PROFILE), and FLEETCTL_TOKEN/URL/ENV overriding them for CI.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestServer, type TestServer } from '../helpers/api-server.js';
import { Cli, DEV_PASSWORD } from '../helpers/cli.js';
import pkg from '../../package.json' with { type: 'json' };

let ts: TestServer;
const clis: Cli[] = [];

function newCli(): Cli {
  const c = new Cli();
  clis.push(c);
  return c;
}

const credentials = (cli: Cli) => {
  const f = join(cli.configDir, 'credentials.json');
  return existsSync(f) ? (JSON.parse(readFileSync(f, 'utf8')) as Record<string, { token: string; csrfToken: string }>) : {};
};

async function login(cli: Cli, profile: string, username: string, env: string) {
  const r = await cli.run(['login', '--profile', profile, '--url', ts.url, '--env', env, '--username', username, '--password-stdin'], {
    input: DEV_PASSWORD,
  });
  expect(r.exitCode).toBe(0);
}

async function json(cli: Cli, args: string[], env?: Record<string, string | undefined>) {
  const r = await cli.run([...args, '--json'], { env });
  expect(r.stderr).toBe('');
  expect(r.exitCode).toBe(0);
  return JSON.parse(r.stdout);
}

beforeAll(async () => {
  ts = await startTestServer();
});

afterAll(async () => {
  for (const c of clis) c.cleanup();
  await ts?.close();
});

describe('profiles', () => {
  let cli: Cli;

  beforeAll(async () => {
    cli = newCli();
    await login(cli, 'default', 'admin', 'prod');
    await login(cli, 'staging', 'analyst', 'staging');
  });

  it('config list shows every profile, the current one marked, and where its token is; never a token', async () => {
    const list = await json(cli, ['config', 'list']);
    expect(list).toEqual([
      {
        name: 'default',
        current: true,
        url: ts.url,
        env: 'prod',
        username: 'admin',
        credential_store: 'file',
        token_expires_at: expect.stringMatching(/Z$/),
      },
      {
        name: 'staging',
        current: false,
        url: ts.url,
        env: 'staging',
        username: 'analyst',
        credential_store: 'file',
        token_expires_at: expect.stringMatching(/Z$/),
      },
    ]);
    const table = await cli.run(['config', 'list']);
    expect(table.stdout.split('\n')[0]).toBe('CURRENT\tNAME\tURL\tENV\tUSER\tTOKEN STORE\tTOKEN EXPIRES');
    expect(table.stdout).toMatch(/^\*\tdefault\t/m);
    expect(table.stdout).not.toMatch(/eyJ/);
  });

  it('--profile and FLEETCTL_PROFILE pick a profile for one command; the flag wins', async () => {
    expect(await json(cli, ['auth', 'status', '--profile', 'staging'])).toMatchObject({
      profile: 'staging',
      username: 'analyst',
      env: 'staging',
      logged_in: true,
    });
    expect(await json(cli, ['auth', 'status'], { FLEETCTL_PROFILE: 'staging' })).toMatchObject({ profile: 'staging', username: 'analyst' });
    expect(await json(cli, ['auth', 'status', '--profile', 'default'], { FLEETCTL_PROFILE: 'staging' })).toMatchObject({
      profile: 'default',
      username: 'admin',
    });
    // Each profile's own token goes to the server: it answers as that profile's user.
    const me = async (args: string[], env?: Record<string, string>) =>
      JSON.parse((await cli.run(['api', 'api/v1/users/me', ...args], { env })).stdout).username;
    expect(await me(['--profile', 'staging'])).toBe('analyst');
    expect(await me([], { FLEETCTL_PROFILE: 'staging' })).toBe('analyst');
    expect(await me([])).toBe('admin');
  });

  it('config use switches the current profile; an unknown one is exit 3', async () => {
    const use = await cli.run(['config', 'use', 'staging']);
    expect(use.exitCode).toBe(0);
    expect(use.stderr).toBe('Current profile: staging.\n');
    expect(await json(cli, ['auth', 'status'])).toMatchObject({ profile: 'staging', username: 'analyst' });
    const bad = await cli.run(['config', 'use', 'nope']);
    expect(bad.exitCode).toBe(3);
    expect(bad.stderr).toBe('error: no profile named "nope"\nhint: see `fleetctl config list`\n');
    expect((await cli.run(['config', 'use', 'default'])).exitCode).toBe(0);
  });

  it('a command with --profile or FLEETCTL_PROFILE naming no profile (a typo) says so: exit 3, not "no environment" or "not logged in"', async () => {
    const expected = { exitCode: 3, stdout: '', stderr: 'error: no profile named "stagign"\nhint: see `fleetctl config list`\n' };
    const pick = (r: { exitCode: number; stdout: string; stderr: string }) => ({
      exitCode: r.exitCode,
      stdout: r.stdout,
      stderr: r.stderr,
    });
    expect(pick(await cli.run(['nodes', 'list', '--profile', 'stagign']))).toEqual(expected);
    expect(pick(await cli.run(['stats'], { env: { FLEETCTL_PROFILE: 'stagign' } }))).toEqual(expected);
    expect(pick(await cli.run(['nodes', 'list', '--profile', 'stagign'], { env: { FLEETCTL_URL: ts.url, FLEETCTL_ENV: 'prod' } }))).toEqual(
      expected,
    );
    // FLEETCTL_TOKEN needs no profile: it still works whatever the profile name.
    const ci = { FLEETCTL_TOKEN: await ts.login('analyst', 'prod'), FLEETCTL_URL: ts.url, FLEETCTL_ENV: 'prod' };
    expect((await cli.run(['nodes', 'list', '--limit', '1', '--json', '--profile', 'stagign'], { env: ci })).exitCode).toBe(0);
  });

  it('config show prints one profile (default: the current one)', async () => {
    expect(await json(cli, ['config', 'show'])).toMatchObject({ name: 'default', current: true, username: 'admin' });
    expect(await json(cli, ['config', 'show', 'staging'])).toMatchObject({ name: 'staging', current: false, env: 'staging' });
    // `get` is an alias, as for every other `show`.
    expect(await json(cli, ['config', 'get', 'staging'])).toMatchObject({ name: 'staging', env: 'staging' });
    const missing = await cli.run(['config', 'show', 'nope']);
    expect(missing.exitCode).toBe(3);
  });

  it('config set creates or changes a profile, checking keys and values', async () => {
    const set = await cli.run(['config', 'set', 'url', `${ts.url}/`, '--profile', 'third']);
    expect(set.exitCode).toBe(0);
    expect(set.stderr).toBe(`Profile third: url = ${ts.url}.\n`);
    expect((await cli.run(['config', 'set', 'env', 'dev', '--profile', 'third'])).exitCode).toBe(0);
    expect((await cli.run(['config', 'set', 'username', 'dev-user', '--profile', 'third'])).exitCode).toBe(0);
    expect(await json(cli, ['config', 'show', 'third'])).toEqual({
      name: 'third',
      current: false,
      url: ts.url,
      env: 'dev',
      username: 'dev-user',
      credential_store: '',
      token_expires_at: '',
    });
    // Its URL, environment and username are used by login: only the password is needed.
    const li = await cli.run(['login', '--profile', 'third', '--password-stdin'], { input: DEV_PASSWORD });
    expect(li.exitCode).toBe(0);
    expect(li.stderr).toContain('as dev-user (environment dev, profile third)');

    const badKey = await cli.run(['config', 'set', 'token', 'x']);
    expect(badKey.exitCode).toBe(2);
    expect(badKey.stderr).toBe('error: unknown key "token": use one of url, env, username\n');
    const badUrl = await cli.run(['config', 'set', 'url', 'ftp://example.com']);
    expect(badUrl.exitCode).toBe(2);
    const badName = await cli.run(['config', 'set', 'env', 'prod', '--profile', 'a b']);
    expect(badName.exitCode).toBe(2);
    expect(badName.stderr).toContain('invalid profile name "a b"');
  });

  it('changing the url of a logged-in profile removes its token (a token never follows a profile to another server)', async () => {
    expect(credentials(cli).third).toBeDefined();
    const r = await cli.run(['config', 'set', 'url', 'https://fleet.example.com', '--profile', 'third']);
    expect(r.exitCode).toBe(0);
    expect(r.stderr).toBe(
      'Profile third: url = https://fleet.example.com.\nIts token (for the previous url) was removed: run `fleetctl login --profile third` to sign in.\n',
    );
    expect(credentials(cli).third).toBeUndefined();
  });

  it('a profile token is never sent to another --url', async () => {
    const r = await cli.run(['nodes', 'list', '--url', 'http://127.0.0.1:9', '--json']);
    expect(r.exitCode).toBe(4);
    expect(r.stderr).toBe(
      `error: the token of profile "default" is for ${ts.url}, not http://127.0.0.1:9: it is not sent there\n` +
        'hint: log in to that server under its own profile (`fleetctl login --profile NAME --url URL`), or set FLEETCTL_TOKEN\n',
    );
  });

  it('config remove deletes the profile and its token', async () => {
    expect(credentials(cli).staging).toBeDefined();
    const r = await cli.run(['config', 'remove', 'staging']);
    expect(r.exitCode).toBe(0);
    expect(r.stderr).toBe(`Removed profile staging and its token (from file ${join(cli.configDir, 'credentials.json')}).\n`);
    expect(credentials(cli).staging).toBeUndefined();
    expect((await json(cli, ['config', 'list'])).map((p: { name: string }) => p.name)).toEqual(['default', 'third']);
    expect((await cli.run(['config', 'remove', 'staging'])).exitCode).toBe(3);
  });
});

describe('auth status and auth token', () => {
  it('auth token prints the stored token for scripts; status shows where it is and never the token', async () => {
    const cli = newCli();
    await login(cli, 'default', 'admin', 'prod');
    const r = await cli.run(['auth', 'token']);
    expect(r.exitCode).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe(`${credentials(cli).default.token}\n`);
    const s = await json(cli, ['auth', 'status']);
    expect(s).toEqual({
      profile: 'default',
      url: ts.url,
      env: 'prod',
      username: 'admin',
      server_flavor: 'fleet',
      logged_in: true,
      verified: true,
      server_version: pkg.version,
      token_expires_at: expect.stringMatching(/^\d{4}-.*Z$/),
      token_expired: false,
      credential_store: 'file',
      token_location: `file ${join(cli.configDir, 'credentials.json')}`,
    });
    expect(JSON.stringify(s)).not.toContain(credentials(cli).default.token);
  });

  it('not logged in: auth status and auth token exit 4 with the login hint', async () => {
    const cli = newCli();
    const s = await cli.run(['auth', 'status', '--json']);
    expect(s.exitCode).toBe(4);
    expect(JSON.parse(s.stdout)).toMatchObject({ profile: 'default', logged_in: false, credential_store: '', token_location: '' });
    expect(s.stderr).toBe('error: not logged in (profile "default")\nhint: run `fleetctl login` to sign in\n');
    const t = await cli.run(['auth', 'token', '--profile', 'x']);
    expect(t.exitCode).toBe(4);
    expect(t.stdout).toBe('');
    expect(t.stderr).toBe('error: not logged in (profile "x")\nhint: run `fleetctl login --profile x` to sign in\n');
  });
});

describe('FLEETCTL_TOKEN, FLEETCTL_URL, FLEETCTL_ENV (CI)', () => {
  it('work without any profile, and win over a stored token', async () => {
    const token = await ts.login('analyst', 'prod');
    const ci = { FLEETCTL_TOKEN: token, FLEETCTL_URL: ts.url, FLEETCTL_ENV: 'prod' };
    const cli = newCli();
    const nodes = await cli.run(['nodes', 'list', '--limit', '2', '--json'], { env: ci });
    expect(nodes.stderr).toBe('');
    expect(nodes.exitCode).toBe(0);
    expect(JSON.parse(nodes.stdout)).toHaveLength(2);
    expect(await json(cli, ['auth', 'status'], ci)).toMatchObject({
      url: ts.url,
      env: 'prod',
      logged_in: true,
      credential_store: 'env',
      token_location: 'environment variable FLEETCTL_TOKEN',
    });

    // With a stored admin login, FLEETCTL_TOKEN (analyst's) is still what the server sees:
    // analyst cannot read prod's settings, admin could.
    await login(cli, 'default', 'admin', 'prod');
    const asAdmin = await cli.run(['api', 'api/v1/settings/admin/prod']);
    expect(asAdmin.exitCode).toBe(0);
    const asAnalyst = await cli.run(['api', 'api/v1/settings/admin/prod'], { env: { FLEETCTL_TOKEN: token } });
    expect(asAnalyst.exitCode).toBe(5);
    // auth token prints the token in use; auth status names the token's user, not the profile's.
    expect((await cli.run(['auth', 'token'], { env: { FLEETCTL_TOKEN: token } })).stdout).toBe(`${token}\n`);
    expect(await json(cli, ['auth', 'status'], { FLEETCTL_TOKEN: token })).toMatchObject({
      profile: 'default',
      username: 'analyst',
      credential_store: 'env',
    });
    expect(await json(cli, ['auth', 'status'])).toMatchObject({ username: 'admin', credential_store: 'file' });
  });

  it('logout keeps FLEETCTL_TOKEN working and says so', async () => {
    const cli = newCli();
    await login(cli, 'default', 'admin', 'prod');
    const r = await cli.run(['logout'], { env: { FLEETCTL_TOKEN: 'x.y.z' } });
    expect(r.exitCode).toBe(0);
    expect(r.stderr).toBe(
      `Logged out of profile default (session ended on the server; token removed from file ${join(cli.configDir, 'credentials.json')}).\n` +
        'note: FLEETCTL_TOKEN is set in the environment and still authenticates commands.\n',
    );
    expect(credentials(cli).default).toBeUndefined();
  });
});

describe('csrf token', () => {
  it('is stored with the token and sent on changes: a wrong one makes the server refuse a change (403 csrf)', async () => {
    const cli = newCli();
    await login(cli, 'default', 'admin', 'prod');
    const debug = await cli.run(['--debug', 'tags', 'add', 'csrf-ok', '--env', 'prod']);
    expect(debug.exitCode).toBe(0);
    expect(debug.stderr).toMatch(/> POST .*\n\[debug\] > headers \{[^}]*"x-csrf-token":"\[redacted\]"/);
    const stored = await ts.server.deps.db.selectFrom('tags').select('name').where('name', '=', 'csrf-ok').executeTakeFirst();
    expect(stored).toBeDefined();
    // Reads carry no csrf header.
    const read = await cli.run(['--debug', 'tags', 'list', '--env', 'prod', '--json']);
    expect(read.stderr).not.toContain('x-csrf-token');

    const creds = credentials(cli);
    writeFileSync(join(cli.configDir, 'credentials.json'), JSON.stringify({ default: { ...creds.default, csrfToken: '0'.repeat(32) } }), {
      mode: 0o600,
    });
    const refused = await cli.run(['tags', 'add', 'csrf-bad', '--env', 'prod']);
    expect(refused.exitCode).toBe(5);
    expect(refused.stderr).toContain('(csrf, HTTP 403)');
    expect(await ts.server.deps.db.selectFrom('tags').select('name').where('name', '=', 'csrf-bad').executeTakeFirst()).toBeUndefined();
  });
});
