// Every built-in setting does what its name says or is refused (issue 29): a test per setting
// that fails if the server ignores it. inactive_hours is in settings.test.ts (active nodes),
// cleanup_sessions in trust-sessions.test.ts (dead sessions purged), oneliner_expiration in
// enroll-scripts.test.ts (the one-liners of an expired enrollment); the others are here.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { startTestServer, type TestServer } from '../helpers/api-server.js';
import { agentPost, hostDetails, parseFlags, type Flags } from '../helpers/osquery-agent.js';

let ts: TestServer;
let admin: string;
let flags: Flags;
let secret: string;
let ca: string;

beforeAll(async () => {
  ts = await startTestServer({ devNodes: 20, agent: { host: '127.0.0.1', port: 0 } });
  admin = await ts.login('admin');
  ca = ts.server.agent!.certPem;
  flags = parseFlags((await ts.call('GET', '/api/v1/environments/prod/enroll/flags', { token: admin })).body.data);
  secret = (await ts.call('GET', '/api/v1/environments/prod/enroll/secret', { token: admin })).body.data;
});
afterAll(async () => ts?.close());

const patch = (service: string, name: string, body: unknown, env?: string) =>
  ts.call('PATCH', `/api/v1/settings/${service}/${name}${env ? `?env=${env}` : ''}`, { token: admin, body });
const setting = async (service: string, name: string) =>
  (
    (await ts.call('GET', `/api/v1/settings/${service}/prod`, { token: admin })).body as {
      name: string;
      info: string;
      integer: number;
      boolean: boolean;
    }[]
  ).find((s) => s.name === name)!;
const rows = () => ts.server.deps.db.selectFrom('settings').selectAll().orderBy('id').execute();
/** Polls until `check` holds: a background task's work is waited for, never timed (the test's timeout catches a hang). */
async function until(check: () => Promise<boolean>): Promise<void> {
  while (!(await check())) await new Promise((r) => setTimeout(r, 100));
}

describe('settings with no meaning on this server are refused, and say so', () => {
  it.each([
    [
      'api',
      'refresh_envs',
      { integer: 60 },
      /^api\/refresh_envs has no effect on this server: environment changes reach every request on every replica at once/,
    ],
    [
      'api',
      'refresh_settings',
      { integer: 60 },
      /^api\/refresh_settings has no effect on this server: setting changes reach every request/,
    ],
    ['tls', 'refresh_envs', { integer: 60 }, /^tls\/refresh_envs has no effect on this server: .*the agent door included/],
    ['admin', 'node_dashboard', { boolean: true }, /^admin\/node_dashboard has no effect on this server: this server has no web dashboard/],
  ])('%s/%s: 400 with one line why, nothing stored; its info says so', async (service, name, body, why) => {
    const before = await rows();
    const r = await patch(service, name, body);
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('bad_request');
    expect(r.body.error).toMatch(why);
    expect(r.body.error).not.toContain('\n');
    expect((await patch(service, name, body, 'prod')).status).toBe(400);
    expect(await rows()).toEqual(before);
    expect((await setting(service, name)).info).toMatch(/^No effect on this server: /);
  });

  it.each([
    ['admin', 'cleanup_sessions', { integer: 60 }],
    ['admin', 'cleanup_expired', { integer: 60 }],
    ['api', 'service_metrics', { boolean: true }],
  ])('%s/%s is server-wide: an environment value is refused (400), nothing stored', async (service, name, body) => {
    const before = await rows();
    const r = await patch(service, name, body, 'prod');
    expect(r.status).toBe(400);
    expect(r.body.error).toBe(`${service}/${name} is server-wide: it has no per-environment value (leave out env)`);
    expect(await rows()).toEqual(before);
  });
});

describe('api/service_metrics turns /metrics of the API on and off', () => {
  it('off as seeded: 404 saying how to turn it on; on: Prometheus text; off again: 404', async () => {
    const metrics = () => ts.call('GET', '/metrics', { token: admin });
    const off = await metrics();
    expect(off.status).toBe(404);
    expect(off.body.error).toBe(
      'metrics are off on this API: fleetctl settings set api service_metrics true (or serve them with --metrics-listen)',
    );
    expect((await patch('api', 'service_metrics', { boolean: true })).status).toBe(200);
    const on = await metrics();
    expect(on.status).toBe(200);
    expect(on.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(String(on.body)).toMatch(/^# HELP /m);
    expect((await patch('api', 'service_metrics', { boolean: false })).status).toBe(200);
    expect((await metrics()).status).toBe(404);
  });
});

describe('admin/cleanup_expired: the clean-up of expired live queries and carves runs at that interval', () => {
  it('a carve past its expiration is listed EXPIRED once the clean-up ran (every second here; 900 s as seeded)', async () => {
    const node = (await ts.call('GET', '/api/v1/nodes/prod?page_size=1', { token: admin })).body.items[0];
    const started = await ts.call('POST', '/api/v1/carves/prod', {
      token: admin,
      body: { path: '/etc/hosts', uuid_list: [node.uuid], expire_seconds: 1 },
    });
    expect(started.status, JSON.stringify(started.body)).toBe(201);
    const name = started.body.query_name as string;
    const status = async () => (await ts.call('GET', `/api/v1/carves/prod/${name}`, { token: admin })).body.query.carve_status as string;
    expect(await status()).toBe('ACTIVE');
    expect((await patch('admin', 'cleanup_expired', { integer: 1 })).status).toBe(200);
    try {
      await until(async () => (await status()) === 'EXPIRED');
      const row = await ts.server.deps.db
        .selectFrom('queries')
        .select(['expired', 'active'])
        .where('name', '=', name)
        .executeTakeFirstOrThrow();
      expect(row).toEqual({ expired: 1, active: 0 });
    } finally {
      expect((await patch('admin', 'cleanup_expired', { integer: 900 })).status).toBe(200);
    }
  });
});

describe("tls/accelerated_seconds: a newly enrolled node checks in every 5 s for that long (osquery's accelerate)", () => {
  const post = (ep: string, body: unknown) => agentPost(flags.hostname, flags.endpoint[ep], body, { ca });
  async function enroll(): Promise<string> {
    const uuid = randomUUID();
    const r = await post('enroll', {
      enroll_secret: secret,
      host_identifier: uuid,
      host_details: hostDetails(uuid, `accel-${uuid.slice(0, 8)}`),
    });
    expect(r.status).toBe(200);
    return r.body.node_key as string;
  }
  const read = async (key: string) =>
    (await post('read', { node_key: key })).body as { queries: object; accelerate?: number; node_invalid?: boolean };

  it("the first distributed read after enrolling carries accelerate = what is left of the setting's seconds", async () => {
    expect((await patch('tls', 'accelerated_seconds', { integer: 600 })).status).toBe(200);
    try {
      const r = await read(await enroll());
      expect(r.queries).toEqual({});
      expect(r.accelerate).toBeGreaterThan(590);
      expect(r.accelerate).toBeLessThanOrEqual(600);
      expect(Number.isInteger(r.accelerate)).toBe(true);
    } finally {
      expect((await patch('tls', 'accelerated_seconds', { integer: 5 })).status).toBe(200);
    }
  });

  it('0 turns it off; an environment value wins over the global one', async () => {
    expect((await patch('tls', 'accelerated_seconds', { integer: 0 })).status).toBe(200);
    const key = await enroll();
    expect((await read(key)).accelerate).toBeUndefined();
    expect((await patch('tls', 'accelerated_seconds', { integer: 300 }, 'prod')).status).toBe(200);
    expect((await read(key)).accelerate).toBeGreaterThan(290);
    expect((await patch('tls', 'accelerated_seconds', { integer: 5 })).status).toBe(200);
    expect((await patch('tls', 'accelerated_seconds', { integer: 5 }, 'prod')).status).toBe(200);
  });

  it('a node enrolled longer ago than the setting is not accelerated', async () => {
    expect((await patch('tls', 'accelerated_seconds', { integer: 1 })).status).toBe(200);
    const key = await enroll();
    // Move the server's clock past the window instead of waiting for it.
    const now = ts.server.deps.now;
    ts.server.deps.now = () => new Date(now().getTime() + 5_000);
    try {
      expect((await read(key)).accelerate).toBeUndefined();
    } finally {
      ts.server.deps.now = now;
      expect((await patch('tls', 'accelerated_seconds', { integer: 5 })).status).toBe(200);
    }
  });
});
