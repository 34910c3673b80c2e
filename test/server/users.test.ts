// Users (4.5 add/edit/remove), the users list and /users/me (contract.md 5), against a real
// server: replies, what is stored, sessions, audit rows and the permission checks.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEV_PASSWORD, startTestServer, type TestServer } from '../helpers/api-server.js';
import { expiredToken, forgedToken } from '../helpers/tokens.js';

let ts: TestServer;
let admin: string;
const PROD_UUID = '5c2fd3c7-8d7e-4b4f-9c55-6a1e1f5b0a01';

beforeAll(async () => {
  ts = await startTestServer();
  admin = await ts.login('admin');
});
afterAll(() => ts?.close());

const act = (username: string, action: string, body: Record<string, unknown>, token = admin) =>
  ts.call('POST', `/api/v1/users/${username}/${action}`, { token, body });
const row = (username: string) => ts.server.deps.db.selectFrom('users').selectAll().where('username', '=', username).executeTakeFirst();
async function access(username: string) {
  return ts.server.deps.db
    .selectFrom('user_env_access as a')
    .innerJoin('users as u', 'u.id', 'a.user_id')
    .innerJoin('environments as e', 'e.id', 'a.environment_id')
    .select(['e.name', 'a.user_level', 'a.query_level', 'a.carve_level', 'a.admin_level'])
    .where('u.username', '=', username)
    .orderBy('e.name')
    .execute();
}
const auditOf = async (needle: string) =>
  ts.server.deps.db.selectFrom('audit_logs').selectAll().where('line', 'like', `%${needle}%`).orderBy('id').execute();
const userCount = async () => (await ts.server.deps.db.selectFrom('users').select('id').execute()).length;

function expectUserShape(u: Record<string, unknown>): void {
  expect(Object.keys(u).sort()).toEqual([
    'admin',
    'api',
    'created_at',
    'email',
    'environments',
    'fullname',
    'last_login_at',
    'mfa',
    'service',
    'username',
  ]);
  for (const k of ['username', 'fullname', 'email', 'created_at', 'last_login_at']) expect(typeof u[k], k).toBe('string');
  for (const k of ['admin', 'service', 'api']) expect(typeof u[k], k).toBe('boolean');
  expect(u.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3})?Z$/);
  expect(u.last_login_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3})?Z$/);
  const mfa = u.mfa as Record<string, unknown>;
  expect(Object.keys(mfa).sort()).toEqual(['recovery_codes', 'totp', 'webauthn']);
  expect(typeof mfa.totp).toBe('boolean');
  expect(Number.isInteger(mfa.webauthn)).toBe(true);
  expect(Array.isArray(u.environments)).toBe(true);
  for (const e of u.environments as Record<string, unknown>[]) {
    expect(Object.keys(e).sort()).toEqual(['admin', 'carve', 'id', 'name', 'query', 'user', 'uuid']);
    expect(Number.isInteger(e.id)).toBe(true);
    expect(typeof e.name).toBe('string');
    expect(typeof e.uuid).toBe('string');
    for (const k of ['user', 'query', 'carve', 'admin']) expect(typeof e[k]).toBe('boolean');
  }
}

describe('GET /api/v1/users and /api/v1/users/me', () => {
  it('lists every user, by name, in the User shape and without secrets', async () => {
    const r = await ts.call('GET', '/api/v1/users', { token: admin });
    expect(r.status).toBe(200);
    expect(Array.isArray(r.body)).toBe(true);
    for (const u of r.body) expectUserShape(u);
    const names = r.body.map((u: { username: string }) => u.username);
    expect(names).toEqual([...names].sort());
    expect(names).toEqual(expect.arrayContaining(['admin', 'analyst', 'mfa-user', 'ci-bot']));
    const by = (n: string) => r.body.find((u: { username: string }) => u.username === n);
    expect(by('admin')).toMatchObject({ admin: true, mfa: { totp: false, webauthn: 2 } });
    expect(by('mfa-user')).toMatchObject({ admin: false, mfa: { totp: true, webauthn: 0, recovery_codes: 10 } });
    expect(by('ci-bot')).toMatchObject({
      service: true,
      environments: [{ name: 'staging', user: false, query: false, carve: false, admin: true }],
    });
    expect(by('dev-user').last_login_at).toBe('0001-01-01T00:00:00Z');
    expect(JSON.stringify(r.body)).not.toMatch(/scrypt|password|secret/i);
  });

  it('/users/me is the caller, for any authenticated user', async () => {
    const r = await ts.call('GET', '/api/v1/users/me', { token: await ts.login('analyst') });
    expect(r.status).toBe(200);
    expectUserShape(r.body);
    expect(r.body).toMatchObject({
      username: 'analyst',
      admin: false,
      environments: [
        { name: 'prod', uuid: PROD_UUID, user: true, query: false, carve: false, admin: false },
        { name: 'staging', user: true, query: false, carve: false, admin: false },
      ],
    });
    expect(r.body.last_login_at).not.toBe('0001-01-01T00:00:00Z');
  });

  it('the list needs a super-admin (403, audited); both need a valid token', async () => {
    const analyst = await ts.login('analyst');
    const denied = await ts.call('GET', '/api/v1/users', { token: analyst });
    expect(denied.status).toBe(403);
    expect(denied.body).toEqual({ code: 'forbidden', error: expect.any(String) });
    expect((await auditOf('denied GET /api/v1/users')).some((a) => a.username === 'analyst' && a.log_type === 9)).toBe(true);
    for (const path of ['/api/v1/users', '/api/v1/users/me']) {
      expect((await ts.call('GET', path)).body.code).toBe('unauthorized');
      expect((await ts.call('GET', path, { token: forgedToken() })).status).toBe(401);
      const exp = await ts.call('GET', path, { token: expiredToken(ts, 'admin') });
      expect(exp.status).toBe(401);
      expect(exp.body.code).toBe('token_expired');
    }
  });
});

describe('POST /api/v1/users/{username}/add', () => {
  it('adds a user: data reply, hashed password, user-only access on envs given by name or UUID, audit row', async () => {
    const r = await act('alice', 'add', {
      username: 'alice',
      fullname: 'Alice A',
      email: 'alice@example.com',
      password: 'alice-pass-1',
      environments: ['staging', PROD_UUID],
    });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ data: 'user alice added' });
    const u = (await row('alice'))!;
    expect(u).toMatchObject({ fullname: 'Alice A', email: 'alice@example.com', admin: 0, service: 0, api: 1, totp_secret: null });
    expect(u.password_hash).toMatch(/^scrypt\$/);
    expect(u.password_hash).not.toContain('alice-pass-1');
    expect(await access('alice')).toEqual([
      { name: 'prod', user_level: 1, query_level: 0, carve_level: 0, admin_level: 0 },
      { name: 'staging', user_level: 1, query_level: 0, carve_level: 0, admin_level: 0 },
    ]);
    expect(await ts.login('alice', 'prod', 'alice-pass-1')).toEqual(expect.any(String));
    const dev = await ts.call('POST', '/api/v1/login/dev', { body: { username: 'alice', password: 'alice-pass-1' } });
    expect(dev.status).toBe(403);
    const audit = await auditOf('user alice added');
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ log_type: 10, username: 'admin' });
    expect(audit[0].line).not.toContain('alice-pass-1');
  });

  it('levels: given ones set, user_access defaults to true; admin: true makes a super-admin; service flag', async () => {
    expect(
      (
        await act('bob', 'add', {
          username: 'bob',
          password: 'bob-pass-12',
          environments: ['prod'],
          query_access: true,
          carve_access: true,
        })
      ).status,
    ).toBe(200);
    expect(await access('bob')).toEqual([{ name: 'prod', user_level: 1, query_level: 1, carve_level: 1, admin_level: 0 }]);
    expect((await act('root2', 'add', { username: 'root2', password: 'root2-pass', admin: true, service: true, api: false })).status).toBe(
      200,
    );
    expect(await row('root2')).toMatchObject({ admin: 1, service: 1, api: 0 });
    // Without API access the new super-admin cannot log in (issue 29); with it, reaches every env.
    const denied = await ts.call('POST', '/api/v1/login/dev', { body: { username: 'root2', password: 'root2-pass' } });
    expect(denied.status).toBe(403);
    expect(denied.body.code).toBe('api_disabled');
    expect((await act('root2', 'edit', { username: 'root2', api: true })).status).toBe(200);
    const list = await ts.call('GET', '/api/v1/users', { token: await ts.login('root2', 'dev', 'root2-pass') });
    expect(list.status).toBe(200);
  });

  it('409 for an existing user, nothing changed', async () => {
    const before = (await row('analyst'))!;
    const r = await act('analyst', 'add', { username: 'analyst', password: 'another-pass', admin: true });
    expect(r.status).toBe(409);
    expect(r.body).toEqual({ code: 'conflict', error: expect.any(String) });
    expect(await row('analyst')).toEqual(before);
  });

  it('404 for an unknown environment, and no user is created', async () => {
    const n = await userCount();
    const r = await act('carol', 'add', { username: 'carol', password: 'carol-pass', environments: ['prod', 'nope'] });
    expect(r.status).toBe(404);
    expect(r.body).toEqual({ code: 'not_found', error: expect.stringContaining('nope') });
    expect(await row('carol')).toBeUndefined();
    expect(await userCount()).toBe(n);
  });

  it('400 for bad input, and nothing is created', async () => {
    const n = await userCount();
    const cases: [string, Record<string, unknown> | string][] = [
      ['dave', { username: 'someone-else', password: 'dave-pass-1' }],
      ['dave', { password: 'dave-pass-1' }],
      ['dave', { username: 'dave' }],
      ['dave', { username: 'dave', password: 'short' }],
      ['me', { username: 'me', password: 'dave-pass-1' }],
      ['bad name', { username: 'bad name', password: 'dave-pass-1' }],
      ['dave', { username: 'dave', password: 'dave-pass-1', admin: true, not_admin: true }],
      ['dave', { username: 'dave', password: 'dave-pass-1', admin_access: true }],
      ['dave', { username: 'dave', password: 'dave-pass-1', email: 'not-an-email' }],
      ['dave', { username: 'dave', password: 'dave-pass-1', admin: 'yes' }],
      ['dave', { username: 'dave', password: 'dave-pass-1', environments: 'prod' }],
      ['dave', { username: 'dave', password: 12345678 }],
      // Values are checked before existence: a bad body for an existing user is still 400.
      ['analyst', { username: 'analyst', password: 'short' }],
    ];
    for (const [path, body] of cases) {
      const r = await act(encodeURIComponent(path), 'add', body as Record<string, unknown>);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body).toEqual({ code: 'bad_request', error: expect.any(String) });
    }
    const raw = await ts.call('POST', '/api/v1/users/dave/add', { token: admin, rawBody: '{"username":"dave",' });
    expect(raw.status).toBe(400);
    expect(raw.body).toEqual({ code: 'invalid_json', error: expect.any(String) });
    expect(await userCount()).toBe(n);
  });
});

describe('POST /api/v1/users/{username}/edit', () => {
  it('changes only the given fields and flags', async () => {
    await act('erin', 'add', {
      username: 'erin',
      password: 'erin-pass-1',
      fullname: 'Erin',
      email: 'erin@example.com',
      environments: ['dev'],
    });
    const r = await act('erin', 'edit', { username: 'erin', fullname: 'Erin E', service: true, admin: true });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ data: 'user erin updated' });
    expect(await row('erin')).toMatchObject({ fullname: 'Erin E', email: 'erin@example.com', service: 1, admin: 1 });
    expect((await act('erin', 'edit', { username: 'erin', not_admin: true, not_service: true, email: '' })).status).toBe(200);
    expect(await row('erin')).toMatchObject({ fullname: 'Erin E', email: '', service: 0, admin: 0 });
    expect((await auditOf('user erin updated')).map((a) => a.log_type)).toEqual([10, 10]);
  });

  it('environments + levels replace the access on the named envs only; all false revokes it', async () => {
    await act('frank', 'add', { username: 'frank', password: 'frank-pass', environments: ['prod', 'dev'], query_access: true });
    expect(
      (await act('frank', 'edit', { username: 'frank', environments: ['prod', 'staging'], admin_access: true, user_access: false })).status,
    ).toBe(200);
    expect(await access('frank')).toEqual([
      { name: 'dev', user_level: 1, query_level: 1, carve_level: 0, admin_level: 0 },
      { name: 'prod', user_level: 0, query_level: 0, carve_level: 0, admin_level: 1 },
      { name: 'staging', user_level: 0, query_level: 0, carve_level: 0, admin_level: 1 },
    ]);
    expect((await act('frank', 'edit', { username: 'frank', environments: ['dev'], user_access: false })).status).toBe(200);
    expect((await access('frank')).map((a) => a.name)).toEqual(['prod', 'staging']);
    const denied = await ts.call('POST', '/api/v1/login/dev', { body: { username: 'frank', password: 'frank-pass' } });
    expect(denied.status).toBe(403);
  });

  it("a new password ends the user's sessions and pending MFA challenges", async () => {
    await act('grace', 'add', { username: 'grace', password: 'grace-pass', environments: ['prod'] });
    const old = await ts.login('grace', 'prod', 'grace-pass');
    expect((await ts.call('GET', '/api/v1/users/me', { token: old })).status).toBe(200);
    expect((await act('grace', 'edit', { username: 'grace', password: 'grace-new-pass' })).status).toBe(200);
    const after = await ts.call('GET', '/api/v1/users/me', { token: old });
    expect(after.status).toBe(401);
    expect(after.body.code).toBe('token_expired');
    expect((await ts.call('POST', '/api/v1/login/prod', { body: { username: 'grace', password: 'grace-pass' } })).status).toBe(401);
    expect(await ts.login('grace', 'prod', 'grace-new-pass')).toEqual(expect.any(String));

    const step1 = await ts.call('POST', '/api/v1/login/prod', { body: { username: 'mfa-user', password: DEV_PASSWORD } });
    expect(step1.body.code).toBe('mfa_required');
    expect((await act('mfa-user', 'edit', { username: 'mfa-user', password: DEV_PASSWORD })).status).toBe(200);
    const step2 = await ts.call('POST', '/api/v1/login/mfa', { body: { challenge: step1.body.challenge, code: '000000', method: 'totp' } });
    expect(step2.status).toBe(400);
    expect(step2.body.code).toBe('challenge_invalid');
  });

  it('a super-admin resetting their own password through edit keeps the session in use', async () => {
    await act('heidi', 'add', { username: 'heidi', password: 'heidi-pass', admin: true });
    const a = await ts.login('heidi', 'prod', 'heidi-pass');
    const b = await ts.login('heidi', 'prod', 'heidi-pass');
    expect((await act('heidi', 'edit', { username: 'heidi', password: 'heidi-pass-2' }, a)).status).toBe(200);
    expect((await ts.call('GET', '/api/v1/users/me', { token: a })).status).toBe(200);
    expect((await ts.call('GET', '/api/v1/users/me', { token: b })).status).toBe(401);
  });

  it('404 for an unknown user, 400 when nothing would change, 404 for an unknown env', async () => {
    const unknown = await act('nobody', 'edit', { username: 'nobody', fullname: 'x' });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ code: 'not_found', error: expect.any(String) });
    const nothing = await act('analyst', 'edit', { username: 'analyst' });
    expect(nothing.status).toBe(400);
    expect(nothing.body.code).toBe('bad_request');
    const before = await access('analyst');
    const env = await act('analyst', 'edit', { username: 'analyst', fullname: 'changed?', environments: ['nope'] });
    expect(env.status).toBe(404);
    expect(await access('analyst')).toEqual(before);
    expect((await row('analyst'))!.fullname).not.toBe('changed?');
  });
});

describe('the last super-admin, and removing users', () => {
  it('409 for demoting the last super-admin; allowed while another one exists', async () => {
    const solo = await startTestServer();
    try {
      const token = await solo.login('admin');
      const r = await solo.call('POST', '/api/v1/users/admin/edit', { token, body: { username: 'admin', not_admin: true } });
      expect(r.status).toBe(409);
      expect(r.body).toEqual({ code: 'conflict', error: expect.stringContaining('super-admin') });
      const still = await solo.server.deps.db.selectFrom('users').select('admin').where('username', '=', 'admin').executeTakeFirstOrThrow();
      expect(still.admin).toBe(1);
      await solo.call('POST', '/api/v1/users/second/add', { token, body: { username: 'second', password: 'second-pass', admin: true } });
      const ok = await solo.call('POST', '/api/v1/users/admin/edit', { token, body: { username: 'admin', not_admin: true } });
      expect(ok.status).toBe(200);
      // No longer a super-admin: the same token is now refused.
      expect((await solo.call('GET', '/api/v1/users', { token })).status).toBe(403);
    } finally {
      await solo.close();
    }
  });

  it("remove: data reply, the user's tokens stop working, audit row; 404 unknown; 409 yourself", async () => {
    await act('ivan', 'add', { username: 'ivan', password: 'ivan-pass-1', environments: ['prod'] });
    const token = await ts.login('ivan', 'prod', 'ivan-pass-1');
    const r = await act('ivan', 'remove', { username: 'ivan' });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ data: 'user ivan removed' });
    expect(await row('ivan')).toBeUndefined();
    const after = await ts.call('GET', '/api/v1/users/me', { token });
    expect(after.status).toBe(401);
    expect(['token_expired', 'unauthorized']).toContain(after.body.code);
    expect((await auditOf('user ivan removed'))[0]).toMatchObject({ log_type: 10, username: 'admin' });

    const unknown = await act('ivan', 'remove', { username: 'ivan' });
    expect(unknown.status).toBe(404);
    expect(unknown.body.code).toBe('not_found');
    const self = await act('admin', 'remove', { username: 'admin' });
    expect(self.status).toBe(409);
    expect(self.body.code).toBe('conflict');
    expect(await row('admin')).toBeDefined();
    const mismatch = await act('analyst', 'remove', { username: 'admin' });
    expect(mismatch.status).toBe(400);
    expect(await row('analyst')).toBeDefined();
  });

  it('unknown action: 400 invalid_action', async () => {
    const r = await act('analyst', 'promote', { username: 'analyst' });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ code: 'invalid_action', error: expect.stringContaining('add, edit, remove') });
  });

  it('needs a super-admin: no token 401, expired 401 token_expired, env admin 403, and nothing changes', async () => {
    const n = await userCount();
    const body = { username: 'judy', password: 'judy-pass-1' };
    expect((await ts.call('POST', '/api/v1/users/judy/add', { body })).status).toBe(401);
    const exp = await ts.call('POST', '/api/v1/users/judy/add', { body, token: expiredToken(ts, 'admin') });
    expect(exp.status).toBe(401);
    expect(exp.body.code).toBe('token_expired');
    const forged = await ts.call('POST', '/api/v1/users/judy/add', { body, token: forgedToken('admin') });
    expect(forged.status).toBe(401);
    expect(forged.body.code).toBe('unauthorized');
    const envAdmin = await ts.call('POST', '/api/v1/users/judy/add', { body, token: await ts.login('prod-admin') });
    expect(envAdmin.status).toBe(403);
    expect(envAdmin.body.code).toBe('forbidden');
    const rm = await ts.call('POST', '/api/v1/users/analyst/remove', {
      body: { username: 'analyst' },
      token: await ts.login('prod-admin'),
    });
    expect(rm.status).toBe(403);
    expect(await userCount()).toBe(n);
  });
});
