// Issue 27: environments created, edited and deleted through the API (POST /api/v1/environments,
// PATCH and DELETE /api/v1/environments/{env}), against the dev fleet with its agent door open, so
// an environment's agents are real protocol clients: enrolled, then told they are unknown when
// their environment is deleted.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { startTestServer, type TestServer } from '../helpers/api-server.js';
import { agentPost, hostDetails, parseFlags } from '../helpers/osquery-agent.js';
import { ENVIRONMENT_FIELDS, auditRows, expectFields } from './env-helpers.js';
import { NEVER } from '../../src/api/index.js';

let t: TestServer;
let admin: string;
let ca: string;

beforeAll(async () => {
  t = await startTestServer({ devNodes: 30, agent: { host: '127.0.0.1', port: 0 } });
  admin = await t.login('admin');
  ca = t.server.agent!.certPem;
}, 180_000);
afterAll(async () => t?.close());

const create = (body: unknown, token = admin) => t.call('POST', '/api/v1/environments', { token, body });
const edit = (env: string, body: unknown, token = admin) => t.call('PATCH', `/api/v1/environments/${env}`, { token, body });
const remove = (env: string, token = admin) => t.call('DELETE', `/api/v1/environments/${env}`, { token });
const near = (iso: string, ms: number) => expect(Math.abs(Date.parse(iso) - ms)).toBeLessThan(60_000);

/** Enrolls a protocol client in `env` with the flags and secret the API hands out. */
async function enroll(env: string, uuid = randomUUID()) {
  const flags = parseFlags((await t.call('GET', `/api/v1/environments/${env}/enroll/flags`, { token: admin })).body.data);
  const secret = (await t.call('GET', `/api/v1/environments/${env}/enroll/secret`, { token: admin })).body.data;
  const r = await agentPost(
    flags.hostname,
    flags.endpoint.enroll,
    { enroll_secret: secret, host_identifier: uuid, host_details: hostDetails(uuid, `host-${uuid.slice(0, 8)}`) },
    { ca },
  );
  return { flags, uuid, reply: r };
}

describe('POST /api/v1/environments', () => {
  it('creates an environment agents can enroll in at once: the server agent host and anchor, enrollment open until closed', async () => {
    const r = await create({ name: 'lab' });
    expect(r.status).toBe(200);
    expectFields(r.body, ENVIRONMENT_FIELDS);
    expect(r.body).toMatchObject({
      name: 'lab',
      hostname: t.server.agent!.address,
      hostname_pinned: false,
      certificate_pinned: false,
      enroll_expire: NEVER,
      accept_enrolls: true,
      config_interval: 300,
      log_interval: 600,
      query_interval: 60,
      detail_refresh: 0,
    });
    expect(r.body.certificate).toBe(t.server.agent!.tls.anchorPem);
    expect(r.body.secret).toMatch(/^[0-9a-f]{48}$/);
    const a = await enroll('lab');
    expect(a.reply).toMatchObject({ status: 200, body: { node_invalid: false } });
    expect((await auditRows(t, 7, 1))[0].line).toBe(
      `environment lab created: agent host ${t.server.agent!.address}, enrollment open until closed`,
    );
  });

  it('takes an agent host, intervals, detail refresh and an enrollment window', async () => {
    const r = await create({
      name: 'eu-prod',
      hostname: 'fleet-eu.example.com:8443',
      enroll_window: 7 * 86400,
      config_interval: 120,
      log_interval: 30,
      query_interval: 15,
      detail_refresh: 1800,
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      hostname: 'fleet-eu.example.com:8443',
      hostname_pinned: true,
      config_interval: 120,
      log_interval: 30,
      query_interval: 15,
      detail_refresh: 1800,
    });
    near(r.body.enroll_expire, Date.now() + 7 * 86400_000);
    expect(r.body.flags).toContain('--tls_hostname=fleet-eu.example.com:8443');
    expect(r.body.flags).toContain('--distributed_interval=15');
  });

  it('refuses a taken name (409), a bad or reserved name, host, interval or window (400), and changes nothing', async () => {
    const before = Object.keys((await t.call('GET', '/api/v1/environments/map/name', { token: admin })).body).sort();
    expect((await create({ name: 'prod' })).status).toBe(409);
    for (const body of [
      { name: '' },
      { name: '-x' },
      { name: 'a/b' },
      { name: 'x'.repeat(65) },
      { name: 'map' },
      { name: 'Intervals' },
      { name: 'ok1', hostname: 'https://fleet.example.com' },
      { name: 'ok2', hostname: '0.0.0.0:8443' },
      { name: 'ok3', hostname: 'a b' },
      { name: 'ok4', config_interval: 0 },
      { name: 'ok5', enroll_window: -1 },
      { name: 'ok6', detail_refresh: 5 },
      { name: 'ok7', icon: 'x\u001b[31m' },
    ]) {
      const r = await create(body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.code).toBe('bad_request');
    }
    expect((await create({ hostname: 'x' })).status).toBe(400);
    expect(Object.keys((await t.call('GET', '/api/v1/environments/map/name', { token: admin })).body).sort()).toEqual(before);
  });

  it('is for super-admins: an env admin is refused (403) and the denial audited', async () => {
    const prodAdmin = await t.login('prod-admin');
    const r = await create({ name: 'mine' }, prodAdmin);
    expect(r.status).toBe(403);
    expect((await edit('prod', { query_interval: 30 }, prodAdmin)).status).toBe(403);
    expect((await remove('prod', prodAdmin)).status).toBe(403);
    const denied = await t.server.deps.db
      .selectFrom('audit_logs')
      .select('line')
      .where('username', '=', 'prod-admin')
      .where('line', 'like', 'denied POST /api/v1/environments%')
      .execute();
    expect(denied.length).toBeGreaterThan(0);
  });
});

describe('PATCH /api/v1/environments/{env}', () => {
  it('renames, sets the agent host and intervals; the flags follow at once; the old name is gone', async () => {
    await create({ name: 'ren-a' });
    const r = await edit('ren-a', { name: 'ren-b', hostname: 'fleet.example.com', query_interval: 20, accept_enrolls: false });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      name: 'ren-b',
      hostname: 'fleet.example.com',
      hostname_pinned: true,
      query_interval: 20,
      accept_enrolls: false,
    });
    const flags = (await t.call('GET', '/api/v1/environments/ren-b/enroll/flags', { token: admin })).body.data;
    expect(flags).toContain('--tls_hostname=fleet.example.com\n');
    expect(flags).toContain('--distributed_interval=20');
    expect((await t.call('GET', '/api/v1/environments/ren-a', { token: admin })).status).toBe(404);
    expect((await auditRows(t, 7, 1))[0].line).toBe(
      'environment ren-a edited: name ren-a -> ren-b, agent host fleet.example.com, query_interval=20, accept_enrolls=false',
    );
  });

  it('an empty hostname follows the server again; {} changes nothing; a taken name is 409', async () => {
    const r = await edit('ren-b', { hostname: '' });
    expect(r.body).toMatchObject({ hostname: t.server.agent!.address, hostname_pinned: false });
    const same = await edit('ren-b', {});
    expect(same.status).toBe(200);
    expect(same.body.updated_at).toBe(r.body.updated_at);
    expect((await edit('ren-b', { name: 'prod' })).status).toBe(409);
    expect((await edit('ren-b', { name: 'map' })).status).toBe(400);
    expect((await edit('no-such-env', { icon: 'x' })).status).toBe(404);
  });

  it('an environment closed to enrolls, or whose window ended, refuses them: audited and counted in the metrics by reason', async () => {
    await create({ name: 'closed' });
    expect((await edit('closed', { accept_enrolls: false })).status).toBe(200);
    expect((await enroll('closed')).reply.body).toEqual({ node_invalid: true });
    expect((await edit('closed', { accept_enrolls: true })).status).toBe(200);
    expect((await enroll('closed')).reply.body.node_invalid).toBe(false);
    expect((await t.call('POST', '/api/v1/environments/closed/enroll/expire', { token: admin })).status).toBe(200);
    expect((await enroll('closed')).reply.body).toEqual({ node_invalid: true });
    // /metrics of the API is off until api/service_metrics is on (issue 29).
    expect((await t.call('PATCH', '/api/v1/settings/api/service_metrics', { token: admin, body: { boolean: true } })).status).toBe(200);
    const metrics = (await t.call('GET', '/metrics', { token: admin })).body as string;
    expect(metrics).toContain('fleetctl_agent_enroll_refused_total{environment="closed",reason="closed"} 1');
    expect(metrics).toContain('fleetctl_agent_enroll_refused_total{environment="closed",reason="expired"} 1');
    const audited = await t.server.deps.db
      .selectFrom('audit_logs')
      .select('line')
      .where('line', 'like', 'enroll refused in environment closed:%')
      .execute();
    expect(audited.map((a) => a.line)).toEqual(expect.arrayContaining([expect.stringContaining('environment does not accept enrolls')]));
  });
});

describe('DELETE /api/v1/environments/{env}', () => {
  it('deletes the environment with its nodes, tags, queries and their results; its agents become unknown; the audit keeps the history', async () => {
    await create({ name: 'doomed' });
    const a = await enroll('doomed');
    const key = a.reply.body.node_key as string;
    const db = t.server.deps.db;
    const env = await db.selectFrom('environments').select(['id', 'uuid']).where('name', '=', 'doomed').executeTakeFirstOrThrow();
    expect((await t.call('POST', '/api/v1/tags/doomed/add', { token: admin, body: { name: 'web' } })).status).toBe(200);
    const q = await t.call('POST', '/api/v1/queries/doomed', { token: admin, body: { query: 'SELECT 1' } });
    expect(q.status).toBe(200);
    const w = await agentPost(
      a.flags.hostname,
      a.flags.endpoint.write,
      { node_key: key, queries: { [q.body.query_name]: [{ one: '1' }] }, statuses: {} },
      { ca },
    );
    expect(w.status).toBe(200);
    expect(await db.selectFrom('query_results').select('id').where('node_uuid', '=', a.uuid).execute()).toHaveLength(1);
    const r = await remove('doomed');
    expect(r).toMatchObject({ status: 200, body: { message: 'environment doomed deleted with 1 node' } });
    expect((await t.call('GET', '/api/v1/environments/doomed', { token: admin })).status).toBe(404);
    for (const table of ['nodes', 'tags', 'queries'] as const) {
      expect((await db.selectFrom(table).select('id').where('environment_id', '=', env.id).execute()).length, table).toBe(0);
    }
    expect(await db.selectFrom('query_results').select('id').where('node_uuid', '=', a.uuid).execute()).toEqual([]);
    // Its agent's next request: unknown (osquery re-enrolls, and its enroll is refused: no such environment).
    const cfg = await agentPost(a.flags.hostname, a.flags.endpoint.config, { node_key: key }, { ca });
    expect(cfg.status).toBe(404);
    const audit = await db.selectFrom('audit_logs').select('line').where('env_uuid', '=', env.uuid).orderBy('id').execute();
    expect(audit.map((x) => x.line)).toContain('environment doomed deleted with 1 node');
    expect(audit.map((x) => x.line)).toContain(
      'environment doomed created: agent host ' + t.server.agent!.address + ', enrollment open until closed',
    );
  });
});
