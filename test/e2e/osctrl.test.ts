// Every command group of the built CLI against an osctrl 0.5.4 stand-in (test/helpers/osctrl-server.ts):
// what works gives the same output shape as against our server, what osctrl lacks is refused in
// one line (exit 8) before any request, and writes send what osctrl needs (UUIDs, the tag type).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Cli } from '../helpers/cli.js';
import { OSCTRL_PASSWORD, OsctrlStandIn } from '../helpers/osctrl-server.js';

let osctrl: OsctrlStandIn;
let cli: Cli;
const PROD = 'A1B2C3D4-0000-4000-8000-000000000001';
const DEV = 'A1B2C3D4-0000-4000-8000-000000000002';

/** Runs a command and returns it with the requests it sent. */
async function run(args: string[], input?: string) {
  const before = osctrl.requests.length;
  const r = await cli.run(args, { input });
  return { ...r, sent: osctrl.sent(before) };
}

beforeAll(async () => {
  osctrl = new OsctrlStandIn();
  await osctrl.start();
  cli = new Cli();
  const r = await cli.run(['login', '--url', osctrl.url, '--env', 'prod', '--username', 'admin', '--password-stdin'], { input: OSCTRL_PASSWORD });
  if (r.exitCode !== 0) throw new Error(`login failed: ${r.stderr}`);
});

afterAll(async () => {
  cli?.cleanup();
  await osctrl?.stop();
});

const refused = (r: { exitCode: number; stderr: string; sent: unknown[] }, feature: RegExp) => {
  expect(r.exitCode).toBe(8);
  expect(r.stderr).toMatch(feature);
  expect(r.stderr).toMatch(/not supported by this server \(osctrl 0\.5\.4/);
  expect(r.sent).toEqual([]);
};

describe('login and auth', () => {
  it('learns the flavour at login, stores it in the profile and shows it in auth status', async () => {
    const cfg = JSON.parse(readFileSync(join(cli.configDir, 'config.json'), 'utf8'));
    expect(cfg.profiles.default.serverFlavor).toBe('osctrl');
    const s = await run(['auth', 'status', '-o', 'json']);
    expect(s.exitCode).toBe(0);
    expect(JSON.parse(s.stdout)).toMatchObject({ server_flavor: 'osctrl', username: 'admin', logged_in: true });
  });

  it('a wrong password exits 4 (osctrl answers 403 invalid credentials)', async () => {
    const c = new Cli();
    const r = await c.run(['login', '--url', osctrl.url, '--env', 'prod', '--username', 'admin', '--password-stdin'], { input: 'wrong' });
    c.cleanup();
    expect(r.exitCode).toBe(4);
    expect(r.stderr).toMatch(/invalid credentials/);
    expect(r.stderr).not.toMatch(/unknown/);
  });

  it('a user who is not an env admin falls back to the environment-less login', async () => {
    const c = new Cli();
    const r = await c.run(['login', '--url', osctrl.url, '--env', 'dev', '--username', 'bob', '--password-stdin'], { input: OSCTRL_PASSWORD });
    expect(r.exitCode).toBe(0);
    const me = await c.run(['users', 'me', '-o', 'json']);
    c.cleanup();
    expect(me.exitCode).toBe(0);
    expect(JSON.parse(me.stdout)).toMatchObject({ username: 'bob', admin: false, environments: [{ name: 'dev', uuid: DEV, user: true, admin: false }] });
    // the suite's admin session is untouched by bob's logins
    expect((await cli.run(['stats', '-o', 'json'])).exitCode).toBe(0);
  });

  it('--totp-code says it is not used; --server-flavor fleet overrides the probe', async () => {
    const c = new Cli();
    // (as bob: osctrl keeps only the newest token of a user, a second admin login would end the suite's session)
    const r = await c.run(['login', '--url', osctrl.url, '--env', 'dev', '--username', 'bob', '--password-stdin', '--totp-code', '123456'], { input: OSCTRL_PASSWORD });
    expect(r.exitCode).toBe(0);
    expect(r.stderr).toMatch(/not used: osctrl servers have no second factor/);
    const s = await c.run(['auth', 'status', '-o', 'json'], { env: { FLEETCTL_SERVER_FLAVOR: 'fleet' } });
    expect(JSON.parse(s.stdout).server_flavor).toBe('fleet');
    const bad = await c.run(['auth', 'status', '--server-flavor', 'nope']);
    c.cleanup();
    expect(bad.exitCode).toBe(2);
  });
});

describe('environments and enroll', () => {
  it('env list and env map show each environment once, from the PascalCase map', async () => {
    const l = await run(['env', 'list', '-o', 'json']);
    expect(l.exitCode).toBe(0);
    const names = (JSON.parse(l.stdout) as Array<{ name: string }>).map((e) => e.name).sort();
    expect(names).toEqual(['dev', 'prod']);
    const m = await run(['env', 'map', '-o', 'json']);
    expect(m.exitCode).toBe(0);
    expect(JSON.stringify(JSON.parse(m.stdout))).toContain(`"uuid":"${PROD}"`);
    const t = await run(['env', 'map']);
    expect(t.exitCode).toBe(0);
    expect(t.stdout).toMatch(/prod/);
  });

  it('enroll update maps to set_deb and the certificate upload', async () => {
    const pem = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
    const r = await run(['enroll', 'update', 'prod', '--deb-url', 'https://pkgs.example.com/osquery.deb', '--certificate', '-'], pem);
    expect(r.stderr).not.toMatch(/TypeError/);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.sent.map((s) => s.path)).toEqual(expect.arrayContaining(['/api/v1/environments/prod/enroll/set_deb', '/api/v1/environments/prod/enroll/cert']));
    expect(osctrl.envState.get(PROD)!.deb_package).toBe('https://pkgs.example.com/osquery.deb');
    expect(osctrl.envState.get(PROD)!.certificate).toBe(pem);
  });

  it('enroll show remove.sh reads the remove/ path', async () => {
    const r = await run(['enroll', 'show', 'prod', 'remove.sh']);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toContain('remove.sh for prod');
    expect(r.sent.at(-1)!.path).toBe('/api/v1/environments/prod/remove/remove.sh');
  });
});

describe('users', () => {
  it('users list and show have environments with names, never a TypeError', async () => {
    const l = await run(['users', 'list']);
    expect(l.exitCode, l.stderr).toBe(0);
    expect(l.stdout).toMatch(/admin/);
    const s = await run(['users', 'show', 'bob', '-o', 'json']);
    expect(s.exitCode).toBe(0);
    expect(JSON.parse(s.stdout).environments).toEqual([{ id: 2, name: 'dev', uuid: DEV, user: true, query: false, carve: false, admin: false }]);
  });

  it('users add --environment sends UUIDs; users edit changes access through the permissions endpoint', async () => {
    const a = await run(['users', 'add', 'carol', '--environment', 'prod', '--level', 'query', '--password-stdin'], 'carol-password-1');
    expect(a.exitCode, a.stderr).toBe(0);
    expect(osctrl.users.get('carol')!.perms).toEqual({ [PROD]: { user: false, query: true, carve: false, admin: false } });
    const e = await run(['users', 'edit', 'carol', '--environment', 'dev', '--level', 'user', '--level', 'admin']);
    expect(e.exitCode, e.stderr).toBe(0);
    expect(osctrl.users.get('carol')!.perms[DEV]).toEqual({ user: true, query: false, carve: false, admin: true });
    expect(e.sent.some((s) => s.path === '/api/v1/users/carol/permissions' && s.method === 'POST' && s.body.env_uuid === DEV)).toBe(true);
    const bad = await run(['users', 'add', 'dave', '--environment', 'nope', '--password-stdin'], 'dave-password-1');
    expect(bad.exitCode).toBe(3);
    expect(osctrl.users.has('dave')).toBe(false);
  });

  it('users edit --api is refused (osctrl ignores the flag)', async () => {
    const r = await run(['users', 'edit', 'bob', '--api']);
    expect(r.exitCode).toBe(8);
    expect(r.stderr).toMatch(/^error: the API-access flag of users \(--api\/--no-api\): not supported by this server/);
    expect(r.sent).toEqual([]);
  });

  it('users remove works', async () => {
    const r = await run(['users', 'remove', 'carol', '--yes']);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(osctrl.users.has('carol')).toBe(false);
  });
});

describe('nodes and tags', () => {
  it('nodes list sends dir for --order and fills what osctrl does not have', async () => {
    const r = await run(['nodes', 'list', '--sort', 'hostname', '--order', 'desc', '-o', 'json']);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.sent.at(-1)!.query).toMatchObject({ sort: 'hostname', dir: 'desc' });
    expect(r.sent.at(-1)!.query.order).toBeUndefined();
    const items = JSON.parse(r.stdout) as Array<{ hostname: string; tags: unknown[] }>;
    expect(items.map((n) => n.hostname)).toEqual(['host-0003', 'host-0002', 'host-0001']);
    expect(items[0]!.tags).toEqual([]);
    expect((await run(['nodes', 'show', 'host-0001'])).exitCode).toBe(0);
  });

  it('tags add stores type tag; tags edit keeps the type; tags apply tags node by node; unapply is refused', async () => {
    expect((await run(['tags', 'add', 'pci', '--description', 'PCI scope'])).exitCode).toBe(0);
    expect(osctrl.tags.find((t) => t.name === 'pci')!.tag_type).toBe(6);
    const e = await run(['tags', 'edit', 'web', '--description', 'front ends']);
    expect(e.exitCode, e.stderr).toBe(0);
    expect(osctrl.tags.find((t) => t.name === 'web')).toMatchObject({ description: 'front ends', tag_type: 6, custom_tag: 'tag' });
    const a = await run(['tags', 'apply', 'web', 'NODE-0001', 'NODE-0002']);
    expect(a.exitCode, a.stderr).toBe(0);
    expect(osctrl.tagged).toEqual([{ uuid: 'NODE-0001', tag: 'web', type: 6 }, { uuid: 'NODE-0002', tag: 'web', type: 6 }]);
    refused(await run(['tags', 'unapply', 'web', 'NODE-0001']), /^error: removing a tag from nodes \(untag\)/);
    expect((await run(['tags', 'list'])).exitCode).toBe(0);
  });
});

describe('settings, carves, audit, stats', () => {
  it('settings list prints the PascalCase rows as ours; set changes the global value; --env is refused', async () => {
    const l = await run(['settings', 'list', 'admin', '-o', 'json']);
    expect(l.exitCode, l.stderr).toBe(0);
    expect(JSON.parse(l.stdout)).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'inactive_hours', type: 'integer', integer: 72, environmentID: 0 })]));
    const s = await run(['settings', 'set', 'admin', 'inactive_hours', '48']);
    expect(s.exitCode, s.stderr).toBe(0);
    expect(osctrl.settings.find((x) => x.Name === 'inactive_hours')!.Integer).toBe(48);
    refused(await run(['settings', 'set', 'admin', 'inactive_hours', '24', '--env', 'prod']), /per-environment settings/);
  });

  it('carves list --status maps to target; archive is refused; delete works', async () => {
    const l = await run(['carves', 'list', '--status', 'active', '-o', 'json']);
    expect(l.exitCode, l.stderr).toBe(0);
    expect(l.sent.at(-1)!.query.target).toBe('active');
    expect(JSON.parse(l.stdout)).toHaveLength(1);
    const name = 'carve_0123456789abcdef0123456789abcdef';
    expect((await run(['carves', 'show', name, '-o', 'json'])).exitCode).toBe(0);
    refused(await run(['carves', 'archive', name]), /carve archive/);
    expect((await run(['carves', 'delete', name, '--yes'])).exitCode).toBe(0);
  });

  it('audit list --env sends env_uuid; -q is refused', async () => {
    const r = await run(['audit', 'list', '--env', 'prod', '-o', 'json']);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.sent.at(-1)!.query.env_uuid).toBe(PROD);
    expect(JSON.parse(r.stdout)).toHaveLength(1);
    refused(await run(['audit', 'list', '-q', 'tag']), /audit search/);
  });

  it('stats works', async () => {
    const r = await run(['stats', '-o', 'json']);
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(r.stdout).total_nodes).toBe(3);
  });
});

describe('refused groups and errors', () => {
  it('sinks and mfa management are refused in one line before any request', async () => {
    refused(await run(['sinks', 'list']), /^error: log sinks/);
    refused(await run(['mfa', 'totp', 'setup']), /^error: MFA/);
    refused(await run(['mfa', 'webauthn', 'list']), /^error: MFA/);
    const st = await run(['mfa', 'status', '-o', 'json']);
    expect(st.exitCode).toBe(0);
  });

  it('an answer of another shape is one clear line (exit 1, hint --debug), never a TypeError', async () => {
    // Told the server is this API, fleetctl checks osctrl's user views against our User schema.
    const r = await cli.run(['users', 'list', '--server-flavor', 'fleet']);
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toBe('error: unexpected answer from the server: users[0].api is missing\nhint: run the command again with --debug to see what the server sent\n');
    const m = await cli.run(['env', 'map', '--server-flavor', 'fleet']);
    expect(m.exitCode).toBe(1);
    expect(m.stderr).toMatch(/^error: unexpected answer from the server: /);
    expect(m.stderr).not.toMatch(/TypeError|Cannot read/);
  });

  it('errors without code get one from the status; text bodies are trimmed', async () => {
    const r = await run(['nodes', 'show', 'no-such-node']);
    expect(r.exitCode).toBe(3);
    expect(r.stderr).toMatch(/node not found \(not_found, HTTP 404\)/);
    const t = await run(['api', 'GET', '/api/v1/nope']);
    expect(t.stderr).toMatch(/404 page not found \(not_found, HTTP 404\)\n/);
  });
});
