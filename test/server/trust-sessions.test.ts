// Issue 9.2: the server ends sessions. The session row's expiry and its removal (logout) are
// enforced on every request, and dead rows are purged on the cleanup_sessions schedule.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/api-server.js';
import { jwtClaims } from '../helpers/tokens.js';

let ts: TestServer;
beforeAll(async () => {
  ts = await startTestServer();
});
afterAll(() => ts?.close());

const sessions = (jti: string) => ts.server.deps.db.selectFrom('sessions').selectAll().where('jti', '=', jti).execute();

describe('POST /api/v1/logout', () => {
  it('ends the calling session: 200 {message}, then the token answers 401 token_expired; other sessions live on', async () => {
    const token = await ts.login('analyst');
    const other = await ts.login('analyst');
    expect((await ts.call('GET', '/api/v1/users/me', { token })).status).toBe(200);
    const out = await ts.call('POST', '/api/v1/logout', { token });
    expect(out.status).toBe(200);
    expect(out.body).toEqual({ message: expect.any(String) });
    const after = await ts.call('GET', '/api/v1/users/me', { token });
    expect(after.status).toBe(401);
    expect(after.body).toEqual({ code: 'token_expired', error: expect.stringContaining('session ended') });
    expect(await sessions(jwtClaims(token).jti)).toEqual([]);
    expect((await ts.call('GET', '/api/v1/users/me', { token: other })).status).toBe(200);
    // A second logout with the ended token is a 401 like any other call.
    expect((await ts.call('POST', '/api/v1/logout', { token })).status).toBe(401);
  });

  it('is audited (log_type 2, logout) with the user and address', async () => {
    const token = await ts.login('carver');
    await ts.call('POST', '/api/v1/logout', { token });
    const row = await ts.server.deps.db
      .selectFrom('audit_logs')
      .selectAll()
      .where('log_type', '=', 2)
      .where('username', '=', 'carver')
      .executeTakeFirst();
    expect(row).toMatchObject({ line: 'user carver logged out', source_ip: '127.0.0.1' });
  });

  it('without a token: 401', async () => {
    expect((await ts.call('POST', '/api/v1/logout')).status).toBe(401);
  });
});

describe('session expiry and purge', () => {
  it("a session row past its own expires_at is refused though the JWT's exp is hours away", async () => {
    const token = await ts.login('analyst');
    const { jti } = jwtClaims(token);
    await ts.server.deps.db
      .updateTable('sessions')
      .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
      .where('jti', '=', jti)
      .execute();
    const r = await ts.call('GET', '/api/v1/users/me', { token });
    expect(r.status).toBe(401);
    expect(r.body.code).toBe('token_expired');
  });

  it('dead sessions are purged on the admin/cleanup_sessions schedule', async () => {
    const admin = await ts.login('admin');
    const set = await ts.call('PATCH', '/api/v1/settings/admin/cleanup_sessions', { token: admin, body: { integer: 1 } });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    const dead = jwtClaims(await ts.login('analyst')).jti;
    const live = jwtClaims(await ts.login('analyst')).jti;
    await ts.server.deps.db
      .updateTable('sessions')
      .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
      .where('jti', '=', dead)
      .execute();
    // The purge runs in the background: waited for (the test's timeout catches a purge that never
    // comes), asserting what it did, not how fast.
    while ((await sessions(dead)).length > 0) await new Promise((r) => setTimeout(r, 200));
    expect(await sessions(live)).toHaveLength(1);
  });
});
