// The SQL check is bounded per request and per user (issue 29, docs/api.md "What the check may
// cost"): SQL never checked costs the user its length, at most 256 KB a request (413 beyond) and
// 1 MB per 10 minutes (429 with Retry-After beyond); SQL already checked costs nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SQL_MAX } from '../../src/lib/sql-check.js';
import { SQL_CHARS_PER_REQUEST, SQL_CHARS_PER_USER, SQL_WINDOW_MS } from '../../src/server/services/environments/sql-budget.js';
import { startTestServer, type TestServer } from '../helpers/api-server.js';

let ts: TestServer;
let admin: string;
let prodAdmin: string;

beforeAll(async () => {
  ts = await startTestServer({ devNodes: 20 });
  admin = await ts.login('admin');
  prodAdmin = await ts.login('prod-admin');
});
afterAll(() => ts?.close());

const put = (schedule: unknown, token = admin) => ts.call('PUT', '/api/v1/environments/prod/config/schedule', { token, body: schedule });
const schedule = () => ts.call('GET', '/api/v1/environments/prod/config/schedule', { token: admin });
const userId = async (name: string) =>
  (await ts.server.deps.db.selectFrom('users').select('id').where('username', '=', name).executeTakeFirstOrThrow()).id;
const spent = async (name: string) =>
  Number(
    (
      await ts.server.deps.db
        .selectFrom('rate_windows')
        .select('count')
        .where('scope', '=', 'sql')
        .where('key', '=', String(await userId(name)))
        .executeTakeFirst()
    )?.count ?? 0,
  );
/** A valid query of about `chars` characters, different for each `tag`. */
const query = (tag: string, chars: number) => {
  const head = `SELECT pid FROM processes WHERE name = '${tag}'`;
  return `${head} AND path NOT LIKE '${'x'.repeat(Math.max(0, chars - head.length - 24))}'`;
};

describe('per request', () => {
  it('more new SQL than 256 KB in one request is 413 before any parsing, nothing stored, nothing counted', async () => {
    const before = await schedule();
    const big = Object.fromEntries(
      Array.from({ length: Math.ceil(SQL_CHARS_PER_REQUEST / (SQL_MAX - 100)) + 1 }, (_, i) => [
        `big_${i}`,
        { query: query(`big-${i}`, SQL_MAX - 100), interval: 300 },
      ]),
    );
    const r = await put(big);
    expect(r.status).toBe(413);
    expect(r.body.code).toBe('bad_request');
    expect(r.body.error).toMatch(
      /^the request brings \d+ KB of SQL never checked before; one request may bring at most 256 KB: send the configuration in parts$/,
    );
    expect((await schedule()).body).toEqual(before.body);
    expect(await spent('admin')).toBe(0);
  });
});

describe('per user', () => {
  it('new SQL is counted to the user who sent it; the same SQL again costs nothing', async () => {
    const q = query('counted', 2000);
    expect((await put({ counted: { query: q, interval: 300 } }, prodAdmin)).status).toBe(200);
    expect(await spent('prod-admin')).toBe(q.length);
    expect((await put({ counted: { query: q, interval: 600 } }, prodAdmin)).status).toBe(200);
    expect(await spent('prod-admin')).toBe(q.length);
  });

  it('past 1 MB in 10 minutes: 429 with Retry-After, nothing stored; others are not held; a new window lets it in', async () => {
    // The user has brought nearly the window's worth already (as if after many large writes).
    const now = ts.server.deps.now().getTime();
    await ts.server.deps.db
      .insertInto('rate_windows')
      .values({ scope: 'sql', key: String(await userId('admin')), window_start: now - 60_000, count: SQL_CHARS_PER_USER - 1000 })
      .onConflict((oc) => oc.columns(['scope', 'key']).doUpdateSet({ window_start: now - 60_000, count: SQL_CHARS_PER_USER - 1000 }))
      .execute();
    const before = await schedule();
    const q = query('over-budget', 3000);
    const r = await put({ over: { query: q, interval: 300 } });
    expect(r.status).toBe(429);
    expect(r.body.code).toBe('rate_limited');
    expect(r.body.error).toMatch(/^admin has sent 1024 KB of new SQL to check in the last 10 minutes; try again in \d+ s$/);
    const wait = Number(r.headers.get('retry-after'));
    expect(wait).toBeGreaterThan((SQL_WINDOW_MS - 120_000) / 1000);
    expect(wait).toBeLessThanOrEqual(SQL_WINDOW_MS / 1000);
    expect((await schedule()).body).toEqual(before.body);

    // Another user is not held by admin's budget.
    expect((await put({ other: { query: query('other-user', 1000), interval: 300 } }, prodAdmin)).status).toBe(200);

    // Once the window has ended (the server's clock moved on), the same request goes through.
    const clock = ts.server.deps.now;
    ts.server.deps.now = () => new Date(clock().getTime() + SQL_WINDOW_MS);
    try {
      expect((await put({ over: { query: q, interval: 300 } })).status).toBe(200);
      expect(await spent('admin')).toBe(q.length);
    } finally {
      ts.server.deps.now = clock;
    }
  });
});
