// Login (4.1) rules of contract.md 2, seen from a client.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEV_PASSWORD, startTestServer, type TestServer } from '../helpers/api-server.js';
import { jwtClaims } from '../helpers/tokens.js';

let ts: TestServer;
beforeAll(async () => {
  ts = await startTestServer();
});
afterAll(() => ts?.close());

const login = (env: string, body: unknown) => ts.call('POST', `/api/v1/login/${env}`, { body });

describe('POST /api/v1/login/{env}', () => {
  it('200 {token, csrf_token}; the env may be given by UUID', async () => {
    const r = await login('5c2fd3c7-8d7e-4b4f-9c55-6a1e1f5b0a02', { username: 'analyst', password: DEV_PASSWORD });
    expect(r.status).toBe(200);
    expect(Object.keys(r.body).sort()).toEqual(['csrf_token', 'token']);
    expect(r.body.token.split('.')).toHaveLength(3);
    expect(r.body.csrf_token).toMatch(/^[0-9a-f]{32}$/);
    expect(jwtClaims(r.body.token)).toMatchObject({ sub: 'analyst', iss: 'fleetctl', jti: expect.any(String) });
  });

  it('wrong password and unknown user: the same 401 and message', async () => {
    const wrong = await login('prod', { username: 'analyst', password: 'wrong-password' });
    const unknown = await login('prod', { username: 'no-such-user', password: 'wrong-password' });
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    expect(wrong.body).toEqual({ code: 'unauthorized', error: expect.any(String) });
    expect(unknown.body).toEqual(wrong.body);
  });

  it('unknown env 404; a user without access to the env 403', async () => {
    const env = await login('nope', { username: 'analyst', password: DEV_PASSWORD });
    expect(env.status).toBe(404);
    expect(env.body.code).toBe('not_found');
    const denied = await login('dev', { username: 'analyst', password: DEV_PASSWORD });
    expect(denied.status).toBe(403);
    expect(denied.body.code).toBe('forbidden');
  });

  it('a login to an unknown env is a failed login: audited (contract 4.19), without the password', async () => {
    const r = await login('no-such-env-audit', { username: 'nobody-audit-probe', password: 'guess-1234' });
    expect(r.status).toBe(404);
    const admin = await ts.login('admin');
    const logs = await ts.call('GET', '/api/v1/audit-logs?username=nobody-audit-probe', { token: admin });
    expect(logs.status).toBe(200);
    expect(logs.body.items).toHaveLength(1);
    expect(logs.body.items[0]).toMatchObject({ log_type: 1, severity: 2, username: 'nobody-audit-probe', environment_id: 0 });
    expect(logs.body.items[0].line).toContain('no-such-env-audit');
    expect(logs.body.items[0].line).not.toContain('guess-1234');
  });

  it('exp_hours: absent or 0 is 3 hours, 1..720 as asked, anything else 400', async () => {
    for (const [exp, hours] of [
      [undefined, 3],
      [0, 3],
      [1, 1],
      [720, 720],
    ] as const) {
      const r = await login('prod', { username: 'analyst', password: DEV_PASSWORD, exp_hours: exp });
      expect(r.status).toBe(200);
      const c = jwtClaims(r.body.token);
      expect(c.exp - c.iat).toBe(hours * 3600);
    }
    for (const exp of [721, -1, 1.5, '5']) {
      const r = await login('prod', { username: 'analyst', password: DEV_PASSWORD, exp_hours: exp });
      expect(r.status, String(exp)).toBe(400);
      expect(r.body).toEqual({ code: 'bad_request', error: expect.any(String) });
    }
  });

  it('malformed JSON and wrong types are 400 {code, error}', async () => {
    const raw = await ts.call('POST', '/api/v1/login/prod', { rawBody: '{"username":' });
    expect(raw.status).toBe(400);
    expect(raw.body).toEqual({ code: 'invalid_json', error: expect.any(String) });
    const types = await login('prod', { username: 'analyst', password: 12345 });
    expect(types.status).toBe(400);
    expect(types.body.code).toBe('bad_request');
  });
});
