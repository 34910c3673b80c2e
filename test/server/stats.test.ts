// Dashboard statistics (4.20) over real HTTP, checked against counts computed here directly
// from the tables (not through the server's code), including a 20,000-node environment (the
// 100,000-node figures are npm run bench's: a test proves the counts, not the speed).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { startTestServer, type TestServer } from '../helpers/api-server.js';
import { createEnvironment, generateNodes, insertNodes } from '../../src/server/seed.js';
import { DASHBOARD_STATS, ENV_STATS, PLATFORM_COUNTS, expectError, expectFields } from './activity-spec-fields.js';

let ts: TestServer;
let admin: string;

beforeAll(async () => {
  ts = await startTestServer();
  admin = await ts.login('admin', 'prod');
});
afterAll(async () => ts?.close());

const db = () => ts.server.deps.db;
const stats = (token = admin) => ts.call('GET', '/api/v1/stats', { token });

// contract.md 4.11 platform buckets, spelled out independently of the server's platform_bucket.
const LINUX = [
  'linux',
  'ubuntu',
  'debian',
  'centos',
  'rhel',
  'fedora',
  'arch',
  'amzn',
  'amazon',
  'opensuse',
  'sles',
  'alpine',
  'rocky',
  'oracle',
  'almalinux',
  'kali',
];
const DARWIN = ['darwin', 'macos', 'mac'];
const WINDOWS = ['windows', 'win', 'win32', 'win64'];
const inList = (xs: string[]) => sql.join(xs.map((x) => sql.lit(x)));

interface Expected {
  uuid: string;
  name: string;
  total: number;
  active: number;
  inactive: number;
  active_queries: number;
  active_carves: number;
  platform_counts: { linux: number; darwin: number; windows: number; other: number };
  enrollment: string;
  enroll_expire: string;
}

async function expectedFor(envName: string, hours: number): Promise<Expected> {
  const env = await db()
    .selectFrom('environments')
    .select(['id', 'uuid', 'name', 'accept_enrolls', 'enroll_expire'])
    .where('name', '=', envName)
    .executeTakeFirstOrThrow();
  const cutoff = new Date(Date.now() - hours * 3600_000).toISOString();
  const { rows } = await sql<{ total: number; active: number; linux: number; darwin: number; windows: number }>`
    select count(*) as total,
      count(case when last_seen is not null and last_seen >= ${cutoff} then 1 end) as active,
      count(case when lower(platform) in (${inList(LINUX)}) then 1 end) as linux,
      count(case when lower(platform) in (${inList(DARWIN)}) then 1 end) as darwin,
      count(case when lower(platform) in (${inList(WINDOWS)}) then 1 end) as windows
    from nodes join node_seen on node_seen.node_id = nodes.id where nodes.environment_id = ${env.id}`.execute(db());
  const n = rows[0];
  const { rows: q } = await sql<{ n: number }>`select count(*) as n from queries where environment_id = ${env.id}
    and type = 'query' and active = 1 and completed = 0 and deleted = 0 and expired = 0`.execute(db());
  // A running carve: flagged active and not finished, and its files (if any) not all COMPLETED.
  const carves = await db()
    .selectFrom('queries')
    .select('id')
    .where('environment_id', '=', env.id)
    .where('type', '=', 'carve')
    .where('active', '=', 1)
    .where('completed', '=', 0)
    .where('deleted', '=', 0)
    .where('expired', '=', 0)
    .execute();
  let activeCarves = 0;
  for (const c of carves) {
    const files = await db().selectFrom('carve_files').select('status').where('query_id', '=', c.id).execute();
    if (files.length === 0 || files.some((f) => f.status !== 'COMPLETED')) activeCarves++;
  }
  const total = Number(n.total);
  const active = Number(n.active);
  const linux = Number(n.linux);
  const darwin = Number(n.darwin);
  const windows = Number(n.windows);
  return {
    uuid: env.uuid,
    name: env.name,
    total,
    active,
    inactive: total - active,
    active_queries: Number(q[0].n),
    active_carves: activeCarves,
    platform_counts: { linux, darwin, windows, other: total - linux - darwin - windows },
    // Issue 27: closed when enrolls are off or the window ended, closing within a day, else open.
    enrollment: !env.accept_enrolls
      ? 'closed'
      : env.enroll_expire.startsWith('0001-')
        ? 'open'
        : Date.parse(env.enroll_expire) <= Date.now()
          ? 'closed'
          : Date.parse(env.enroll_expire) - Date.now() < 86_400_000
            ? 'closing'
            : 'open',
    enroll_expire: env.enroll_expire,
  };
}

function expectTotals(body: any, envs: Expected[]): void {
  const sum = (f: (e: Expected) => number) => envs.reduce((a, e) => a + f(e), 0);
  expect(body.environments).toEqual(envs);
  expect(body).toMatchObject({
    total_nodes: sum((e) => e.total),
    active_nodes: sum((e) => e.active),
    inactive_nodes: sum((e) => e.inactive),
    total_active_queries: sum((e) => e.active_queries),
    total_active_carves: sum((e) => e.active_carves),
    platform_counts: {
      linux: sum((e) => e.platform_counts.linux),
      darwin: sum((e) => e.platform_counts.darwin),
      windows: sum((e) => e.platform_counts.windows),
      other: sum((e) => e.platform_counts.other),
    },
  });
}

describe('GET /api/v1/stats', () => {
  it('has every field of 2.10 and matches independent counts for every env, sorted by name', async () => {
    const r = await stats();
    expect(r.status).toBe(200);
    expectFields(r.body, DASHBOARD_STATS);
    expectFields(r.body.platform_counts, PLATFORM_COUNTS, 'platform_counts');
    for (const e of r.body.environments) {
      expectFields(e, ENV_STATS, e.name);
      expectFields(e.platform_counts, PLATFORM_COUNTS, `${e.name}.platform_counts`);
    }
    expect(r.body.environments.map((e: any) => e.name)).toEqual(['dev', 'prod', 'staging']);
    expect(r.body.inactive_hours).toBe(72);
    const expected = await Promise.all(['dev', 'prod', 'staging'].map((n) => expectedFor(n, 72)));
    expectTotals(r.body, expected);
    // The demo has some of everything, so zeros would mean broken counting, not an empty fleet.
    for (const e of expected)
      expect(Math.min(e.active, e.inactive, e.active_queries, e.active_carves, e.platform_counts.other)).toBeGreaterThan(0);
  });

  it('counts only the environments the caller can access', async () => {
    const devUser = await ts.login('dev-user', 'dev');
    const dev = await stats(devUser);
    expect(dev.status).toBe(200);
    expect(dev.body.environments.map((e: any) => e.name)).toEqual(['dev']);
    expectTotals(dev.body, [await expectedFor('dev', 72)]);

    const analyst = await ts.login('analyst', 'prod');
    const a = await stats(analyst);
    expect(a.body.environments.map((e: any) => e.name)).toEqual(['prod', 'staging']);
    expectTotals(a.body, await Promise.all(['prod', 'staging'].map((n) => expectedFor(n, 72))));
  });

  it('follows the inactive_hours setting, and an env override for that env', async () => {
    const before = (await stats()).body;
    await db()
      .updateTable('settings')
      .set({ integer_value: 200 })
      .where('service', '=', 'admin')
      .where('name', '=', 'inactive_hours')
      .where('environment_id', '=', 0)
      .execute();
    try {
      const r = await stats();
      expect(r.body.inactive_hours).toBe(200);
      const expected = await Promise.all(['dev', 'prod', 'staging'].map((n) => expectedFor(n, 200)));
      expectTotals(r.body, expected);
      expect(r.body.active_nodes).toBeGreaterThan(before.active_nodes);

      const devId = (await db().selectFrom('environments').select('id').where('name', '=', 'dev').executeTakeFirstOrThrow()).id;
      const ts0 = new Date().toISOString();
      await db()
        .insertInto('settings')
        .values({
          name: 'inactive_hours',
          service: 'admin',
          type: 'integer',
          info: '',
          environment_id: devId,
          boolean_value: 0,
          integer_value: 1000,
          string_value: '',
          created_at: ts0,
          updated_at: ts0,
          deleted_at: null,
        })
        .execute();
      const o = await stats();
      expect(o.body.inactive_hours).toBe(200);
      expectTotals(o.body, [await expectedFor('dev', 1000), ...(await Promise.all(['prod', 'staging'].map((n) => expectedFor(n, 200))))]);
      await db().deleteFrom('settings').where('environment_id', '=', devId).where('name', '=', 'inactive_hours').execute();
    } finally {
      await db()
        .updateTable('settings')
        .set({ integer_value: 72 })
        .where('service', '=', 'admin')
        .where('name', '=', 'inactive_hours')
        .where('environment_id', '=', 0)
        .execute();
    }
  });

  it('active carves and queries follow carve actions', async () => {
    const carver = await ts.login('carver', 'prod');
    const before = (await stats()).body.environments.find((e: any) => e.name === 'prod');
    const done = await ts.call('POST', '/api/v1/carves/prod/complete/carve_bash_history', { token: carver });
    expect(done.status).toBe(200);
    const after = (await stats()).body.environments.find((e: any) => e.name === 'prod');
    expect(after.active_carves).toBe(before.active_carves - 1);
    expect(after.active_queries).toBe(before.active_queries);
    expectTotals((await stats()).body, await Promise.all(['dev', 'prod', 'staging'].map((n) => expectedFor(n, 72))));
  });

  it('a query counts from the answer that started it, and stops counting once it is deleted', async () => {
    const prod = () => stats().then((r) => r.body.environments.find((e: any) => e.name === 'prod'));
    const before = await prod();
    await prod(); // a second read between changes: the one the server keeps
    const run = await ts.call('POST', '/api/v1/queries/prod', {
      token: admin,
      body: { query: 'SELECT 1 AS stats_one;', platform_list: ['linux'] },
    });
    expect(run.status).toBe(200);
    expect((await prod()).active_queries).toBe(before.active_queries + 1);
    const del = await ts.call('POST', `/api/v1/queries/prod/delete/${run.body.query_name}`, { token: admin });
    expect(del.status).toBe(200);
    expect((await prod()).active_queries).toBe(before.active_queries);
    expectTotals((await stats()).body, await Promise.all(['dev', 'prod', 'staging'].map((n) => expectedFor(n, 72))));
  });

  it('a carve stops counting once its last file completes, though its query row did not change', async () => {
    // A running carve with a file still uploading (the demo has one in every environment).
    const pending = await db()
      .selectFrom('carve_files')
      .innerJoin('queries', 'queries.id', 'carve_files.query_id')
      .innerJoin('environments', 'environments.id', 'queries.environment_id')
      .select(['queries.id as query_id', 'environments.name as env'])
      .where('carve_files.status', '<>', 'COMPLETED')
      .where('queries.active', '=', 1)
      .where('queries.completed', '=', 0)
      .where('queries.deleted', '=', 0)
      .where('queries.expired', '=', 0)
      .executeTakeFirstOrThrow();
    const env = () => stats().then((r) => r.body.environments.find((e: any) => e.name === pending.env));
    const before = await env();
    await env();
    // What the agent door does with a carve's last block: the file becomes COMPLETED, the query stays.
    await db().updateTable('carve_files').set({ status: 'COMPLETED' }).where('query_id', '=', pending.query_id).execute();
    expect((await env()).active_carves).toBe(before.active_carves - 1);
    expectTotals((await stats()).body, await Promise.all(['dev', 'prod', 'staging'].map((n) => expectedFor(n, 72))));
  });

  it('no token: 401', async () => {
    expectError(await ts.call('GET', '/api/v1/stats'), 401, 'unauthorized');
  });

  it('counts 20,000 nodes right (aggregated in SQL)', async () => {
    const now = Date.now();
    const envId = await createEnvironment(db(), 'bulk', {
      uuid: '00000000-0000-4000-a000-0000000b0001',
      hostname: 'h',
      now: new Date(now),
    });
    for (let batch = 0; batch < 2; batch++) await insertNodes(db(), generateNodes(1000 + batch, 'bulk', envId, 10_000, now));
    const started = performance.now();
    const r = await stats();
    const ms = performance.now() - started;
    expect(r.status).toBe(200);
    const expected = await Promise.all(['bulk', 'dev', 'prod', 'staging'].map((n) => expectedFor(n, 72)));
    expect(expected[0].total).toBe(20_000);
    expectTotals(r.body, expected);
    const all = Number(
      (
        await db()
          .selectFrom('nodes')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
    expect(r.body.total_nodes).toBe(all);
    console.log(`stats over ${all} nodes: ${ms.toFixed(0)} ms`);
  });
});
