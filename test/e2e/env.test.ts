// `fleetctl env list|show|intervals|map` end to end against a real `fleetctl server --dev`.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cli, type ServerProcess } from '../helpers/cli.js';
import { apiCall, startAdminSession } from '../helpers/admin-cli.js';
import type { Environment } from '../../src/api/index.js';

let server: ServerProcess;
let url: string;
let cli: Cli;
let adminToken: string;

async function storedEnv(name: string): Promise<Environment> {
  const r = await apiCall(url, 'GET', `/api/v1/environments/${name}`, { token: adminToken });
  expect(r.status).toBe(200);
  return r.body as Environment;
}

beforeAll(async () => {
  ({ server, url, cli, token: adminToken } = await startAdminSession());
});

afterAll(async () => {
  cli?.cleanup();
  await server?.stop();
});

describe('env list', () => {
  it('lists every environment in full, by name, with the secret blanked', async () => {
    const r = await cli.run(['env', 'list', '-o', 'json']);
    expect(r.exitCode).toBe(0);
    expect(r.stderr).toBe('');
    const envs = JSON.parse(r.stdout) as Environment[];
    expect(envs.map((e) => e.name)).toEqual(['dev', 'prod', 'staging']);
    const prod = await storedEnv('prod');
    expect(prod.secret).not.toBe('');
    expect(envs[1]).toEqual({ ...prod, secret: '' });
  });

  it('--show-secret includes it', async () => {
    const r = await cli.run(['env', 'list', '--show-secret', '--json']);
    const envs = JSON.parse(r.stdout) as Environment[];
    expect(envs.find((e) => e.name === 'prod')!.secret).toBe((await storedEnv('prod')).secret);
  });

  it('prints name, uuid, hostname, intervals and enroll expiry as TSV when piped', async () => {
    const r = await cli.run(['env', 'list']);
    expect(r.exitCode).toBe(0);
    const lines = r.stdout
      .trimEnd()
      .split('\n')
      .map((l) => l.split('\t'));
    expect(lines[0]).toEqual(['NAME', 'UUID', 'HOSTNAME', 'CONFIG', 'LOG', 'QUERY', 'ENROLLMENT', 'ENROLL EXPIRES']);
    const prod = await storedEnv('prod');
    expect(lines.find((l) => l[0] === 'prod')).toEqual([
      'prod',
      prod.uuid,
      prod.hostname,
      String(prod.config_interval),
      String(prod.log_interval),
      String(prod.query_interval),
      'open',
      'never',
    ]);
    expect(prod.enroll_expire).toBe('0001-01-01T00:00:00Z');
  });

  it('shows only the environments a user can access', async () => {
    const c = new Cli();
    await c.login(url, 'dev-user', 'dev');
    const r = await c.run(['env', 'list', '--json']);
    expect(r.exitCode).toBe(0);
    const envs = JSON.parse(r.stdout) as Environment[];
    expect(envs.map((e) => e.name)).toEqual(['dev']);
    expect(envs[0].certificate).toBe(''); // not an env admin
    c.cleanup();
  });
});

describe('env show', () => {
  it("shows an environment by name or UUID, the profile's by default", async () => {
    const prod = await storedEnv('prod');
    const byName = await cli.run(['env', 'show', 'prod', '--json']);
    expect(byName.exitCode).toBe(0);
    expect(JSON.parse(byName.stdout)).toEqual({ ...prod, secret: '' });
    const byUuid = await cli.run(['env', 'show', prod.uuid, '--json']);
    expect(JSON.parse(byUuid.stdout).name).toBe('prod');
    const byProfile = await cli.run(['env', 'show', '--json']);
    expect(JSON.parse(byProfile.stdout).name).toBe('prod');
    const byFlag = await cli.run(['--env', 'staging', 'env', 'show', '--json']);
    expect(JSON.parse(byFlag.stdout).name).toBe('staging');
  });

  it('the table view is key/value lines of the main fields', async () => {
    const r = await cli.run(['env', 'show', 'staging']);
    expect(r.exitCode).toBe(0);
    const kv = Object.fromEntries(
      r.stdout
        .trimEnd()
        .split('\n')
        .map((l) => l.split('\t')),
    );
    const staging = await storedEnv('staging');
    // Issue 27: new environments take enrolls until someone closes them.
    expect(kv).toMatchObject({
      name: 'staging',
      uuid: staging.uuid,
      config_interval: String(staging.config_interval),
      enroll_expire: 'never',
      enrollment: 'open until closed',
    });
    expect(kv.secret).toBeUndefined();
  });

  it('exits 3 for an unknown environment', async () => {
    const r = await cli.run(['env', 'show', 'nope']);
    expect(r.exitCode).toBe(3);
    expect(r.stderr).toMatch(/^error: environment "nope" not found \(not_found, HTTP 404\)/);
  });
});

describe('env intervals', () => {
  it('changes the given intervals, keeps the others, prints them', async () => {
    const before = await storedEnv('staging');
    const r = await cli.run(['env', 'intervals', 'staging', '--config', '900', '--query', '45', '-o', 'json']);
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      name: 'staging',
      uuid: before.uuid,
      config_interval: 900,
      log_interval: before.log_interval,
      query_interval: 45,
    });
    const after = await storedEnv('staging');
    expect(after).toMatchObject({ config_interval: 900, log_interval: before.log_interval, query_interval: 45 });
  });

  it('uses --env when the argument is left out; table output is key/value lines', async () => {
    const r = await cli.run(['--env', 'dev', 'env', 'intervals', '--log', '123']);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/^name\tdev\n/);
    expect(r.stdout).toMatch(/\nlog_interval\t123\n/);
    expect((await storedEnv('dev')).log_interval).toBe(123);
  });

  it('exits 2 without any interval flag, or with a value that is not an integer >= 1', async () => {
    const before = await storedEnv('prod');
    const none = await cli.run(['env', 'intervals', 'prod']);
    expect(none.exitCode).toBe(2);
    expect(none.stderr).toMatch(/nothing to change: pass at least one of --config, --log, --query/);
    const zero = await cli.run(['env', 'intervals', 'prod', '--config', '0']);
    expect(zero.exitCode).toBe(2);
    expect(zero.stderr).toMatch(/expected an integer >= 1/);
    const text = await cli.run(['env', 'intervals', 'prod', '--log', 'ten']);
    expect(text.exitCode).toBe(2);
    expect(await storedEnv('prod')).toEqual(before);
  });

  it('exits 5 for a user who is not env admin, and nothing changes', async () => {
    const c = new Cli();
    await c.login(url, 'analyst');
    const before = await storedEnv('prod');
    const r = await c.run(['env', 'intervals', 'prod', '--config', '5']);
    expect(r.exitCode).toBe(5);
    expect(await storedEnv('prod')).toEqual(before);
    c.cleanup();
  });
});

describe('env map', () => {
  it('still prints the map keyed by the chosen attribute', async () => {
    const r = await cli.run(['env', 'map', 'uuid', '--json']);
    expect(r.exitCode).toBe(0);
    const prod = await storedEnv('prod');
    expect(JSON.parse(r.stdout)[prod.uuid]).toEqual({ id: prod.id, name: 'prod', uuid: prod.uuid });
  });
});

describe('help', () => {
  it.each(['list', 'show', 'intervals', 'map'])('env %s --help has examples', async (v) => {
    const r = await cli.run(['env', v, '--help']);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/Examples:\n {2}\$ fleetctl /);
  });
});
