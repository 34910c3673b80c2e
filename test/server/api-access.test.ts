// The users' API-access flag is enforced (issue 29, docs/api.md "API access"): the API is this
// server's only door, so a user without it cannot obtain a token (login 403 api_disabled, after
// the password is checked) nor use one (403 api_disabled), and taking it away ends their sessions.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEV_PASSWORD, startTestServer, totpCode, type TestServer } from '../helpers/api-server.js';

let ts: TestServer;
let admin: string;

beforeAll(async () => {
  ts = await startTestServer();
  admin = await ts.login('admin');
});
afterAll(() => ts?.close());

const act = (username: string, action: string, body: Record<string, unknown>, token = admin) =>
  ts.call('POST', `/api/v1/users/${username}/${action}`, { token, body: { username, ...body } });
const login = (username: string, password = DEV_PASSWORD) => ts.call('POST', '/api/v1/login/prod', { body: { username, password } });
const sessions = async (username: string) =>
  (
    await ts.server.deps.db
      .selectFrom('sessions')
      .innerJoin('users', 'users.id', 'sessions.user_id')
      .select('jti')
      .where('users.username', '=', username)
      .execute()
  ).length;
const auditLines = async (needle: string) =>
  (await ts.server.deps.db.selectFrom('audit_logs').select('line').where('line', 'like', `%${needle}%`).execute()).map((r) => r.line);

describe('a user added without API access', () => {
  beforeAll(async () => {
    expect((await act('no-api-1', 'add', { password: DEV_PASSWORD, environments: ['prod'], api: false })).status).toBe(200);
  });

  it('cannot log in: 403 api_disabled with a message saying why and who can change it', async () => {
    const r = await login('no-api-1');
    expect(r.status).toBe(403);
    expect(r.body.code).toBe('api_disabled');
    expect(r.body.error).toBe('API access is disabled for user no-api-1: a super-admin can allow it (fleetctl users edit no-api-1 --api)');
    expect(await sessions('no-api-1')).toBe(0);
    expect(await auditLines('login denied: no-api-1 has no API access')).toHaveLength(1);
  });

  it('a wrong password is the same 401 as for anyone (the flag is not revealed before the password)', async () => {
    const r = await login('no-api-1', 'wrong-password-1');
    expect(r.status).toBe(401);
    expect(r.body.code).toBe('unauthorized');
  });

  it('given API access, logs in', async () => {
    expect((await act('no-api-1', 'edit', { api: true })).status).toBe(200);
    expect((await login('no-api-1')).status).toBe(200);
  });
});

describe('taking API access away from a user with a session', () => {
  let token: string;
  beforeAll(async () => {
    expect((await act('no-api-2', 'add', { password: DEV_PASSWORD, environments: ['prod'] })).status).toBe(200);
    token = await ts.login('no-api-2');
    expect((await ts.call('GET', '/api/v1/nodes/prod?page_size=1', { token })).status).toBe(200);
  });

  it('ends their sessions, says so in the audit row, and their token answers 403 api_disabled', async () => {
    expect(await sessions('no-api-2')).toBe(1);
    const r = await act('no-api-2', 'edit', { api: false });
    expect(r.status).toBe(200);
    expect(await sessions('no-api-2')).toBe(0);
    expect(await auditLines('user no-api-2 updated: api false (sessions ended) by admin')).toHaveLength(1);
    for (const path of ['/api/v1/nodes/prod?page_size=1', '/api/v1/users/me']) {
      const denied = await ts.call('GET', path, { token });
      expect(denied.status).toBe(403);
      expect(denied.body.code).toBe('api_disabled');
    }
  });

  it('given back, the old token stays ended (401 token_expired) and a new login works', async () => {
    expect((await act('no-api-2', 'edit', { api: true })).status).toBe(200);
    const old = await ts.call('GET', '/api/v1/users/me', { token });
    expect(old.status).toBe(401);
    expect(old.body.code).toBe('token_expired');
    const fresh = await ts.login('no-api-2');
    expect((await ts.call('GET', '/api/v1/users/me', { token: fresh })).status).toBe(200);
  });

  it('a super-admin cannot take their own API access (409, nothing changed)', async () => {
    const r = await act('admin', 'edit', { api: false });
    expect(r.status).toBe(409);
    expect(r.body.error).toMatch(/your own API access/);
    expect((await ts.call('GET', '/api/v1/users/me', { token: admin })).status).toBe(200);
  });
});

describe('a user with TOTP', () => {
  it('gets no MFA challenge without API access, and a challenge begun before the flag was taken is void', async () => {
    expect((await act('no-api-3', 'add', { password: DEV_PASSWORD, environments: ['prod'] })).status).toBe(200);
    const token = await ts.login('no-api-3');
    const begin = await ts.call('POST', '/api/v1/users/me/mfa/totp', { token });
    const secret = begin.body.secret as string;
    expect((await ts.call('POST', '/api/v1/users/me/mfa/totp/confirm', { token, body: { code: totpCode(secret) } })).status).toBe(200);

    const step1 = await login('no-api-3');
    expect(step1.status).toBe(401);
    expect(step1.body.code).toBe('mfa_required');
    expect((await act('no-api-3', 'edit', { api: false })).status).toBe(200);
    // The next 30-second step: the confirm above used this one's code.
    const code = totpCode(secret, Date.now() + 30_000);
    const step2 = await ts.call('POST', '/api/v1/login/mfa', { body: { challenge: step1.body.challenge, code, method: 'totp' } });
    expect(step2.status).toBe(400);
    expect(step2.body.code).toBe('challenge_invalid');
    expect(await sessions('no-api-3')).toBe(0);

    const again = await login('no-api-3');
    expect(again.status).toBe(403);
    expect(again.body.code).toBe('api_disabled');
    expect(again.body.challenge).toBeUndefined();
  });
});
