// `fleetctl settings list|set` end to end against a real `fleetctl server --dev` process.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cli, type ServerProcess } from '../helpers/cli.js';
import { apiCall, startAdminSession } from '../helpers/admin-cli.js';
import type { Setting } from '../../src/api/index.js';

let server: ServerProcess;
let url: string;
let cli: Cli;
let adminToken: string;

async function stored(service: string, env: string): Promise<Setting[]> {
  const r = await apiCall(url, 'GET', `/api/v1/settings/${service}/${env}`, { token: adminToken });
  expect(r.status).toBe(200);
  return r.body as Setting[];
}

async function storedOne(service: string, name: string, env = 'prod'): Promise<Setting> {
  const s = (await stored(service, env)).find((x) => x.name === name);
  if (!s) throw new Error(`no setting ${service}/${name}`);
  return s;
}

beforeAll(async () => {
  ({ server, url, cli, token: adminToken } = await startAdminSession());
});

afterAll(async () => {
  cli?.cleanup();
  await server?.stop();
});

describe('settings list', () => {
  it('prints the settings of a service as the API returns them (-o json)', async () => {
    const r = await cli.run(['settings', 'list', 'admin', '-o', 'json']);
    expect(r.exitCode).toBe(0);
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual(await stored('admin', 'prod'));
    expect((JSON.parse(r.stdout) as Setting[]).map((s) => s.name)).toEqual(
      expect.arrayContaining(['inactive_hours', 'cleanup_sessions', 'node_dashboard']),
    );
  });

  it('table: name, type, value from the typed field, scope, info', async () => {
    const r = await cli.run(['settings', 'list', 'api', 'staging']);
    expect(r.exitCode).toBe(0);
    const rows = r.stdout
      .trimEnd()
      .split('\n')
      .map((l) => l.split('\t'));
    expect(rows[0]).toEqual(['NAME', 'TYPE', 'VALUE', 'SCOPE', 'INFO']);
    const byName = Object.fromEntries(rows.slice(1).map((c) => [c[0], c]));
    expect(byName.service_metrics.slice(1, 4)).toEqual(['boolean', 'false', 'global']);
    expect(byName.refresh_envs.slice(1, 4)).toEqual(['integer', '300', 'global']);
  });

  it('takes the environment from --env when not given', async () => {
    const r = await cli.run(['--env', 'dev', 'settings', 'list', 'tls', '--json']);
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual(await stored('tls', 'dev'));
  });

  it('rejects an unknown service (exit 2) and an unknown environment (exit 3)', async () => {
    const a = await cli.run(['settings', 'list', 'web']);
    expect(a.exitCode).toBe(2);
    expect(a.stderr).toMatch(/'web' is invalid for argument 'service'\. Allowed choices are tls, admin, api\./);
    const b = await cli.run(['settings', 'list', 'admin', 'nope']);
    expect(b.exitCode).toBe(3);
  });

  it('exits 5 for a user who is not env admin', async () => {
    const c = new Cli();
    await c.login(url, 'analyst');
    const r = await c.run(['settings', 'list', 'admin']);
    expect(r.exitCode).toBe(5);
    expect(r.stdout).toBe('');
    c.cleanup();
  });
});

describe('settings set', () => {
  it('converts an integer value and updates the global row', async () => {
    const r = await cli.run(['settings', 'set', 'admin', 'inactive_hours', '48', '-o', 'json']);
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      name: 'inactive_hours',
      service: 'admin',
      type: 'integer',
      integer: 48,
      environmentID: 0,
    });
    expect(await storedOne('admin', 'inactive_hours')).toMatchObject({ integer: 48, environmentID: 0 });
    expect(await storedOne('admin', 'inactive_hours', 'staging')).toMatchObject({ integer: 48 });
  });

  it.each([
    ['yes', true],
    ['off', false],
    ['TRUE', true],
    ['0', false],
  ])('converts boolean %s', async (value, expected) => {
    const r = await cli.run(['settings', 'set', 'api', 'service_metrics', value]);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(
      new RegExp(`^service\\tapi\\nname\\tservice_metrics\\ntype\\tboolean\\nvalue\\t${expected}\\nscope\\tglobal\\n`),
    );
    expect((await storedOne('api', 'service_metrics')).boolean).toBe(expected);
  });

  it('a bad value exits 2 with a clear message, and nothing changes', async () => {
    const before = await storedOne('admin', 'inactive_hours');
    const r = await cli.run(['settings', 'set', 'admin', 'inactive_hours', 'abc']);
    expect(r.exitCode).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe('error: inactive_hours is an integer setting; "abc" is not an integer\n');
    const b = await cli.run(['settings', 'set', 'admin', 'node_dashboard', 'maybe']);
    expect(b.exitCode).toBe(2);
    expect(b.stderr).toMatch(/^error: node_dashboard is a boolean setting; "maybe" is not a boolean/);
    const c = await cli.run(['settings', 'set', 'admin', 'inactive_hours', '4.5']);
    expect(c.exitCode).toBe(2);
    expect(await storedOne('admin', 'inactive_hours')).toEqual(before);
  });

  it('a value the server refuses (inactive_hours 0) exits 1 and changes nothing', async () => {
    const before = await storedOne('admin', 'inactive_hours');
    const r = await cli.run(['settings', 'set', 'admin', 'inactive_hours', '0']);
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toMatch(/\(bad_request, HTTP 400\)/);
    expect(await storedOne('admin', 'inactive_hours')).toEqual(before);
  });

  it('exits 3 for an unknown setting', async () => {
    const r = await cli.run(['settings', 'set', 'admin', 'no_such_setting', '1']);
    expect(r.exitCode).toBe(3);
    expect(r.stderr).toMatch(/^error: setting "no_such_setting" not found in service admin\nhint: run `fleetctl settings list admin`/);
  });

  it('a setting with no meaning on this server is refused in one line (exit 1), and a server-wide one has no --env value (issue 29)', async () => {
    const before = await storedOne('api', 'refresh_envs');
    const r = await cli.run(['settings', 'set', 'api', 'refresh_envs', '60']);
    expect(r.exitCode).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(
      /^error: api\/refresh_envs has no effect on this server: environment changes reach every request on every replica at once \(change counters\), nothing is re-read on a timer \(bad_request, HTTP 400\)\n/,
    );
    expect(await storedOne('api', 'refresh_envs')).toEqual(before);
    const wide = await cli.run(['settings', 'set', 'admin', 'cleanup_sessions', '60', '--env', 'prod']);
    expect(wide.exitCode).toBe(1);
    expect(wide.stderr).toMatch(/^error: admin\/cleanup_sessions is server-wide: it has no per-environment value/);
  });

  it("with --env changes that environment's value only", async () => {
    const globalBefore = await storedOne('tls', 'accelerated_seconds', 'dev');
    const r = await cli.run(['settings', 'set', 'tls', 'accelerated_seconds', '11', '--env', 'prod', '--json']);
    expect(r.exitCode).toBe(0);
    const prod = await storedOne('tls', 'accelerated_seconds', 'prod');
    expect(prod.integer).toBe(11);
    expect(prod.environmentID).not.toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ integer: 11, environmentID: prod.environmentID });
    expect(await storedOne('tls', 'accelerated_seconds', 'dev')).toEqual(globalBefore);
    const list = await cli.run(['settings', 'list', 'tls', 'prod']);
    expect(list.stdout).toMatch(/\naccelerated_seconds\tinteger\t11\tenv\t/);
  });

  it('exits 5 for a user who is not super-admin, and nothing changes', async () => {
    const c = new Cli();
    await c.login(url, 'prod-admin');
    const before = await storedOne('admin', 'cleanup_sessions');
    const r = await c.run(['settings', 'set', 'admin', 'cleanup_sessions', '600']);
    expect(r.exitCode).toBe(5);
    expect(await storedOne('admin', 'cleanup_sessions')).toEqual(before);
    c.cleanup();
  });
});

describe('help', () => {
  it.each(['list', 'set'])('settings %s --help has examples', async (v) => {
    const r = await cli.run(['settings', v, '--help']);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/Examples:\n {2}\$ fleetctl settings /);
  });
});
