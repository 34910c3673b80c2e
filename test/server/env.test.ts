// GET /api/v1/environments/{env} (contract.md 5), PATCH intervals (4.6), and the routing of both
// beside GET /api/v1/environments/map/{target} (4.7).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/api-server.js';
import { DEMO_ENVIRONMENTS } from '../../src/server/seed.js';
import { ENVIRONMENT_FIELDS, RFC3339, auditRows, expectFields } from './env-helpers.js';

let ts: TestServer;
const tok: Record<string, string> = {};
const prodUuid = DEMO_ENVIRONMENTS.find((e) => e.name === 'prod')!.uuid;

beforeAll(async () => {
  ts = await startTestServer();
  tok.admin = await ts.login('admin');
  tok.prodAdmin = await ts.login('prod-admin');
  tok.analyst = await ts.login('analyst');
  tok.devUser = await ts.login('dev-user', 'dev');
});
afterAll(async () => ts?.close());

const getEnv = (env: string, token = tok.admin) => ts.call('GET', `/api/v1/environments/${env}`, { token });

describe('GET /api/v1/environments/{env}', () => {
  it('gives an env admin the whole environment, secrets included', async () => {
    const r = await getEnv('prod', tok.prodAdmin);
    expect(r.status).toBe(200);
    expectFields(r.body, ENVIRONMENT_FIELDS);
    expect(r.body).toMatchObject({ name: 'prod', uuid: prodUuid, config_interval: 300, log_interval: 600, query_interval: 60 });
    expect(r.body.secret).toMatch(/^[0-9a-f]{48}$/);
    expect(r.body.flags).toContain('--enroll_secret_path=__SECRET_FILE__');
    expect(r.body.created_at).toMatch(RFC3339);
    expect(r.body.enroll_expire).toMatch(RFC3339);
  });

  it('blanks secret, certificate and flags for an env user who is not env admin', async () => {
    const r = await getEnv('prod', tok.analyst);
    expect(r.status).toBe(200);
    expectFields(r.body, ENVIRONMENT_FIELDS);
    expect(r.body).toMatchObject({ name: 'prod', secret: '', certificate: '', flags: '' });
    expect(r.body.enroll_secret_path).not.toBe('');
  });

  it('finds the environment by UUID, in either case', async () => {
    for (const ref of [prodUuid, prodUuid.toUpperCase()]) {
      const r = await getEnv(ref, tok.analyst);
      expect(r.status, ref).toBe(200);
      expect(r.body.name).toBe('prod');
    }
  });

  it('is 401 without a token, 403 without access, 404 for an unknown environment', async () => {
    expect((await ts.call('GET', '/api/v1/environments/prod')).body.code).toBe('unauthorized');
    const noToken = await ts.call('GET', '/api/v1/environments/prod');
    expect(noToken.status).toBe(401);
    const denied = await getEnv('prod', tok.devUser);
    expect(denied.status).toBe(403);
    expect(denied.body).toMatchObject({ code: 'forbidden', error: expect.any(String) });
    const unknown = await getEnv('nope', tok.admin);
    expect(unknown.status).toBe(404);
    expect(unknown.body.code).toBe('not_found');
  });
});

describe('routes beside environments/map/{target}', () => {
  it('still serves the map, filtered to the caller', async () => {
    const r = await ts.call('GET', '/api/v1/environments/map/name', { token: tok.analyst });
    expect(r.status).toBe(200);
    expect(Object.keys(r.body).sort()).toEqual(['prod', 'staging']);
    expect(r.body.prod).toEqual({ id: expect.any(Number), name: 'prod', uuid: prodUuid });
    const bad = await ts.call('GET', '/api/v1/environments/map/bogus', { token: tok.analyst });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('invalid_target');
  });

  it('treats a bare /environments/map as an environment reference (no env is named "map")', async () => {
    const r = await ts.call('GET', '/api/v1/environments/map', { token: tok.admin });
    expect(r.status).toBe(404);
    expect(r.body).toMatchObject({ code: 'not_found', error: expect.stringContaining('"map"') });
  });

  it('does not take "intervals" for an environment on GET', async () => {
    const r = await ts.call('GET', '/api/v1/environments/intervals/prod', { token: tok.admin });
    expect(r.status).toBe(404);
  });
});

describe('PATCH /api/v1/environments/intervals/{env}', () => {
  const patch = (env: string, body: unknown, token = tok.prodAdmin) =>
    ts.call('PATCH', `/api/v1/environments/intervals/${env}`, { token, body });
  const intervals = async (env = 'prod') => {
    const r = await getEnv(env);
    return { config_interval: r.body.config_interval, log_interval: r.body.log_interval, query_interval: r.body.query_interval };
  };

  it('sets the given intervals, keeps the omitted ones, returns the whole environment and audits', async () => {
    const r = await patch('prod', { config_interval: 120, query_interval: 30 });
    expect(r.status).toBe(200);
    expectFields(r.body, ENVIRONMENT_FIELDS);
    expect(r.body).toMatchObject({ name: 'prod', config_interval: 120, log_interval: 600, query_interval: 30 });
    expect(r.body.secret).not.toBe('');
    expect(await intervals()).toEqual({ config_interval: 120, log_interval: 600, query_interval: 30 });
    const [audit] = await auditRows(ts, 7);
    expect(audit).toMatchObject({ username: 'prod-admin', env_uuid: prodUuid });
    expect(audit.line).toContain('config_interval=120');
    // The generated flags follow the new intervals.
    expect(r.body.flags).toContain('--config_tls_refresh=120');
    expect(r.body.flags).toContain('--distributed_interval=30');
  });

  it('accepts the env UUID in the path and an empty body (nothing changes)', async () => {
    const before = await intervals();
    const r = await patch(prodUuid, {});
    expect(r.status).toBe(200);
    expect(await intervals()).toEqual(before);
  });

  it('lets a super-admin set any environment', async () => {
    const r = await patch('staging', { log_interval: 900 }, tok.admin);
    expect(r.status).toBe(200);
    expect(await intervals('staging')).toEqual({ config_interval: 300, log_interval: 900, query_interval: 60 });
  });

  it.each([
    ['zero', { config_interval: 0 }],
    ['negative', { log_interval: -5 }],
    ['fraction', { query_interval: 1.5 }],
    ['string', { config_interval: '60' }],
    ['null', { config_interval: null }],
    ['boolean', { log_interval: true }],
    ['too large', { config_interval: 1e12 }],
    ['one good, one bad', { config_interval: 77, log_interval: 0 }],
  ])('rejects a %s value with 400 and changes nothing', async (_, body) => {
    const before = await intervals();
    const r = await patch('prod', body);
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: 'bad_request', error: expect.any(String) });
    expect(await intervals()).toEqual(before);
  });

  it('rejects malformed JSON and a non-object body with 400', async () => {
    const before = await intervals();
    const bad = await ts.call('PATCH', '/api/v1/environments/intervals/prod', { token: tok.prodAdmin, rawBody: '{"config_interval": 5,' });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('invalid_json');
    const arr = await patch('prod', [1, 2, 3]);
    expect(arr.status).toBe(400);
    expect(await intervals()).toEqual(before);
  });

  it('is 401 without a token, 403 for an env user or another env’s admin, 404 for an unknown env', async () => {
    const before = await intervals();
    const noTok = await ts.call('PATCH', '/api/v1/environments/intervals/prod', { body: { config_interval: 5 } });
    expect(noTok.status).toBe(401);
    const user = await patch('prod', { config_interval: 5 }, tok.analyst);
    expect(user.status).toBe(403);
    expect(user.body.code).toBe('forbidden');
    const other = await patch('staging', { config_interval: 5 }, tok.prodAdmin);
    expect(other.status).toBe(403);
    const unknown = await patch('nope', { config_interval: 5 }, tok.admin);
    expect(unknown.status).toBe(404);
    expect(unknown.body.code).toBe('not_found');
    expect(await intervals()).toEqual(before);
  });
});
