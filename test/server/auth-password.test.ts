// POST /api/v1/users/me/password (4.3): the rules, and that it ends the caller's OTHER
// sessions but not the one in use.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEV_PASSWORD, startTestServer, type TestServer } from '../helpers/api-server.js';
import { expiredToken, forgedToken } from '../helpers/tokens.js';

let ts: TestServer;
beforeAll(async () => {
  ts = await startTestServer();
});
afterAll(() => ts?.close());

const change = (token: string | undefined, body: unknown) => ts.call('POST', '/api/v1/users/me/password', { token, body });
const hashOf = async (username: string) =>
  (await ts.server.deps.db.selectFrom('users').select('password_hash').where('username', '=', username).executeTakeFirstOrThrow())
    .password_hash;
const me = (token: string) => ts.call('GET', '/api/v1/users/me', { token });

describe('POST /api/v1/users/me/password', () => {
  it('changes the password, ends the other sessions (401) but not the current one, and audits it', async () => {
    const current = await ts.login('analyst');
    const other = await ts.login('analyst', 'staging');
    const r = await change(current, { current_password: DEV_PASSWORD, new_password: 'analyst-new-1' });
    expect(r.status).toBe(200);
    expect(Object.keys(r.body)).toEqual(['message']);
    expect(typeof r.body.message).toBe('string');
    expect((await me(current)).status).toBe(200);
    const old = await me(other);
    expect(old.status).toBe(401);
    expect(old.body).toEqual({ code: 'token_expired', error: expect.any(String) });
    const oldPw = await ts.call('POST', '/api/v1/login/prod', { body: { username: 'analyst', password: DEV_PASSWORD } });
    expect(oldPw.status).toBe(401);
    expect(await ts.login('analyst', 'prod', 'analyst-new-1')).toEqual(expect.any(String));
    const audit = await ts.server.deps.db
      .selectFrom('audit_logs')
      .selectAll()
      .where('username', '=', 'analyst')
      .where('line', 'like', '%changed their password%')
      .execute();
    expect(audit).toHaveLength(1);
    expect(audit[0].log_type).toBe(10);
    expect(audit[0].line).not.toContain('analyst-new-1');
  });

  it('400 when a field is missing or the new one is shorter than 8; 403 forbidden for a wrong current one; nothing changes', async () => {
    const token = await ts.login('querier');
    const other = await ts.login('querier');
    const before = await hashOf('querier');
    const bad: [unknown, number, string][] = [
      [{ new_password: 'long-enough-1' }, 400, 'bad_request'],
      [{ current_password: DEV_PASSWORD }, 400, 'bad_request'],
      [{ current_password: '', new_password: 'long-enough-1' }, 400, 'bad_request'],
      [{ current_password: DEV_PASSWORD, new_password: 'seven77' }, 400, 'bad_request'],
      [{ current_password: DEV_PASSWORD, new_password: 12345678 }, 400, 'bad_request'],
      [{}, 400, 'bad_request'],
      [{ current_password: 'wrong-password', new_password: 'long-enough-1' }, 403, 'forbidden'],
    ];
    for (const [body, status, code] of bad) {
      const r = await change(token, body);
      expect(r.status, JSON.stringify(body)).toBe(status);
      expect(r.body).toEqual({ code, error: expect.any(String) });
    }
    const raw = await ts.call('POST', '/api/v1/users/me/password', { token, rawBody: 'current_password=x' });
    expect(raw.status).toBe(400);
    expect(raw.body.code).toBe('invalid_json');
    expect(await hashOf('querier')).toBe(before);
    expect((await me(other)).status).toBe(200);
    const audit = await ts.server.deps.db
      .selectFrom('audit_logs')
      .selectAll()
      .where('username', '=', 'querier')
      .where('line', 'like', '%wrong password%')
      .execute();
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ log_type: 10, severity: 2 });
  });

  it('exactly 8 characters is enough', async () => {
    const token = await ts.login('carver');
    expect((await change(token, { current_password: DEV_PASSWORD, new_password: '8chars!!' })).status).toBe(200);
    expect(await ts.login('carver', 'prod', '8chars!!')).toEqual(expect.any(String));
  });

  it('needs a valid token: none or forged 401 unauthorized, expired 401 token_expired', async () => {
    const body = { current_password: DEV_PASSWORD, new_password: 'whatever-1' };
    expect((await change(undefined, body)).body.code).toBe('unauthorized');
    expect((await change(forgedToken('dev-user'), body)).body.code).toBe('unauthorized');
    const exp = await change(expiredToken(ts, 'dev-user'), body);
    expect(exp.status).toBe(401);
    expect(exp.body.code).toBe('token_expired');
    expect(await ts.login('dev-user', 'dev')).toEqual(expect.any(String));
  });
});
