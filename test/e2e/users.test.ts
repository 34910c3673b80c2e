// `fleetctl users ...` end to end: the built binary against a real `fleetctl server --dev`
// process; what the server stored is read back through the API with a separate admin token.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cli, DEV_PASSWORD, type ServerProcess } from '../helpers/cli.js';
import { apiCall, apiLogin, apiToken, runInPty, startAdminSession } from '../helpers/admin-cli.js';
import type { User } from '../../src/api/index.js';

let server: ServerProcess;
let url: string;
let cli: Cli;
let adminToken: string;

async function storedUser(username: string): Promise<User | undefined> {
  const r = await apiCall(url, 'GET', '/api/v1/users', { token: adminToken });
  expect(r.status).toBe(200);
  return (r.body as User[]).find((u) => u.username === username);
}

function access(u: User | undefined, env: string) {
  const e = u?.environments.find((x) => x.name === env);
  return e ? { user: e.user, query: e.query, carve: e.carve, admin: e.admin } : undefined;
}

beforeAll(async () => {
  ({ server, url, cli, token: adminToken } = await startAdminSession());
});

afterAll(async () => {
  cli?.cleanup();
  await server?.stop();
});

describe('users list / show / me', () => {
  it('lists every user as JSON in the API shape, sorted by name', async () => {
    const r = await cli.run(['users', 'list', '-o', 'json']);
    expect(r.exitCode).toBe(0);
    expect(r.stderr).toBe('');
    const list = JSON.parse(r.stdout) as User[];
    const names = list.map((u) => u.username);
    expect(names).toEqual([...names].sort((a, b) => a.localeCompare(b)));
    expect(names).toEqual(expect.arrayContaining(['admin', 'prod-admin', 'analyst', 'ci-bot']));
    const ciBot = list.find((u) => u.username === 'ci-bot')!;
    expect(ciBot).toMatchObject({ service: true, admin: false });
    expect(access(ciBot, 'staging')).toMatchObject({ admin: true });
    expect(r.stdout).not.toMatch(/password|hash|totp_secret/i);
  });

  it('prints a table with access and MFA columns when piped (TSV with a header)', async () => {
    const r = await cli.run(['users', 'list']);
    expect(r.exitCode).toBe(0);
    const [header, ...rows] = r.stdout.trimEnd().split('\n');
    expect(header.split('\t')).toEqual(['USERNAME', 'FULL NAME', 'EMAIL', 'SUPER-ADMIN', 'SERVICE', 'ACCESS', 'MFA', 'LAST LOGIN']);
    const analyst = rows.map((l) => l.split('\t')).find((c) => c[0] === 'analyst')!;
    expect(analyst[5]).toBe('prod:user, staging:user');
    expect(rows.map((l) => l.split('\t')).find((c) => c[0] === 'admin')![5]).toBe('all (super-admin)');
    const mfaUser = rows.map((l) => l.split('\t')).find((c) => c[0] === 'mfa-user')!;
    expect(mfaUser[6]).toBe('totp');
  });

  it('shows one user by name', async () => {
    const r = await cli.run(['users', 'show', 'querier', '--json']);
    expect(r.exitCode).toBe(0);
    const u = JSON.parse(r.stdout) as User;
    expect(u.username).toBe('querier');
    expect(access(u, 'prod')).toEqual({ user: true, query: true, carve: false, admin: false });
  });

  it('exits 3 with a clear message for an unknown user', async () => {
    const r = await cli.run(['users', 'show', 'nobody-here']);
    expect(r.exitCode).toBe(3);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^error: user "nobody-here" not found\nhint: run `fleetctl users list`/);
  });

  it('users me shows the logged-in user, also for non-admins', async () => {
    const c = new Cli();
    await c.login(url, 'analyst');
    const r = await c.run(['users', 'me', '--json']);
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(r.stdout).username).toBe('analyst');
    const denied = await c.run(['users', 'list']);
    expect(denied.exitCode).toBe(5);
    expect(denied.stderr).toMatch(/^error: .*\(forbidden, HTTP 403\)/);
    c.cleanup();
  });
});

describe('users add', () => {
  it('creates a user from --password-stdin, who can then log in', async () => {
    const r = await cli.run(
      [
        'users',
        'add',
        'alice',
        '--fullname',
        'Alice Doe',
        '--email',
        'alice@example.com',
        '--environment',
        'prod,staging',
        '--level',
        'query',
        '--password-stdin',
      ],
      { input: 'alice-password-1\n' },
    );
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/alice/);
    expect(r.stderr).not.toContain('alice-password-1');
    const u = await storedUser('alice');
    expect(u).toMatchObject({ fullname: 'Alice Doe', email: 'alice@example.com', admin: false, service: false });
    expect(access(u, 'prod')).toMatchObject({ query: true, carve: false, admin: false });
    expect(access(u, 'staging')).toMatchObject({ query: true, admin: false });
    expect(access(u, 'dev')).toBeUndefined();

    const c = new Cli();
    const login = await c.run(['login', '--url', url, '--env', 'staging', '--username', 'alice', '--password-stdin'], {
      input: 'alice-password-1',
    });
    expect(login.exitCode).toBe(0);
    const me = await c.run(['users', 'me', '-o', 'json']);
    expect(JSON.parse(me.stdout).username).toBe('alice');
    c.cleanup();
  });

  it('with -o json prints the created user', async () => {
    const r = await cli.run(
      ['users', 'add', 'svc-deploy', '--service', '--environment', 'dev', '--level', 'admin', '--password-stdin', '-o', 'json'],
      { input: 'deploy-password-1' },
    );
    expect(r.exitCode).toBe(0);
    const u = JSON.parse(r.stdout) as User;
    expect(u).toMatchObject({ username: 'svc-deploy', service: true, admin: false });
    expect(access(u, 'dev')).toMatchObject({ admin: true });
    expect(await storedUser('svc-deploy')).toMatchObject({ service: true });
  });

  it('--admin creates a super-admin', async () => {
    const r = await cli.run(['users', 'add', 'root2', '--admin', '--password-stdin'], { input: 'root2-password-1' });
    expect(r.exitCode).toBe(0);
    expect((await storedUser('root2'))?.admin).toBe(true);
  });

  it('exits 6 when the user exists, and changes nothing', async () => {
    const before = await storedUser('analyst');
    const r = await cli.run(['users', 'add', 'analyst', '--email', 'changed@example.com', '--password-stdin'], {
      input: 'whatever-password',
    });
    expect(r.exitCode).toBe(6);
    expect(r.stderr).toMatch(/^error: .*\(conflict, HTTP 409\)/);
    expect(await storedUser('analyst')).toEqual(before);
  });

  it('needs a password: exit 2 without a terminal and without --password-stdin', async () => {
    const r = await cli.run(['users', 'add', 'nopass', '--environment', 'prod']);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/--password-stdin/);
    expect(await storedUser('nopass')).toBeUndefined();
  });

  it('rejects --level without --environment, and an unknown level (exit 2)', async () => {
    const a = await cli.run(['users', 'add', 'lvl', '--level', 'query', '--password-stdin'], { input: 'password-123' });
    expect(a.exitCode).toBe(2);
    expect(a.stderr).toMatch(/--level applies to the environments given with --environment/);
    const b = await cli.run(['users', 'add', 'lvl', '--environment', 'prod', '--level', 'root', '--password-stdin'], {
      input: 'password-123',
    });
    expect(b.exitCode).toBe(2);
    expect(b.stderr).toMatch(/invalid --level "root"; valid: user, query, carve, admin/);
    expect(await storedUser('lvl')).toBeUndefined();
  });

  it('at a terminal asks for the password twice, again when they differ', async () => {
    const p = runInPty(cli, ['users', 'add', 'ttyuser', '--environment', 'prod']);
    await p.expect(/New password for ttyuser:/);
    p.line('first-password-1');
    await p.expect(/Repeat the new password:/);
    p.line('different-password');
    await p.expect(/do not match; try again/);
    await p.expect(/New password for ttyuser:/);
    p.line('tty-password-1');
    await p.expect(/Repeat the new password:/);
    p.line('tty-password-1');
    const { exitCode, output } = await p.done();
    expect(exitCode).toBe(0);
    expect(output).not.toContain('tty-password-1');
    expect(await storedUser('ttyuser')).toBeDefined();
    expect((await apiLogin(url, 'ttyuser', 'tty-password-1')).status).toBe(200);
    expect((await apiLogin(url, 'ttyuser', 'first-password-1')).status).toBe(401);
  });
});

describe('users edit', () => {
  it('changes only what the flags say', async () => {
    const r = await cli.run(['users', 'edit', 'alice', '--email', 'alice@new.example.com']);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe('');
    const u = await storedUser('alice');
    expect(u).toMatchObject({ email: 'alice@new.example.com', fullname: 'Alice Doe' });
    expect(access(u, 'prod')).toMatchObject({ query: true });
  });

  it('sets levels on an environment and the super-admin / service flags on and off', async () => {
    let r = await cli.run(['users', 'edit', 'alice', '--environment', 'prod', '--level', 'admin', '--admin', '--service', '-o', 'json']);
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ username: 'alice', admin: true, service: true });
    expect(access(await storedUser('alice'), 'prod')).toMatchObject({ admin: true });
    r = await cli.run(['users', 'edit', 'alice', '--no-admin', '--no-service']);
    expect(r.exitCode).toBe(0);
    expect(await storedUser('alice')).toMatchObject({ admin: false, service: false });
  });

  it('--level none revokes access to the environments given and keeps the rest', async () => {
    const r = await cli.run(['users', 'edit', 'alice', '--environment', 'staging', '--level', 'none']);
    expect(r.exitCode).toBe(0);
    const u = await storedUser('alice');
    expect(access(u, 'staging') ?? { user: false, query: false, carve: false, admin: false }).toEqual({
      user: false,
      query: false,
      carve: false,
      admin: false,
    });
    expect(access(u, 'prod')).toMatchObject({ admin: true });
    const bad = await cli.run(['users', 'edit', 'alice', '--environment', 'prod', '--level', 'none,query']);
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toMatch(/--level none \(revoke access\) cannot be combined/);
  });

  it('--no-api and --api set the api flag', async () => {
    expect((await cli.run(['users', 'edit', 'alice', '--no-api'])).exitCode).toBe(0);
    expect((await storedUser('alice'))?.api).toBe(false);
    expect((await cli.run(['users', 'edit', 'alice', '--api'])).exitCode).toBe(0);
    expect((await storedUser('alice'))?.api).toBe(true);
  });

  it('--no-api is enforced (issue 29): the user is logged out, their commands and a new login exit 5 saying why; users show says what it means', async () => {
    const alice = new Cli();
    try {
      await alice.login(url, 'alice', 'prod', 'alice-password-1');
      expect((await alice.run(['nodes', 'list', '--limit', '1'])).exitCode).toBe(0);
      const off = await cli.run(['users', 'edit', 'alice', '--no-api']);
      expect(off.exitCode).toBe(0);
      expect((await cli.run(['users', 'show', 'alice'])).stdout).toMatch(
        /^api\s+no \(cannot log in or use a token: API access is disabled\)$/m,
      );

      const denied = await alice.run(['nodes', 'list', '--limit', '1']);
      expect(denied.exitCode).toBe(5);
      expect(denied.stdout).toBe('');
      expect(denied.stderr).toMatch(
        /^error: API access is disabled for user alice: a super-admin can allow it \(fleetctl users edit alice --api\)/m,
      );
      const again = await alice.run(['login', '--url', url, '--env', 'prod', '--username', 'alice', '--password-stdin'], {
        input: 'alice-password-1',
      });
      expect(again.exitCode).toBe(5);
      expect(again.stderr).toMatch(/API access is disabled for user alice/);

      expect((await cli.run(['users', 'edit', 'alice', '--api'])).exitCode).toBe(0);
      expect((await cli.run(['users', 'show', 'alice'])).stdout).toMatch(/^api\s+yes \(may log in and use tokens\)$/m);
      await alice.login(url, 'alice', 'prod', 'alice-password-1');
      expect((await alice.run(['nodes', 'list', '--limit', '1'])).exitCode).toBe(0);
    } finally {
      alice.cleanup();
    }
  });

  it('a new password from stdin replaces the old one', async () => {
    const r = await cli.run(['users', 'edit', 'alice', '--password-stdin'], { input: 'alice-password-2\n' });
    expect(r.exitCode).toBe(0);
    expect((await apiLogin(url, 'alice', 'alice-password-2')).status).toBe(200);
    expect((await apiLogin(url, 'alice', 'alice-password-1')).status).toBe(401);
  });

  it('exits 2 when there is nothing to change', async () => {
    const r = await cli.run(['users', 'edit', 'alice']);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/nothing to change/);
  });

  it('exits 3 for an unknown user', async () => {
    const r = await cli.run(['users', 'edit', 'ghost', '--email', 'g@example.com']);
    expect(r.exitCode).toBe(3);
    expect(r.stderr).toMatch(/^error: .*\(not_found, HTTP 404\)/);
  });

  it('refuses to demote the last super-admin (exit 6)', async () => {
    // root2 is a super-admin too: remove it first so admin is the last one.
    expect((await cli.run(['users', 'remove', 'root2', '--yes'])).exitCode).toBe(0);
    const r = await cli.run(['users', 'edit', 'admin', '--no-admin']);
    expect(r.exitCode).toBe(6);
    expect((await storedUser('admin'))?.admin).toBe(true);
  });
});

describe('users remove', () => {
  it('without --yes and without a terminal exits 2, and the user still exists', async () => {
    const r = await cli.run(['users', 'remove', 'svc-deploy']);
    expect(r.exitCode).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^error: refusing to proceed without confirmation: Remove user svc-deploy; pass --yes/);
    expect(await storedUser('svc-deploy')).toBeDefined();
  });

  it('at a terminal asks, and "no" keeps the user', async () => {
    const p = runInPty(cli, ['users', 'remove', 'svc-deploy']);
    await p.expect(/Remove user svc-deploy\?/);
    p.line('n');
    const { exitCode } = await p.done();
    expect(exitCode).toBe(1);
    expect(await storedUser('svc-deploy')).toBeDefined();
  });

  it('with --yes removes the user, whose token then stops working', async () => {
    const token = await apiToken(url, 'svc-deploy', 'deploy-password-1', 'dev');
    const r = await cli.run(['users', 'remove', 'svc-deploy', '--yes', '-o', 'json']);
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ username: 'svc-deploy', removed: true });
    expect(await storedUser('svc-deploy')).toBeUndefined();
    expect((await apiCall(url, 'GET', '/api/v1/users/me', { token })).status).toBe(401);
  });

  it('exits 3 for an unknown user and 6 for yourself', async () => {
    const a = await cli.run(['users', 'remove', 'ghost', '--yes']);
    expect(a.exitCode).toBe(3);
    const b = await cli.run(['users', 'remove', 'admin', '--yes']);
    expect(b.exitCode).toBe(6);
    expect(await storedUser('admin')).toBeDefined();
  });
});

describe('users passwd', () => {
  it('changes your own password from two stdin lines; other sessions end, this profile stays logged in', async () => {
    const c = new Cli();
    await c.login(url, 'analyst');
    const other = new Cli();
    await other.login(url, 'analyst', 'staging');
    const r = await c.run(['users', 'passwd', '--password-stdin'], { input: `${DEV_PASSWORD}\nanalyst-new-pass\n` });
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/other sessions have ended; this one continues/);
    expect(r.stderr).not.toContain('analyst-new-pass');
    const ended = await other.run(['users', 'me']);
    expect(ended.exitCode).toBe(4);
    other.cleanup();
    expect((await apiLogin(url, 'analyst', 'analyst-new-pass')).status).toBe(200);
    expect((await apiLogin(url, 'analyst', DEV_PASSWORD)).status).toBe(401);
    const me = await c.run(['users', 'me', '--json']);
    expect(me.exitCode).toBe(0);
    expect(JSON.parse(me.stdout).username).toBe('analyst');
    c.cleanup();
  });

  it('exits 5 on a wrong current password and keeps the old one', async () => {
    const c = new Cli();
    await c.login(url, 'dev-user', 'dev');
    const r = await c.run(['users', 'passwd', '--password-stdin'], { input: 'not-my-password\nsome-new-pass\n' });
    expect(r.exitCode).toBe(5);
    expect(r.stderr).toMatch(/\(forbidden, HTTP 403\)/);
    expect((await apiLogin(url, 'dev-user', DEV_PASSWORD, 'dev')).status).toBe(200);
    c.cleanup();
  });

  it('exits 2 when stdin does not hold exactly two lines', async () => {
    const c = new Cli();
    await c.login(url, 'dev-user', 'dev');
    const r = await c.run(['users', 'passwd', '--password-stdin'], { input: 'only-one-line\n' });
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toBe('error: the new password is missing on stdin (expected 2 lines: the current password, then the new password)\n');
    const three = await c.run(['users', 'passwd', '--password-stdin'], { input: 'a-password\nb-password\nc-password\n' });
    expect(three.exitCode).toBe(2);
    expect(three.stderr).toMatch(/expected 2 lines on stdin/);
    c.cleanup();
  });

  it('at a terminal asks current, new, new again', async () => {
    const c = new Cli();
    await c.login(url, 'carver');
    const p = runInPty(c, ['users', 'passwd']);
    await p.expect(/Current password:/);
    p.line(DEV_PASSWORD);
    await p.expect(/New password:/);
    p.line('carver-new-pass');
    await p.expect(/Repeat the new password:/);
    p.line('carver-new-pass');
    const { exitCode } = await p.done();
    expect(exitCode).toBe(0);
    expect((await apiLogin(url, 'carver', 'carver-new-pass')).status).toBe(200);
    c.cleanup();
  });
});

describe('help', () => {
  it.each(['list', 'show', 'me', 'add', 'edit', 'remove', 'passwd'])('users %s --help has examples', async (v) => {
    const r = await cli.run(['users', v, '--help']);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/Examples:\n {2}\$ fleetctl users /);
  });
});
