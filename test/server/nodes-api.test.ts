// The skeleton endpoints over real HTTP: login (4.1), env map (4.7), nodes (4.11-4.13), /error
// (4.21), and the error/auth rules every endpoint shares.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/api-server.js';
import { randomId, signJwt } from '../../src/server/lib/crypto.js';

let ts: TestServer;
let admin: string;

beforeAll(async () => {
  ts = await startTestServer();
  admin = await ts.login('admin');
});
afterAll(() => ts?.close());

const expectError = (r: { status: number; body: any }, status: number, code: string) => {
  expect(r.status).toBe(status);
  expect(r.body).toMatchObject({ code, error: expect.any(String) });
  expect(r.body.error.length).toBeGreaterThan(3);
};

describe('login (4.1)', () => {
  it('returns a JWT and a 32-hex csrf_token', async () => {
    const r = await ts.call('POST', '/api/v1/login/prod', { body: { username: 'admin', password: 'test-password-1' } });
    expect(r.status).toBe(200);
    expect(r.body.token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(r.body.csrf_token).toMatch(/^[0-9a-f]{32}$/);
    const claims = JSON.parse(Buffer.from(r.body.token.split('.')[1], 'base64url').toString());
    expect(claims).toMatchObject({ sub: 'admin', iss: 'fleetctl' });
    expect(claims.exp - claims.iat).toBe(3 * 3600);
    expect(typeof claims.jti).toBe('string');
  });

  it('gives one message for a wrong password and an unknown user', async () => {
    const a = await ts.call('POST', '/api/v1/login/prod', { body: { username: 'admin', password: 'nope' } });
    const b = await ts.call('POST', '/api/v1/login/prod', { body: { username: 'ghost', password: 'nope' } });
    expectError(a, 401, 'unauthorized');
    expect(b.body).toEqual(a.body);
  });

  it('404 for an unknown env, 403 for a user without access to it', async () => {
    expectError(await ts.call('POST', '/api/v1/login/nowhere', { body: { username: 'admin', password: 'x' } }), 404, 'not_found');
    expectError(
      await ts.call('POST', '/api/v1/login/prod', { body: { username: 'dev-user', password: 'test-password-1' } }),
      403,
      'forbidden',
    );
  });

  it('validates exp_hours and the body', async () => {
    expectError(
      await ts.call('POST', '/api/v1/login/prod', { body: { username: 'admin', password: 'test-password-1', exp_hours: 721 } }),
      400,
      'bad_request',
    );
    expectError(await ts.call('POST', '/api/v1/login/prod', { body: { username: 'admin', password: 42 } }), 400, 'bad_request');
    expectError(await ts.call('POST', '/api/v1/login/prod', { rawBody: '{"username": "admin", ' }), 400, 'invalid_json');
    expectError(await ts.call('POST', '/api/v1/login/prod', { rawBody: 'x'.repeat(2 * 1024 * 1024) }), 400, 'bad_request');
    const ok = await ts.call('POST', '/api/v1/login/prod', {
      body: { username: 'admin', password: 'test-password-1', exp_hours: 720, extra: 'ignored' },
    });
    expect(ok.status).toBe(200);
  });

  it('audits failed and successful logins', async () => {
    await ts.call('POST', '/api/v1/login/prod', { body: { username: 'analyst', password: 'bad' } });
    const rows = await ts.server.deps.db
      .selectFrom('audit_logs')
      .selectAll()
      .where('username', '=', 'analyst')
      .where('log_type', '=', 1)
      .execute();
    expect(rows.some((r) => r.severity === 2 && /failed login/.test(r.line))).toBe(true);
    expect(rows.every((r) => !r.line.includes('bad'))).toBe(true);
  });
});

describe('authentication of API calls', () => {
  const nodes = (token?: string, headers?: Record<string, string>) => ts.call('GET', '/api/v1/nodes/prod?page_size=1', { token, headers });

  it('401 without a token, with a malformed header, or with a forged token', async () => {
    expectError(await nodes(), 401, 'unauthorized');
    expectError(await nodes(undefined, { authorization: 'Basic abc' }), 401, 'unauthorized');
    const forged = signJwt({ sub: 'admin', iss: 'fleetctl', iat: 1, exp: 4102444800, jti: randomId() }, Buffer.alloc(32, 7));
    expectError(await nodes(forged), 401, 'unauthorized');
  });

  it('401 token_expired for an expired token', async () => {
    const iat = Math.floor(Date.now() / 1000) - 7200;
    const expired = signJwt({ sub: 'admin', iss: 'fleetctl', iat, exp: iat + 3600, jti: randomId() }, ts.server.deps.config.jwtSecret);
    expectError(await nodes(expired), 401, 'token_expired');
  });

  it('accepts the scheme word in any case', async () => {
    expect((await nodes(undefined, { authorization: `bEaReR ${admin}` })).status).toBe(200);
  });

  it('checks X-CSRF-Token when sent', async () => {
    const login = await ts.call('POST', '/api/v1/login/prod', { body: { username: 'admin', password: 'test-password-1' } });
    expect((await nodes(login.body.token, { 'x-csrf-token': login.body.csrf_token })).status).toBe(200);
    expectError(await nodes(login.body.token, { 'x-csrf-token': '0'.repeat(32) }), 403, 'csrf');
  });

  it('403 for a user of another environment, and the denial is audited', async () => {
    const devUser = await ts.login('dev-user', 'dev');
    expectError(await nodes(devUser), 403, 'forbidden');
    const rows = await ts.server.deps.db
      .selectFrom('audit_logs')
      .selectAll()
      .where('username', '=', 'dev-user')
      .where('log_type', '=', 9)
      .execute();
    expect(rows.length).toBeGreaterThan(0);
  });
});

describe('nodes list (4.11)', () => {
  const list = (qs: string, token = admin) => ts.call('GET', `/api/v1/nodes/prod${qs}`, { token });

  it('pages with the contract defaults', async () => {
    const r = await list('');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ page: 1, page_size: 50, total_items: 1200, total_pages: 24 });
    expect(r.body.items).toHaveLength(50);
  });

  it('clamps page_size to 500 and answers [] past the end', async () => {
    const big = await list('?page_size=10000');
    expect(big.body.page_size).toBe(500);
    expect(big.body.items).toHaveLength(500);
    const past = await list('?page=99');
    expect(past.status).toBe(200);
    expect(past.body.items).toEqual([]);
    expect(past.body.total_items).toBe(1200);
  });

  it('every item once across pages', async () => {
    const seen: string[] = [];
    for (let page = 1; page <= 3; page++)
      seen.push(...(await list(`?page=${page}&page_size=500&sort=hostname`)).body.items.map((n: any) => n.uuid));
    expect(seen).toHaveLength(1200);
    expect(new Set(seen).size).toBe(1200);
  });

  it('400 {code, error} for bad query parameters', async () => {
    for (const qs of ['?page=0', '?page=abc', '?page_size=-1', '?status=sleeping', '?platform=amiga', '?sort=color', '?order=sideways']) {
      expectError(await list(qs), 400, 'bad_request');
    }
  });

  it('accepts dir as an alias of order and an empty result is []', async () => {
    const asc = await list('?sort=hostname&dir=desc&page_size=2');
    const desc = await list('?sort=hostname&order=desc&page_size=2');
    expect(asc.body.items.map((n: any) => n.uuid)).toEqual(desc.body.items.map((n: any) => n.uuid));
    const none = await list('?q=zzzz-no-such-node');
    expect(none.body).toEqual({ items: [], page: 1, page_size: 50, total_items: 0, total_pages: 0 });
  });

  it('derives health, posture and uptime', async () => {
    const items = (await list('?status=inactive&page_size=500')).body.items;
    for (const n of items) {
      expect(n.health.signals).toContain('inactive');
      expect(['unhealthy', 'unknown']).toContain(n.health.status);
      expect(n.uptime.total_seconds).toBe(n.uptime.days * 86400 + n.uptime.hours * 3600 + n.uptime.minutes * 60 + n.uptime.seconds);
      expect(n.uptime.last_seen).toBe(n.last_seen);
    }
    const never = items.find((n: any) => n.last_seen === '0001-01-01T00:00:00Z');
    expect(never?.health.status).toBe('unknown');
    expect(never?.posture.risk_level).toBe('unknown');
  });

  it('404 for an unknown environment', async () => {
    expectError(await ts.call('GET', '/api/v1/nodes/atlantis', { token: admin }), 404, 'not_found');
  });
});

describe('node read and delete (4.12, 4.13)', () => {
  it('finds a node by uuid in any case, hostname or localname; node_key only for env admins', async () => {
    const row = await ts.server.deps.db.selectFrom('nodes').selectAll().where('hostname', '=', 'prod-web-0001').executeTakeFirst();
    const ref = row ?? (await ts.server.deps.db.selectFrom('nodes').selectAll().where('environment_id', '=', 1).executeTakeFirstOrThrow());
    for (const key of [ref.uuid, ref.uuid.toUpperCase(), ref.hostname]) {
      const r = await ts.call('GET', `/api/v1/nodes/prod/node/${encodeURIComponent(key)}`, { token: admin });
      expect(r.status).toBe(200);
      expect(r.body.uuid).toBe(ref.uuid);
      expect(r.body.node_key).toBe(ref.node_key);
    }
    const analyst = await ts.login('analyst');
    const r = await ts.call('GET', `/api/v1/nodes/prod/node/${ref.uuid}`, { token: analyst });
    expect(r.status).toBe(200);
    expect(r.body).not.toHaveProperty('node_key');
  });

  it('409 when a name matches several nodes, listing the uuids', async () => {
    const two = await ts.server.deps.db.selectFrom('nodes').select(['id', 'uuid']).where('environment_id', '=', 1).limit(2).execute();
    await ts.server.deps.db
      .updateTable('nodes')
      .set({ localname: 'twin-host' })
      .where(
        'id',
        'in',
        two.map((t) => t.id),
      )
      .execute();
    const r = await ts.call('GET', '/api/v1/nodes/prod/node/twin-host', { token: admin });
    expectError(r, 409, 'conflict');
    expect(r.body.uuids.sort()).toEqual(two.map((t) => t.uuid).sort());
  });

  it("a node's own identifier wins over the hostnames of others (osquery's --host_identifier=hostname)", async () => {
    const [named, other] = await ts.server.deps.db
      .selectFrom('nodes')
      .select(['id', 'uuid', 'hostname'])
      .where('environment_id', '=', 1)
      .orderBy('id')
      .limit(2)
      .execute();
    await ts.server.deps.db.updateTable('nodes').set({ uuid: 'db-host-7', hostname: 'db-host-7' }).where('id', '=', named.id).execute();
    await ts.server.deps.db.updateTable('nodes').set({ hostname: 'db-host-7' }).where('id', '=', other.id).execute();
    try {
      const r = await ts.call('GET', '/api/v1/nodes/prod/node/db-host-7', { token: admin });
      expect(r.status).toBe(200);
      expect(r.body.uuid).toBe('db-host-7');
    } finally {
      for (const n of [named, other])
        await ts.server.deps.db.updateTable('nodes').set({ uuid: n.uuid, hostname: n.hostname }).where('id', '=', n.id).execute();
    }
  });

  it('deletes with env admin, 404 for unknown, 403 for env users; nothing changes on failure', async () => {
    const victim = await ts.server.deps.db
      .selectFrom('nodes')
      .select(['id', 'uuid'])
      .where('environment_id', '=', 1)
      .orderBy('id', 'desc')
      .executeTakeFirstOrThrow();
    const analyst = await ts.login('analyst');
    expectError(await ts.call('POST', '/api/v1/nodes/prod/delete', { token: analyst, body: { uuid: victim.uuid } }), 403, 'forbidden');
    expectError(await ts.call('POST', '/api/v1/nodes/prod/delete', { token: admin, body: { uuid: 'nope' } }), 404, 'not_found');
    expectError(await ts.call('POST', '/api/v1/nodes/prod/delete', { token: admin, body: { uuid: 5 } }), 400, 'bad_request');
    expectError(await ts.call('POST', '/api/v1/nodes/prod/delete', { token: admin, rawBody: '{' }), 400, 'invalid_json');
    expect(await ts.server.deps.db.selectFrom('nodes').select('id').where('id', '=', victim.id).executeTakeFirst()).toBeDefined();
    const prodAdmin = await ts.login('prod-admin');
    const ok = await ts.call('POST', '/api/v1/nodes/prod/delete', { token: prodAdmin, body: { uuid: victim.uuid } });
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ message: expect.stringContaining(victim.uuid) });
    expect(await ts.server.deps.db.selectFrom('nodes').select('id').where('id', '=', victim.id).executeTakeFirst()).toBeUndefined();
    expect(await ts.server.deps.db.selectFrom('node_tags').select('tag_id').where('node_id', '=', victim.id).execute()).toEqual([]);
  });
});

describe('environment map (4.7)', () => {
  it('keys by id, name or uuid; 400 invalid_target otherwise', async () => {
    const byName = await ts.call('GET', '/api/v1/environments/map/name', { token: admin });
    expect(Object.keys(byName.body).sort()).toEqual(['dev', 'prod', 'staging']);
    expect(byName.body.prod).toEqual({ id: expect.any(Number), name: 'prod', uuid: expect.any(String) });
    const byUuid = await ts.call('GET', '/api/v1/environments/map/uuid', { token: admin });
    expect(byUuid.body[byName.body.prod.uuid].name).toBe('prod');
    expectError(await ts.call('GET', '/api/v1/environments/map/color', { token: admin }), 400, 'invalid_target');
  });
});

describe('/error (4.21) and unknown routes', () => {
  it('answers 500 with a bare JSON string, other statuses with {code, error}', async () => {
    const r = await ts.call('GET', '/error');
    expect(r.status).toBe(500);
    expect(typeof r.body).toBe('string');
    for (const [status, code] of [
      [400, 'bad_request'],
      [401, 'unauthorized'],
      [403, 'forbidden'],
      [404, 'not_found'],
      [409, 'conflict'],
      [429, 'rate_limited'],
      [503, 'unavailable'],
    ] as const) {
      const e = await ts.call('GET', `/error?status=${status}`);
      expectError(e, status, code);
      if (status === 429 || status === 503) expect(e.headers.get('retry-after')).toMatch(/^\d+$/);
    }
  });

  it('malformed HTTP gets 400 {code, error} too', async () => {
    const { connect } = await import('node:net');
    const { port } = new URL(ts.url);
    const reply = await new Promise<string>((resolve, reject) => {
      const sock = connect(Number(port), '127.0.0.1', () =>
        sock.write('GET /api/v1/stats HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n'),
      );
      let data = '';
      sock.on('data', (d: Buffer) => (data += d.toString('latin1')));
      sock.on('end', () => resolve(data));
      sock.on('error', reject);
    });
    expect(reply).toMatch(/^HTTP\/1\.1 400/);
    expect(JSON.parse(reply.slice(reply.indexOf('\r\n\r\n') + 4))).toEqual({ code: 'bad_request', error: 'malformed HTTP request' });
  });

  it('unknown paths are 404 {code, error}', async () => {
    expectError(await ts.call('GET', '/api/v1/nope', { token: admin }), 404, 'not_found');
  });
});

describe('login rate limit', () => {
  it('answers 429 with Retry-After after 10 attempts a minute per IP', async () => {
    const limited = await startTestServer({ loginRateLimit: 10 });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 11; i++)
        statuses.push((await limited.call('POST', '/api/v1/login/prod', { body: { username: 'admin', password: 'bad' } })).status);
      expect(statuses.slice(0, 10).every((s) => s === 401)).toBe(true);
      const last = await limited.call('POST', '/api/v1/login/prod', { body: { username: 'admin', password: 'test-password-1' } });
      expectError(last, 429, 'rate_limited');
      expect(Number(last.headers.get('retry-after'))).toBeGreaterThan(0);
      // Refusals are audited once per window, so a flood of attempts writes one row.
      expect((await limited.call('POST', '/api/v1/login/prod', { body: { username: 'admin', password: 'x' } })).status).toBe(429);
      const rows = await limited.server.deps.db
        .selectFrom('audit_logs')
        .selectAll()
        .where('line', 'like', '%too many login attempts%')
        .execute();
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ log_type: 9, severity: 2, source_ip: '127.0.0.1' });
    } finally {
      await limited.close();
    }
  });
});
