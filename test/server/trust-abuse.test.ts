// Issue 9.4: a flood of unauthenticated requests is limited per address and audited in
// aggregate; password guesses spread over addresses are limited per account, without locking
// the real user out of an address they logged in from before.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent, request } from 'undici';
import { DEV_PASSWORD, startTestServer, type TestServer } from '../helpers/api-server.js';

describe('a flood of unauthenticated requests', () => {
  let ts: TestServer;
  beforeAll(async () => {
    ts = await startTestServer({ deniedRateLimit: 60 });
  });
  afterAll(() => ts?.close());

  // 5,000 show the bound (one row per address and minute) as well as the 20,000 of docs/api.md.
  const FLOOD = 5_000;
  it('5,000 requests without a token: answered 401 then 429, and at most 50 audit rows (with the count)', async () => {
    const before = await ts.server.deps.db.selectFrom('audit_logs').select('id').execute();
    const agent = new Agent({ connections: 16 });
    const statuses = new Map<number, number>();
    let next = 0;
    const worker = async () => {
      while (next < FLOOD) {
        next++;
        const r = await request(`${ts.url}/api/v1/users`, { dispatcher: agent });
        await r.body.dump();
        statuses.set(r.statusCode, (statuses.get(r.statusCode) ?? 0) + 1);
      }
    };
    await Promise.all(Array.from({ length: 16 }, worker));
    await agent.close();
    expect(statuses.get(401)).toBe(60);
    expect(statuses.get(429)).toBe(FLOOD - 60);
    await ts.server.denials.flush();
    const rows = await ts.server.deps.db
      .selectFrom('audit_logs')
      .selectAll()
      .where('id', 'not in', before.length ? before.map((r) => r.id) : [0])
      .execute();
    expect(rows.length).toBeLessThanOrEqual(50);
    expect(rows.reduce((n, r) => n + r.count, 0)).toBe(FLOOD);
    expect(rows[0]).toMatchObject({ log_type: 9, severity: 2, source_ip: '127.0.0.1', username: '' });
    expect(rows[0].line).toMatch(/denied requests from 127\.0\.0\.1/);
    // A valid token from the same address is not refused by the per-address limit.
    expect((await ts.call('GET', '/api/v1/users', { token: await ts.login('admin') })).status).toBe(200);
  });
});

describe('per-account login limit', () => {
  let ts: TestServer;
  beforeAll(async () => {
    ts = await startTestServer({ accountLoginLimit: 3 });
  });
  afterAll(() => ts?.close());

  /** A login as if from `ip` (trustProxy is off: the address is set on the guard directly). */
  const attempt = async (username: string, password: string, ip: string) => {
    const { deps } = ts.server;
    try {
      const { login } = await import('../../src/server/services/auth/auth.js');
      await login(deps, 'prod', { username, password }, ip);
      return 200;
    } catch (e) {
      return (e as { status: number }).status;
    }
  };

  it('guesses from many addresses are refused 429 after the limit; the address the user logged in from still works', async () => {
    expect(await attempt('analyst', DEV_PASSWORD, '10.0.0.1')).toBe(200); // the user's usual address
    for (const ip of ['10.9.0.1', '10.9.0.2', '10.9.0.3']) expect(await attempt('analyst', 'wrong-guess', ip)).toBe(401);
    // The fourth address: refused before the password is checked, even with the right one.
    expect(await attempt('analyst', 'wrong-guess', '10.9.0.4')).toBe(429);
    expect(await attempt('analyst', DEV_PASSWORD, '10.9.0.5')).toBe(429);
    // The real user, from an address they logged in from: not locked out.
    expect(await attempt('analyst', DEV_PASSWORD, '10.0.0.1')).toBe(200);
    // Other accounts are not affected; unknown usernames are limited the same way (no oracle).
    expect(await attempt('carver', DEV_PASSWORD, '10.9.0.6')).toBe(200);
    for (const ip of ['10.9.1.1', '10.9.1.2', '10.9.1.3']) expect(await attempt('nobody-here', 'x-guess-1', ip)).toBe(401);
    expect(await attempt('nobody-here', 'x-guess-1', '10.9.1.4')).toBe(429);
  });

  it('over HTTP the refusal is 429 rate_limited with Retry-After (the window, at most 15 minutes)', async () => {
    for (let i = 0; i < 3; i++) await ts.call('POST', '/api/v1/login/prod', { body: { username: 'dev-user', password: 'wrong-guess' } });
    const r = await ts.call('POST', '/api/v1/login/prod', { body: { username: 'dev-user', password: DEV_PASSWORD } });
    expect(r.status).toBe(429);
    expect(r.body).toEqual({ code: 'rate_limited', error: expect.stringContaining('this account') });
    expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(Number(r.headers.get('retry-after'))).toBeLessThanOrEqual(900);
  });
});

describe('behind a load balancer (--trust-proxy)', () => {
  const attempt = (s: TestServer, forwardedFor: string) =>
    s.call('POST', '/api/v1/login/prod', {
      body: { username: 'nobody', password: 'wrong-password-1' },
      headers: { 'x-forwarded-for': forwardedFor },
    });

  it('a trusted proxy: limits and audit key on the forwarded client address', async () => {
    const s = await startTestServer({ loginRateLimit: 3, trustProxy: ['127.0.0.1'] });
    try {
      for (let i = 0; i < 3; i++) expect((await attempt(s, '198.51.100.7')).status).toBe(401);
      expect((await attempt(s, '198.51.100.7')).status).toBe(429);
      expect((await attempt(s, '198.51.100.8')).status).toBe(401); // another client behind the same proxy
      const ips = await s.server.deps.db.selectFrom('audit_logs').select('source_ip').where('source_ip', 'like', '198.51.100.%').execute();
      expect(new Set(ips.map((r) => r.source_ip))).toEqual(new Set(['198.51.100.7', '198.51.100.8']));
    } finally {
      await s.close();
    }
  });

  it('without it, X-Forwarded-For is ignored: a client cannot pick its own address', async () => {
    const s = await startTestServer({ loginRateLimit: 3 });
    try {
      for (let i = 0; i < 3; i++) expect((await attempt(s, `198.51.100.${10 + i}`)).status).toBe(401);
      expect((await attempt(s, '198.51.100.99')).status).toBe(429);
    } finally {
      await s.close();
    }
  });
});
