// `fleetctl sinks ...` end to end against a real `fleetctl server --dev` process (demo sinks on
// global, prod and staging; dev starts with none); state is read back with raw API calls.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cli, type ServerProcess } from '../helpers/cli.js';
import { apiCall, startAdminSession } from '../helpers/admin-cli.js';
import type { EnvironmentMap, LogSink } from '../../src/api/index.js';

let server: ServerProcess;
let cli: Cli;
let token: string;
let envIds: Record<string, number>;

async function stored(env: string): Promise<LogSink[]> {
  const id = env === 'global' ? 0 : envIds[env];
  const r = await apiCall(server.url, 'GET', `/api/v1/log-sinks?environment_id=${id}`, { token });
  expect(r.status).toBe(200);
  // What is stored; the live delivery state (a lease taken meanwhile) is not.
  return (r.body as LogSink[]).map(({ state: _live, ...stored }) => stored);
}

const decoded = (s: LogSink) => JSON.parse(Buffer.from(s.config).toString('utf8'));
const shape = (s: LogSink) => ({ name: s.name, type: s.type, source: s.source, enabled: s.enabled, order: s.order, config: decoded(s) });

/** Empties an environment's sinks through the API (tests must not depend on each other's leftovers). */
async function clear(env: string): Promise<void> {
  for (const s of await stored(env)) expect((await apiCall(server.url, 'DELETE', `/api/v1/log-sinks/${s.id}`, { token })).status).toBe(200);
}

beforeAll(async () => {
  ({ server, cli, token } = await startAdminSession());
  const map = (await apiCall(server.url, 'GET', '/api/v1/environments/map/name', { token })).body as EnvironmentMap;
  envIds = Object.fromEntries(Object.values(map).map((e) => [e.name, e.id]));
});

afterAll(async () => {
  cli?.cleanup();
  await server?.stop();
});

describe('sinks show', () => {
  it('shows one sink by name or id, config decoded, in the env or global scope', async () => {
    const list = JSON.parse((await cli.run(['sinks', 'list', 'prod', '-o', 'json'])).stdout) as { id: number; name: string }[];
    const splunk = list.find((x) => x.name === 'splunk-hec')!;
    const byName = await cli.run(['sinks', 'show', 'splunk-hec', 'prod', '-o', 'json']);
    expect(byName.exitCode).toBe(0);
    expect(JSON.parse(byName.stdout)).toEqual(splunk);
    expect(JSON.parse(byName.stdout).config).toMatchObject({ index: 'osquery' });
    const byId = await cli.run(['sinks', 'show', String(splunk.id), 'prod', '-o', 'json']);
    expect(JSON.parse(byId.stdout)).toEqual(splunk);
    const global = await cli.run(['sinks', 'show', 'local-file', 'global', '-o', 'json']);
    expect(JSON.parse(global.stdout)).toMatchObject({ name: 'local-file', type: 'file' });
  });

  it('a sink not in that scope exits 3 with a hint', async () => {
    const r = await cli.run(['sinks', 'show', 'local-file', 'prod']);
    expect(r.exitCode).toBe(3);
    expect(r.stderr).toMatch(/no log sink "local-file" in .*prod/);
    expect(r.stderr).toMatch(/fleetctl sinks list prod/);
  });
});

describe('sinks list', () => {
  it('shows the sinks of an env with config decoded from its bytes', async () => {
    const r = await cli.run(['sinks', 'list', 'prod', '-o', 'json']);
    expect(r.exitCode).toBe(0);
    expect(r.stderr).toBe('');
    const list = JSON.parse(r.stdout);
    const api = await stored('prod');
    expect(list.length).toBe(api.length);
    expect(list.length).toBeGreaterThan(0);
    list.forEach((s: LogSink & { config: unknown }, i: number) => {
      expect(s.id).toBe(api[i].id);
      expect(s.config).toEqual(decoded(api[i]));
      expect(typeof s.config).toBe('object');
    });
  });

  it('takes a UUID, an id, `global`, or the profile env; piped it is a TSV table with JSON config', async () => {
    const prod = await stored('prod');
    const byUuid = await cli.run(['sinks', 'list', '5C2FD3C7-8D7E-4B4F-9C55-6A1E1F5B0A01', '-o', 'json', '--jq', '.[].id']);
    expect(byUuid.stdout).toBe(prod.map((s) => `${s.id}\n`).join(''));
    const byId = await cli.run(['sinks', 'list', String(envIds.prod), '-o', 'json', '--jq', '.[].id']);
    expect(byId.stdout).toBe(byUuid.stdout);
    const profile = await cli.run(['sinks', 'list', '-o', 'json', '--jq', '.[].id']);
    expect(profile.stdout).toBe(byUuid.stdout); // logged in to prod

    const global = await cli.run(['sinks', 'list', 'global']);
    expect(global.exitCode).toBe(0);
    const lines = global.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe('ID\tNAME\tTYPE\tSOURCE\tENABLED\tORDER\tBACKLOG\tOLDEST\tLAST SUCCESS\tLAST ERROR\tCONFIG');
    const g = await stored('global');
    expect(lines.slice(1).map((l) => l.split('\t')[1])).toEqual(g.map((s) => s.name));
    expect(JSON.parse(lines[1].split('\t')[10])).toEqual(decoded(g[0]));
  });

  it('exits 3 for an unknown environment, naming the known ones', async () => {
    const r = await cli.run(['sinks', 'list', 'nosuch']);
    expect(r.exitCode).toBe(3);
    expect(r.stderr).toBe('error: no environment "nosuch"\nhint: known: dev, prod, staging, or global\n');
  });

  it('exits 5 for a user who is not a super-admin', async () => {
    const pa = new Cli();
    await pa.login(server.url, 'prod-admin');
    const r = await pa.run(['sinks', 'list', 'prod']);
    expect(r.exitCode).toBe(5);
    pa.cleanup();
  });
});

describe('sinks clone', () => {
  it('copies prod to dev; a second clone without --overwrite exits 6 and changes nothing', async () => {
    await clear('dev');
    const prod = await stored('prod');
    const r = await cli.run(['sinks', 'clone', '--from', 'prod', '--to', 'dev']);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(`Cloned ${prod.length} log sinks from prod to dev\n`);
    const dev = await stored('dev');
    expect(dev.map(shape)).toEqual(prod.map(shape));
    for (const s of dev) {
      expect(s.environment_id).toBe(envIds.dev);
      expect(s.bytes_sent).toBe(0);
      expect(s.exports_count).toBe(0);
    }

    const again = await cli.run(['sinks', 'clone', '--from', 'prod', '--to', 'dev']);
    expect(again.exitCode).toBe(6);
    expect(again.stdout).toBe('');
    expect(again.stderr).toBe('error: dev already has log sinks; nothing changed\nhint: pass --overwrite to replace them\n');
    expect(await stored('dev')).toEqual(dev);
  });

  it('--overwrite without --yes and without a terminal exits 2 and changes nothing', async () => {
    const before = await stored('dev');
    expect(before.length).toBeGreaterThan(0);
    const r = await cli.run(['sinks', 'clone', '--from', 'global', '--to', 'dev', '--overwrite']);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toBe(
      `error: refusing to proceed without confirmation: Replace the ${before.length} log sinks of dev with those of global; pass --yes\n`,
    );
    expect(await stored('dev')).toEqual(before);
  });

  it('--overwrite --yes replaces the target sinks, and -o json prints the new ones', async () => {
    const r = await cli.run(['sinks', 'clone', '--from', 'global', '--to', 'dev', '--overwrite', '--yes', '-o', 'json']);
    expect(r.exitCode).toBe(0);
    const out = JSON.parse(r.stdout);
    const dev = await stored('dev');
    expect(out.map((s: { id: number }) => s.id)).toEqual(dev.map((s) => s.id));
    expect(dev.map(shape)).toEqual((await stored('global')).map(shape));
  });

  it('refuses the same source and target (exit 2) and unknown envs (exit 3)', async () => {
    expect((await cli.run(['sinks', 'clone', '--from', 'prod', '--to', 'prod'])).exitCode).toBe(2);
    expect((await cli.run(['sinks', 'clone', '--from', 'nosuch', '--to', 'dev'])).exitCode).toBe(3);
    expect((await cli.run(['sinks', 'clone', '--from', 'prod'])).exitCode).toBe(2); // --to is required
  });
});

describe('sinks add / remove', () => {
  it('adds a sink with a JSON config (inline or stdin) and removes it with --yes', async () => {
    const add = await cli.run([
      'sinks',
      'add',
      'staging',
      '--name',
      'archive',
      '--type',
      'file',
      '--source',
      'result',
      '--config',
      '{"path":"a.log"}',
      '-o',
      'json',
    ]);
    expect(add.exitCode).toBe(0);
    const sink = JSON.parse(add.stdout);
    expect(sink).toMatchObject({
      name: 'archive',
      type: 'file',
      source: 'result',
      enabled: true,
      environment_id: envIds.staging,
      config: { path: 'a.log' },
    });
    const s = (await stored('staging')).find((x) => x.id === sink.id)!;
    expect(decoded(s)).toEqual({ path: 'a.log' });

    const piped = await cli.run(
      ['sinks', 'add', 'global', '--name', 'stdin-cfg', '--type', 'http', '--source', 'status', '--config', '-', '--disabled'],
      { input: '{"url": "https://logs.example/in", "timeout_seconds": 5}' },
    );
    expect(piped.exitCode).toBe(0);
    expect(piped.stderr).toMatch(/^Added log sink \d+ \(stdin-cfg\) to global\n$/);
    const g = (await stored('global')).find((x) => x.name === 'stdin-cfg')!;
    expect(g.enabled).toBe(false);
    expect(decoded(g)).toEqual({ url: 'https://logs.example/in', timeout_seconds: 5 });

    const keep = await cli.run(['sinks', 'remove', String(sink.id)]);
    expect(keep.exitCode).toBe(2);
    expect((await stored('staging')).some((x) => x.id === sink.id)).toBe(true);
    const rm = await cli.run(['sinks', 'remove', String(sink.id), '--yes']);
    expect(rm.exitCode).toBe(0);
    expect((await stored('staging')).some((x) => x.id === sink.id)).toBe(false);
    expect((await cli.run(['sinks', 'remove', String(sink.id), '--yes'])).exitCode).toBe(3);
  });

  it('rejects a bad config or type before sending anything', async () => {
    const before = await stored('staging');
    const bad = await cli.run(['sinks', 'add', 'staging', '--name', 'x', '--type', 'file', '--source', 'result', '--config', '{nope']);
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toMatch(/--config: not valid JSON/);
    const type = await cli.run(['sinks', 'add', 'staging', '--name', 'x', '--type', 'ftp', '--source', 'result']);
    expect(type.exitCode).toBe(2);
    expect(await stored('staging')).toEqual(before);
  });

  it('has examples in --help for every verb', async () => {
    for (const v of ['list', 'clone', 'add', 'remove'])
      expect((await cli.run(['sinks', v, '--help'])).stdout).toMatch(/Examples:\n {2}\$ fleetctl sinks /);
  });
});
