// GET /api/v1/settings/{service}/{env} (4.14) and PATCH /api/v1/settings/{service}/{name} (4.15).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/api-server.js';
import { RFC3339, SETTING_FIELDS, auditRows, expectFields } from './env-helpers.js';

let ts: TestServer;
const tok: Record<string, string> = {};
let prodId = 0;

beforeAll(async () => {
  ts = await startTestServer();
  tok.admin = await ts.login('admin');
  tok.prodAdmin = await ts.login('prod-admin');
  tok.analyst = await ts.login('analyst');
  tok.devUser = await ts.login('dev-user', 'dev');
  prodId = (await ts.call('GET', '/api/v1/environments/prod', { token: tok.admin })).body.id;
});
afterAll(async () => ts?.close());

const read = async (service: string, env = 'prod', token = tok.prodAdmin) => {
  const r = await ts.call('GET', `/api/v1/settings/${service}/${env}`, { token });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body as Record<string, any>[];
};
const find = async (service: string, name: string, env = 'prod') => (await read(service, env, tok.admin)).find((s) => s.name === name)!;
const patch = (service: string, name: string, body: unknown, o: { env?: string; token?: string } = {}) =>
  ts.call('PATCH', `/api/v1/settings/${service}/${name}${o.env === undefined ? '' : `?env=${encodeURIComponent(o.env)}`}`, {
    token: o.token ?? tok.admin,
    body,
  });
const allRows = () => ts.server.deps.db.selectFrom('settings').selectAll().orderBy('id').execute();
const activeProd = async () =>
  (await ts.call('GET', '/api/v1/nodes/prod?status=active&page_size=1', { token: tok.admin })).body.total_items as number;

describe('GET /api/v1/settings/{service}/{env}', () => {
  it.each([
    // retention_logs_*: issue 30 (docs/api.md "Logs and query reports").
    [
      'admin',
      [
        'cleanup_expired',
        'cleanup_sessions',
        'inactive_hours',
        'node_dashboard',
        'retention_audit_days',
        'retention_carves_days',
        'retention_logs_days',
        'retention_logs_mb',
        'retention_query_results_days',
      ],
    ],
    ['api', ['refresh_envs', 'refresh_settings', 'service_metrics']],
    ['tls', ['accelerated_seconds', 'oneliner_expiration', 'refresh_envs']],
  ])('%s: the seeded settings, every field of api-spec 2.3', async (service, names) => {
    const rows = await read(service);
    expect(rows.map((s) => s.name)).toEqual(names);
    for (const s of rows) {
      expectFields(s, SETTING_FIELDS);
      expect(s).toMatchObject({ service, environmentID: 0, deletedAt: { time: null, valid: false } });
      expect(s.createdAt).toMatch(RFC3339);
      expect(['boolean', 'integer', 'string']).toContain(s.type);
    }
  });

  it('shows the seeded values', async () => {
    expect(await find('admin', 'inactive_hours')).toMatchObject({ type: 'integer', integer: 72 });
    expect(await find('api', 'service_metrics')).toMatchObject({ type: 'boolean', boolean: false });
    expect(await find('tls', 'oneliner_expiration')).toMatchObject({ type: 'boolean', boolean: true });
  });

  it('an unknown service is 400 invalid_target', async () => {
    const r = await ts.call('GET', '/api/v1/settings/carves/prod', { token: tok.prodAdmin });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('invalid_target');
    expect(r.body.error).toContain('tls, admin, api');
  });

  it('is 401 without a token, 403 for an env user, 404 for an unknown env', async () => {
    expect((await ts.call('GET', '/api/v1/settings/admin/prod')).status).toBe(401);
    for (const t of [tok.analyst, tok.devUser]) {
      const r = await ts.call('GET', '/api/v1/settings/admin/prod', { token: t });
      expect(r.status).toBe(403);
      expect(r.body.code).toBe('forbidden');
    }
    expect((await ts.call('GET', '/api/v1/settings/admin/staging', { token: tok.prodAdmin })).status).toBe(403);
    const unknown = await ts.call('GET', '/api/v1/settings/admin/nope', { token: tok.admin });
    expect(unknown.status).toBe(404);
    expect(unknown.body.code).toBe('not_found');
  });
});

describe('PATCH /api/v1/settings/{service}/{name}', () => {
  it('updates the global row, returns the Setting, audits, and nodes use the new value', async () => {
    const activeAt72 = await activeProd();
    const r = await patch('admin', 'inactive_hours', { integer: 1 });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expectFields(r.body, SETTING_FIELDS);
    expect(r.body).toMatchObject({ name: 'inactive_hours', service: 'admin', type: 'integer', integer: 1, environmentID: 0 });
    expect((await find('admin', 'inactive_hours', 'staging')).integer).toBe(1);
    expect(await activeProd()).toBeLessThan(activeAt72);
    const [audit] = await auditRows(ts, 8);
    expect(audit).toMatchObject({ username: 'admin', environment_id: 0 });
    expect(audit.line).toContain('admin/inactive_hours set to 1 (global)');
    expect((await patch('admin', 'inactive_hours', { integer: 72, type: 'integer' })).status).toBe(200);
    expect(await activeProd()).toBe(activeAt72);
  });

  it('with ?env= creates the env override from the global row, listed first; other envs keep the global', async () => {
    const globalBefore = (await allRows()).find((s) => s.service === 'tls' && s.name === 'accelerated_seconds' && s.environment_id === 0);
    const r = await patch('tls', 'accelerated_seconds', { integer: 600 }, { env: 'prod' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ name: 'accelerated_seconds', integer: 600, environmentID: prodId });
    const rows = await read('tls');
    expect(rows[0]).toMatchObject({ name: 'accelerated_seconds', integer: 600, environmentID: prodId });
    expect(rows.filter((s) => s.name === 'accelerated_seconds')).toHaveLength(1);
    expect(rows.slice(1).every((s) => s.environmentID === 0)).toBe(true);
    expect(await find('tls', 'accelerated_seconds', 'staging')).toMatchObject({ integer: 5, environmentID: 0 });
    expect((await allRows()).find((s) => s.id === globalBefore!.id)).toEqual(globalBefore);

    // A second update changes the same override row (by env UUID this time).
    const prodUuid = (await ts.call('GET', '/api/v1/environments/prod', { token: tok.admin })).body.uuid;
    const again = await patch('tls', 'accelerated_seconds', { integer: 900 }, { env: prodUuid });
    expect(again.status).toBe(200);
    expect(again.body.id).toBe(r.body.id);
    expect((await find('tls', 'accelerated_seconds')).integer).toBe(900);
    const [audit] = await auditRows(ts, 8);
    expect(audit).toMatchObject({ environment_id: prodId });
    expect(audit.line).toContain('(environment prod)');
  });

  it('each built-in setting says what it does on this server in its info', async () => {
    expect((await find('admin', 'cleanup_sessions')).info).toBe('Seconds between purges of ended sessions and expired MFA challenges');
    expect((await find('tls', 'accelerated_seconds')).info).toMatch(
      /^Seconds after enrolling during which a node asks for live queries every 5 s/,
    );
    expect((await find('api', 'refresh_envs')).info).toMatch(/^No effect on this server: /);
  });

  it('an env override of inactive_hours changes only that env’s active nodes', async () => {
    const before = await activeProd();
    expect((await patch('admin', 'inactive_hours', { integer: 1 }, { env: 'prod' })).status).toBe(200);
    expect(await activeProd()).toBeLessThan(before);
    expect((await find('admin', 'inactive_hours', 'staging')).integer).toBe(72);
  });

  it('updates boolean settings', async () => {
    const r = await patch('api', 'service_metrics', { boolean: true });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ type: 'boolean', boolean: true });
    expect((await find('api', 'service_metrics')).boolean).toBe(true);
  });

  const bad: [string, string, string, unknown][] = [
    ['the value field of the stored type missing', 'admin', 'inactive_hours', { boolean: true }],
    ['an empty body', 'admin', 'inactive_hours', {}],
    ['an integer as a string', 'admin', 'inactive_hours', { integer: '5' }],
    ['a fractional integer', 'admin', 'inactive_hours', { integer: 1.5 }],
    ['inactive_hours of 0', 'admin', 'inactive_hours', { integer: 0 }],
    ['a negative period', 'admin', 'cleanup_expired', { integer: -1 }],
    ['an integer too large', 'tls', 'accelerated_seconds', { integer: 2 ** 40 }],
    ['a boolean as a string', 'api', 'service_metrics', { boolean: 'true' }],
    ['a boolean as a number', 'tls', 'oneliner_expiration', { boolean: 1 }],
    ['a type that disagrees with the stored one', 'admin', 'inactive_hours', { type: 'boolean', integer: 5 }],
    ['a body that is not an object', 'admin', 'inactive_hours', [5]],
  ];
  it.each(bad)('rejects %s with 400 and changes nothing', async (_, service, name, body) => {
    const before = await allRows();
    const r = await patch(service, name, body);
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body).toMatchObject({ code: 'bad_request', error: expect.any(String) });
    expect(await allRows()).toEqual(before);
  });

  it('rejects malformed JSON with 400 invalid_json', async () => {
    const before = await allRows();
    const r = await ts.call('PATCH', '/api/v1/settings/admin/inactive_hours', { token: tok.admin, rawBody: '{"integer": 5' });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('invalid_json');
    expect(await allRows()).toEqual(before);
  });

  it('404 for an unknown setting or env, 400 invalid_target for an unknown service', async () => {
    const before = await allRows();
    const unknown = await patch('admin', 'no_such_setting', { integer: 5 });
    expect(unknown.status).toBe(404);
    expect(unknown.body.code).toBe('not_found');
    // A name that exists in another service is still unknown in this one.
    expect((await patch('admin', 'accelerated_seconds', { integer: 5 })).status).toBe(404);
    const env = await patch('admin', 'inactive_hours', { integer: 5 }, { env: 'nope' });
    expect(env.status).toBe(404);
    const svc = await patch('carves', 'inactive_hours', { integer: 5 });
    expect(svc.status).toBe(400);
    expect(svc.body.code).toBe('invalid_target');
    expect((await patch('admin', 'inactive_hours', { integer: 5 }, { env: '' })).status).toBe(400);
    expect(await allRows()).toEqual(before);
  });

  it('is 401 without a token and 403 for anyone but a super-admin (env admins included)', async () => {
    const before = await allRows();
    const noTok = await ts.call('PATCH', '/api/v1/settings/admin/inactive_hours', { body: { integer: 5 } });
    expect(noTok.status).toBe(401);
    expect(noTok.body.code).toBe('unauthorized');
    for (const t of [tok.prodAdmin, tok.analyst]) {
      for (const envQ of [undefined, 'prod']) {
        const r = await patch('admin', 'inactive_hours', { integer: 5 }, { token: t, env: envQ });
        expect(r.status).toBe(403);
        expect(r.body.code).toBe('forbidden');
      }
    }
    expect(await allRows()).toEqual(before);
  });
});
