// Audit logs (4.19) over real HTTP: shape, order, filters, pagination, and who sees what.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/api-server.js';
import { AUDIT_ENTRY, PAGE, expectError, expectFields } from './activity-spec-fields.js';

let ts: TestServer;
let admin: string;
let analyst: string;

beforeAll(async () => {
  ts = await startTestServer();
  [admin, analyst] = await Promise.all([ts.login('admin', 'prod'), ts.login('analyst', 'prod')]);
});
afterAll(async () => ts?.close());

const db = () => ts.server.deps.db;
const audit = (query = '', token = admin) => ts.call('GET', `/api/v1/audit-logs${query ? `?${query}` : ''}`, { token });
const enc = encodeURIComponent;

/** Every page of a query, checking the counters of each. */
async function allPages(query: string, pageSize: number, token = admin): Promise<{ items: any[]; total: number }> {
  const first = await audit(`${query}&page_size=${pageSize}`, token);
  expect(first.status).toBe(200);
  const total = first.body.total_items;
  const pages = first.body.total_pages;
  expect(pages).toBe(total === 0 ? 0 : Math.ceil(total / pageSize));
  const items = [...first.body.items];
  for (let page = 2; page <= pages; page++) {
    const r = await audit(`${query}&page_size=${pageSize}&page=${page}`, token);
    expect(r.body).toMatchObject({ page, page_size: pageSize, total_items: total, total_pages: pages });
    expect(r.body.items.length).toBe(page < pages ? pageSize : total - pageSize * (pages - 1));
    items.push(...r.body.items);
  }
  const past = await audit(`${query}&page_size=${pageSize}&page=${pages + 1}`, token);
  expect(past.status).toBe(200);
  expect(past.body).toMatchObject({ items: [], total_items: total, total_pages: pages });
  return { items, total };
}

describe('GET /api/v1/audit-logs', () => {
  it('returns a page of entries with every field of 2.9, newest first', async () => {
    const r = await audit();
    expect(r.status).toBe(200);
    expectFields(r.body, PAGE, 'page');
    expect(r.body).toMatchObject({ page: 1, page_size: 50 });
    expect(r.body.total_items).toBeGreaterThan(30);
    expect(r.body.items.length).toBe(Math.min(50, r.body.total_items));
    for (const e of r.body.items) expectFields(e, AUDIT_ENTRY, `entry ${e.id}`);
    const ids = r.body.items.map((e: any) => e.id);
    expect(ids).toEqual([...ids].sort((a, b) => b - a));
    // Time order follows id order, up to writes that ran at the same moment: created_at is the
    // server's clock when a row was prepared, the id comes at insertion, and concurrent writes on
    // a pool of connections may insert in the other order (seen once: 1 ms apart, on PostgreSQL).
    const times: number[] = r.body.items.map((e: any) => Date.parse(e.created_at));
    times.forEach((t, i) => i > 0 && expect(t, `entry ${ids[i]} after ${ids[i - 1]}`).toBeLessThanOrEqual(times[i - 1] + 1000));
    // The demo history spans several days, users and kinds of entry.
    expect(new Set(r.body.items.map((e: any) => e.username)).size).toBeGreaterThan(4);
    expect(new Set(r.body.items.map((e: any) => e.log_type))).toEqual(new Set([1, 3, 4, 5, 6, 7, 8, 9, 10]));
    const oldest = Math.min(...r.body.items.map((e: any) => Date.parse(e.created_at)));
    expect(Date.now() - oldest).toBeGreaterThan(3 * 86400_000);
  });

  it('pages through everything: each entry exactly once, counters right, past the end empty', async () => {
    const { items, total } = await allPages('', 7);
    const dbCount = Number(
      (
        await db()
          .selectFrom('audit_logs')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
    expect(total).toBe(dbCount);
    const ids = items.map((e) => e.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.length).toBe(dbCount);
    expect(ids).toEqual([...ids].sort((a, b) => b - a));
  });

  it('a page read in any order, near a page read before, is the page the whole list has there; a write moves every page', async () => {
    // Pages start from the nearest page read before at the same audit counter (audit-query.ts
    // pageAnchor): every page must still be exactly the slice of the full newest-first list.
    for (const query of ['', 'username=admin', `q=${enc('login')}`, 'q=lo']) {
      const size = 3;
      const { items } = await allPages(query, 50);
      const want = items.map((e) => e.id);
      const pages = Math.ceil(want.length / size);
      expect(pages, query).toBeGreaterThan(3);
      for (const page of [pages, 2, pages - 1, 3, 1, pages - 2, 2, pages + 1]) {
        const r = await audit(`${query}&page_size=${size}&page=${page}`);
        expect(
          r.body.items.map((e: any) => e.id),
          `${query} page ${page}`,
        ).toEqual(want.slice((page - 1) * size, page * size));
      }
    }
    const before = (await audit('page_size=3&page=4')).body.items.map((e: any) => e.id);
    // A new entry (a failed login writes one) is first: every page after it starts one entry later.
    expect((await ts.call('POST', '/api/v1/login/prod', { body: { username: 'nobody-anchor', password: 'x-wrong-1' } })).status).toBe(401);
    const after = await audit('page_size=3&page=4');
    const newest = (await audit('page_size=1')).body.items[0];
    expect(newest.line).toMatch(/nobody-anchor/);
    const whole = (await allPages('', 50)).items.map((e) => e.id);
    expect(after.body.items.map((e: any) => e.id)).toEqual(whole.slice(9, 12));
    expect(after.body.items.map((e: any) => e.id).slice(1)).toEqual(before.slice(0, 2));
  });

  it('filters username and service exactly', async () => {
    const carver = await allPages('username=carver', 5);
    expect(carver.total).toBeGreaterThan(0);
    expect(carver.items.every((e) => e.username === 'carver')).toBe(true);
    expect((await audit('username=carve')).body.total_items).toBe(0);
    expect((await audit(`username=${enc('carver%')}`)).body.total_items).toBe(0);
    const svc = await audit('service=admin');
    expect(svc.body.total_items).toBeGreaterThan(0);
    expect(svc.body.items.every((e: any) => e.service === 'admin')).toBe(true);
    const both = await audit('service=admin&username=prod-admin');
    expect(both.body.items.every((e: any) => e.service === 'admin' && e.username === 'prod-admin')).toBe(true);
  });

  it('filters env by name or UUID; unknown env 404', async () => {
    const env = await db().selectFrom('environments').select(['id', 'uuid']).where('name', '=', 'staging').executeTakeFirstOrThrow();
    const byName = await allPages('env=staging', 10);
    expect(byName.total).toBeGreaterThan(0);
    expect(byName.items.every((e) => e.environment_id === env.id && e.env_uuid === env.uuid)).toBe(true);
    const byUuid = await allPages(`env=${env.uuid}`, 10);
    expect(byUuid.items.map((e) => e.id)).toEqual(byName.items.map((e) => e.id));
    expectError(await audit('env=nope'), 404, 'not_found');
  });

  it('q is a case-insensitive substring of line, with % and _ literal', async () => {
    const r = await allPages(`q=${enc('FAILED LOGIN')}`, 50);
    expect(r.total).toBeGreaterThan(0);
    expect(r.items.every((e) => e.line.toLowerCase().includes('failed login'))).toBe(true);
    const expected = await db().selectFrom('audit_logs').select('id').where('line', 'like', '%failed login%').execute();
    expect(r.total).toBe(expected.length);
    expect((await audit(`q=${enc('%')}`)).body.total_items).toBe(0);
    const under = await allPages(`q=${enc('_')}`, 50);
    expect(under.total).toBeGreaterThan(0);
    expect(under.items.every((e) => e.line.includes('_'))).toBe(true);
    const all = Number(
      (
        await db()
          .selectFrom('audit_logs')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
    expect(under.total).toBeLessThan(all);
  });

  it('q finds exactly the entries whose line contains it, alone and with every other filter, newest first', async () => {
    const rows = await db().selectFrom('audit_logs').select(['id', 'line', 'username', 'service', 'environment_id']).execute();
    const prod = await db().selectFrom('environments').select('id').where('name', '=', 'prod').executeTakeFirstOrThrow();
    for (const q of ['logged', 'LOGIN', 'ed', 'e', 'tag pci', 'prod-admin', 'zz-no-such']) {
      for (const [filter, keep] of [
        ['', () => true],
        ['username=admin', (r: (typeof rows)[number]) => r.username === 'admin'],
        ['service=admin&env=prod', (r: (typeof rows)[number]) => r.service === 'admin' && r.environment_id === prod.id],
      ] as const) {
        const expected = rows
          .filter((r) => r.line.toLowerCase().includes(q.toLowerCase()) && keep(r))
          .map((r) => r.id)
          .sort((a, b) => b - a);
        const got = await allPages(`q=${enc(q)}${filter ? `&${filter}` : ''}`, 9);
        expect(
          got.items.map((e) => e.id),
          `q=${q} ${filter}`,
        ).toEqual(expected);
      }
    }
  });

  it('a failed login and a denied request appear in the log', async () => {
    const failed = await ts.call('POST', '/api/v1/login/prod', { body: { username: 'nobody-zz', password: 'wrong-password' } });
    expect(failed.status).toBe(401);
    const denied = await ts.call('GET', '/api/v1/log-sinks', { token: analyst });
    expect(denied.status).toBe(403);

    const f = await audit(`q=nobody-zz`);
    expect(f.body.items).toHaveLength(1);
    expect(f.body.items[0]).toMatchObject({ log_type: 1, severity: 2, username: 'nobody-zz', env_uuid: expect.stringMatching(/./) });
    const d = await audit(`username=analyst&q=${enc('denied GET /api/v1/log-sinks')}`);
    expect(d.body.items).toHaveLength(1);
    expect(d.body.items[0]).toMatchObject({ log_type: 9, severity: 2, username: 'analyst' });
    expect(d.body.items[0].source_ip).not.toBe('');
  });

  it('non-super-admins see only their own entries (exact username)', async () => {
    // Rows of look-alike users must not leak to "analyst".
    await db()
      .insertInto('audit_logs')
      .values(
        ['analyst2', 'Analyst', 'analys_'].map((username) => ({
          created_at: new Date().toISOString(),
          env_uuid: '',
          environment_id: 0,
          line: `look-alike row of ${username}`,
          log_type: 9,
          severity: 1,
          service: 'api',
          source_ip: '127.0.0.1',
          username,
        })),
      )
      .execute();
    const own = await allPages('', 4, analyst);
    const expected = await db().selectFrom('audit_logs').select('id').where('username', '=', 'analyst').orderBy('id', 'desc').execute();
    expect(own.total).toBe(expected.length);
    expect(own.items.map((e) => e.id)).toEqual(expected.map((e) => e.id));
    expect((await audit('username=admin', analyst)).body.total_items).toBe(0);
    expect((await audit(`q=${enc('look-alike')}`, analyst)).body.total_items).toBe(0);
    expect((await audit(`q=${enc('look-alike')}`)).body.total_items).toBe(3);
    const devUser = await ts.login('dev-user', 'dev');
    const dev = await audit('', devUser);
    expect(dev.status).toBe(200);
    expect(dev.body.total_items).toBeGreaterThan(0);
    expect(dev.body.items.every((e: any) => e.username === 'dev-user')).toBe(true);
  });

  it('a search counts its total only as far as the page needs: past 1,000 matches a lower bound (total_items_exact false) until the end', async () => {
    // After the other tests: 2,600 more rows would make their searches' totals bounds too.
    const rows = Array.from({ length: 2600 }, (_, i) => ({
      created_at: new Date().toISOString(),
      env_uuid: '',
      environment_id: 0,
      line: `bulk row ${i}`,
      log_type: 9,
      severity: 1,
      service: 'api',
      source_ip: '127.0.0.1',
      username: i % 2 ? 'carver' : 'ci-bot',
    }));
    for (let i = 0; i < rows.length; i += 400)
      await db()
        .insertInto('audit_logs')
        .values(rows.slice(i, i + 400))
        .execute();
    const matching = db().selectFrom('audit_logs').select('id').where('line', 'like', 'bulk row %').orderBy('id', 'desc');
    const want = (await matching.execute()).map((r) => r.id);
    expect(want).toHaveLength(2600);
    const q = `q=${enc('BULK row')}`;

    // Page 1 of 50: counted up to 1,000, which says there are pages after it.
    const first = await audit(`${q}&page_size=50`);
    expect(first.body).toMatchObject({ page: 1, total_items: 1000, total_pages: 20, total_items_exact: false });
    expect(first.body.items.map((e: any) => e.id)).toEqual(want.slice(0, 50));
    // Page 20 needs one past 1,000: counted up to 2,000.
    const p20 = await audit(`${q}&page_size=50&page=20`);
    expect(p20.body).toMatchObject({ total_items: 2000, total_pages: 40, total_items_exact: false });
    expect(p20.body.items.map((e: any) => e.id)).toEqual(want.slice(950, 1000));
    // The page that reaches the end knows the total exactly.
    const last = await audit(`${q}&page_size=50&page=52`);
    expect(last.body).toMatchObject({ total_items: 2600, total_pages: 52 });
    expect(last.body).not.toHaveProperty('total_items_exact');
    expect(last.body.items.map((e: any) => e.id)).toEqual(want.slice(2550));
    expect(await audit(`${q}&page_size=50&page=53`)).toMatchObject({ body: { items: [], total_items: 2600, total_pages: 52 } });

    // A client paging by total_pages (as `audit list --all` does) gets every match once, newest first.
    const got: number[] = [];
    for (let page = 1; ; page++) {
      const r = await audit(`${q}&page_size=500&page=${page}`);
      got.push(...r.body.items.map((e: any) => e.id));
      if (page >= r.body.total_pages || r.body.items.length === 0) break;
    }
    expect(got).toEqual(want);

    // With a username (1,300 matches): a bound as well; under 1,000 matches, or no q: exact.
    const carver = await audit(`${q}&username=carver&page_size=10`);
    expect(carver.body).toMatchObject({ total_items: 1000, total_pages: 100, total_items_exact: false });
    expect(carver.body.items.every((e: any) => e.username === 'carver' && e.line.startsWith('bulk row'))).toBe(true);
    const few = await audit(`q=${enc('bulk row 25')}&page_size=10`); // 25, 250-259, 2500-2599
    expect(few.body).toMatchObject({ total_items: 111, total_pages: 12 });
    expect(few.body).not.toHaveProperty('total_items_exact');
    const everything = await audit('page_size=10');
    expect(everything.body).not.toHaveProperty('total_items_exact');
    expect(everything.body.total_items).toBe(
      Number(
        (
          await db()
            .selectFrom('audit_logs')
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      ),
    );
  });

  it('bad pagination 400; page_size above 500 is clamped; no token 401', async () => {
    expectError(await audit('page=0'), 400, 'bad_request');
    expectError(await audit('page=-2'), 400, 'bad_request');
    expectError(await audit('page_size=abc'), 400, 'bad_request');
    const big = await audit('page_size=100000');
    expect(big.status).toBe(200);
    expect(big.body.page_size).toBe(500);
    expectError(await ts.call('GET', '/api/v1/audit-logs'), 401, 'unauthorized');
    expectError(await ts.call('GET', '/api/v1/audit-logs', { token: 'not-a-jwt' }), 401, 'unauthorized');
  });
});
