// The permission table of contract.md section 3, endpoint by endpoint: every route called as
// super-admin, env admin, env user, carve user, a user of another env, with no token, an
// expired token and the token of a user whose password changed. Requests are chosen so an
// allowed caller changes nothing (unknown names, invalid values), so the rows do not interfere.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEV_PASSWORD, startTestServer, type ApiReply, type TestServer } from '../helpers/api-server.js';
import { expiredToken, forgedToken } from '../helpers/tokens.js';

type Rule = 'auth' | 'super' | 'envAdmin' | 'envUser' | 'envCarve';
type Role = 'admin' | 'prod-admin' | 'analyst' | 'carver' | 'dev-user';

const ALLOWED: Record<Rule, Role[]> = {
  auth: ['admin', 'prod-admin', 'analyst', 'carver', 'dev-user'],
  super: ['admin'],
  envAdmin: ['admin', 'prod-admin'],
  envUser: ['admin', 'prod-admin', 'analyst', 'carver'],
  envCarve: ['admin', 'prod-admin', 'carver'],
};

interface Endpoint {
  name: string;
  rule: Rule;
  method: string;
  path: string | ((t: Tokens) => string);
  body?: unknown;
}
type Tokens = Record<Role, string> & { nodeUuid: string };

const ENDPOINTS: Endpoint[] = [
  { name: '4.3 own password', rule: 'auth', method: 'POST', path: '/api/v1/users/me/password', body: { current_password: DEV_PASSWORD } },
  {
    name: '4.4 WebAuthn remove',
    rule: 'auth',
    method: 'DELETE',
    path: '/api/v1/mfa/webauthn/no-such-credential',
    body: { password: DEV_PASSWORD },
  },
  { name: 'WebAuthn list', rule: 'auth', method: 'GET', path: '/api/v1/mfa/webauthn' },
  { name: 'TOTP begin', rule: 'auth', method: 'POST', path: '/api/v1/users/me/mfa/totp' },
  { name: 'TOTP confirm', rule: 'auth', method: 'POST', path: '/api/v1/users/me/mfa/totp/confirm', body: { code: '000000' } },
  { name: 'TOTP disable', rule: 'auth', method: 'DELETE', path: '/api/v1/users/me/mfa/totp', body: { password: DEV_PASSWORD } },
  { name: 'users me', rule: 'auth', method: 'GET', path: '/api/v1/users/me' },
  { name: '4.5 users', rule: 'super', method: 'POST', path: '/api/v1/users/ghost/edit', body: { username: 'ghost', fullname: 'x' } },
  { name: 'users list', rule: 'super', method: 'GET', path: '/api/v1/users' },
  { name: '4.6 intervals', rule: 'envAdmin', method: 'PATCH', path: '/api/v1/environments/intervals/prod', body: { config_interval: 0 } },
  { name: '4.7 env map', rule: 'auth', method: 'GET', path: '/api/v1/environments/map/name' },
  { name: 'env read', rule: 'envUser', method: 'GET', path: '/api/v1/environments/prod' },
  { name: '4.8 enroll action', rule: 'envAdmin', method: 'POST', path: '/api/v1/environments/prod/enroll/bogus' },
  { name: '4.9 enroll target', rule: 'envAdmin', method: 'GET', path: '/api/v1/environments/prod/enroll/flags' },
  {
    name: '4.10 tags action',
    rule: 'envAdmin',
    method: 'POST',
    path: '/api/v1/tags/prod/edit',
    body: { name: 'no-such-tag', description: 'x' },
  },
  { name: 'tags list', rule: 'envUser', method: 'GET', path: '/api/v1/tags/prod' },
  { name: '4.11 nodes list', rule: 'envUser', method: 'GET', path: '/api/v1/nodes/prod?page_size=1' },
  { name: '4.12 node read', rule: 'envUser', method: 'GET', path: (t) => `/api/v1/nodes/prod/node/${t.nodeUuid}` },
  { name: '4.13 node delete', rule: 'envAdmin', method: 'POST', path: '/api/v1/nodes/prod/delete', body: { uuid: 'no-such-node' } },
  { name: '4.14 settings read', rule: 'envAdmin', method: 'GET', path: '/api/v1/settings/admin/prod' },
  {
    name: '4.15 settings update',
    rule: 'super',
    method: 'PATCH',
    path: '/api/v1/settings/admin/no_such_setting',
    body: { type: 'integer', integer: 1 },
  },
  { name: '4.16 carve read', rule: 'envCarve', method: 'GET', path: '/api/v1/carves/prod/no-such-carve' },
  { name: 'carves list', rule: 'envCarve', method: 'GET', path: '/api/v1/carves/prod' },
  { name: '4.17 carve action', rule: 'envCarve', method: 'POST', path: '/api/v1/carves/prod/complete/no-such-carve' },
  {
    name: '4.18 sink clone',
    rule: 'super',
    method: 'POST',
    path: '/api/v1/log-sinks/clone',
    body: { source_environment_id: 99998, target_environment_id: 99999 },
  },
  { name: 'sinks list', rule: 'super', method: 'GET', path: '/api/v1/log-sinks?environment_id=0' },
  {
    name: 'sink create',
    rule: 'super',
    method: 'POST',
    path: '/api/v1/log-sinks',
    body: { name: 'x', type: 'no-such-type', source: 'result', environment_id: 0 },
  },
  { name: 'sink delete', rule: 'super', method: 'DELETE', path: '/api/v1/log-sinks/999999' },
  { name: '4.19 audit logs', rule: 'auth', method: 'GET', path: '/api/v1/audit-logs?page_size=1' },
  { name: '4.20 stats', rule: 'auth', method: 'GET', path: '/api/v1/stats' },
];

let ts: TestServer;
let tokens: Tokens;
let expired: string;
let stale: string;

beforeAll(async () => {
  ts = await startTestServer();
  const roles: Role[] = ['admin', 'prod-admin', 'analyst', 'carver', 'dev-user'];
  const pairs = await Promise.all(roles.map(async (r) => [r, await ts.login(r, r === 'dev-user' ? 'dev' : 'prod')] as const));
  const node = await ts.server.deps.db
    .selectFrom('nodes')
    .innerJoin('environments', 'environments.id', 'nodes.environment_id')
    .select('nodes.uuid')
    .where('environments.name', '=', 'prod')
    .executeTakeFirstOrThrow();
  tokens = { ...(Object.fromEntries(pairs) as Record<Role, string>), nodeUuid: node.uuid };
  expired = expiredToken(ts, 'admin');
  // A session that ended because the user's password was changed by a super-admin.
  stale = await ts.login('querier');
  const changed = await ts.call('POST', '/api/v1/users/querier/edit', {
    token: tokens.admin,
    body: { username: 'querier', password: 'a-brand-new-password' },
  });
  expect(changed.status).toBe(200);
});
afterAll(() => ts?.close());

const denied = (r: ApiReply) => r.status === 401 || (r.status === 403 && ['forbidden', 'csrf'].includes(r.body?.code));

function call(e: Endpoint, token: string | undefined) {
  const path = typeof e.path === 'function' ? e.path(tokens) : e.path;
  return ts.call(e.method, path, { token, body: e.body });
}

describe.each(ENDPOINTS)('$name ($method, needs $rule)', (e) => {
  it.each(['admin', 'prod-admin', 'analyst', 'carver', 'dev-user'] as Role[])('as %s', async (role) => {
    const r = await call(e, tokens[role]);
    if (ALLOWED[e.rule].includes(role)) {
      expect(denied(r), `${role} should pass: ${r.status} ${JSON.stringify(r.body)}`).toBe(false);
      expect(r.status).toBeLessThan(500);
    } else {
      expect(r.status, JSON.stringify(r.body)).toBe(403);
      expect(r.body).toMatchObject({ code: 'forbidden', error: expect.any(String) });
    }
  });

  it('without a token: 401 unauthorized', async () => {
    const r = await call(e, undefined);
    expect(r.status).toBe(401);
    expect(r.body.code).toBe('unauthorized');
  });

  it('with a forged token: 401 unauthorized', async () => {
    const r = await call(e, forgedToken());
    expect(r.status).toBe(401);
    expect(r.body.code).toBe('unauthorized');
  });

  it('with an expired token: 401 token_expired', async () => {
    const r = await call(e, expired);
    expect(r.status).toBe(401);
    expect(r.body.code).toBe('token_expired');
  });

  it('with the token of a user whose password changed: 401', async () => {
    const r = await call(e, stale);
    expect(r.status).toBe(401);
    expect(['token_expired', 'unauthorized']).toContain(r.body.code);
  });
});

describe('open endpoints', () => {
  it('/error needs no token', async () => {
    expect((await ts.call('GET', '/error')).status).toBe(500);
  });
  it('login and MFA login need no token', async () => {
    expect((await ts.call('POST', '/api/v1/login/prod', { body: { username: 'admin', password: DEV_PASSWORD } })).status).toBe(200);
    expect((await ts.call('POST', '/api/v1/login/mfa', { body: { challenge: 'x', code: '123456', method: 'totp' } })).status).toBe(400);
  });
  it('denied requests are audited, in aggregate per address and user', async () => {
    await ts.server.denials.flush();
    const rows = await ts.server.deps.db.selectFrom('audit_logs').selectAll().where('line', 'like', 'denied %').execute();
    expect(rows.reduce((n, r) => n + r.count, 0)).toBeGreaterThan(ENDPOINTS.length);
    expect(rows.some((r) => r.username === 'dev-user' && r.severity === 2)).toBe(true);
  });
});
