// Issue 27: retention by age. Query results, carve blocks and audit rows older than their setting
// (admin/retention_*_days) are purged by the background purge, in bounded steps; newer ones stay.
// Time passes on the server's clock; a run is started with the purger's runOnce (what its timer does).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { startTestServer, type TestServer } from '../helpers/api-server.js';
import { agentPost, hostDetails, parseFlags, type Flags } from '../helpers/osquery-agent.js';
import { purgeByAge } from '../../src/server/services/retention/purge.js';

let t: TestServer;
let admin: string;
let flags: Flags;
let ca: string;
let node: { uuid: string; key: string };
let offsetMs = 0;
const DAY = 86_400_000;
const realNow = () => new Date();

const post = (ep: string, body: unknown) => agentPost(flags.hostname, flags.endpoint[ep], body, { ca });
const db = () => t.server.deps.db;
const count = async (table: 'query_results' | 'audit_logs' | 'carve_blocks' | 'node_queries') =>
  Number(
    (
      await db()
        .selectFrom(table)
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );
const login = async () => (admin = await t.login('admin'));

/** A live query to the node, answered through the agent door. */
async function answered(sql: string) {
  const r = await t.call('POST', '/api/v1/queries/prod', { token: admin, body: { query: sql, uuid_list: [node.uuid] } });
  expect(r.status).toBe(200);
  await post('read', { node_key: node.key });
  expect((await post('write', { node_key: node.key, queries: { [r.body.query_name]: [{ x: '1' }] }, statuses: {} })).status).toBe(200);
  return r.body.query_name as string;
}

/** A carve whose file completed with `blocks` blocks, written as the agent door stores them. */
async function carved(blocks: number) {
  const r = await t.call('POST', '/api/v1/carves/prod', { token: admin, body: { path: '/etc/hosts', uuid_list: [node.uuid] } });
  expect(r.status).toBe(201);
  const q = await db().selectFrom('queries').select('id').where('name', '=', r.body.query_name).executeTakeFirstOrThrow();
  const session = randomUUID().replace(/-/g, '');
  const ts = t.server.deps.now().toISOString();
  await db()
    .insertInto('carve_files')
    .values({
      uuid: node.uuid,
      query_id: q.id,
      carve_id: randomUUID(),
      session_id: session,
      path: '/etc/hosts',
      status: 'COMPLETED',
      archived: 0,
      block_size: 4,
      carve_size: blocks * 4,
      total_blocks: blocks,
      completed_blocks: blocks,
      created_at: ts,
      completed_at: ts,
    })
    .execute();
  for (let i = 0; i < blocks; i++)
    await db()
      .insertInto('carve_blocks')
      .values({ session_id: session, block_id: i, data: Buffer.from('abcd').toString('base64') })
      .execute();
  return { name: r.body.query_name as string, session };
}

beforeAll(async () => {
  t = await startTestServer({ devNodes: 20, agent: { host: '127.0.0.1', port: 0 } });
  t.server.deps.now = () => new Date(realNow().getTime() + offsetMs);
  await login();
  ca = t.server.agent!.certPem;
  flags = parseFlags((await t.call('GET', '/api/v1/environments/prod/enroll/flags', { token: admin })).body.data);
  const secret = (await t.call('GET', '/api/v1/environments/prod/enroll/secret', { token: admin })).body.data;
  const uuid = randomUUID();
  const r = await post('enroll', { enroll_secret: secret, host_identifier: uuid, host_details: hostDetails(uuid, 'kept-host') });
  node = { uuid, key: r.body.node_key };
}, 180_000);
afterAll(async () => {
  if (t) t.server.deps.now = realNow;
  await t?.close();
});

describe('retention settings', () => {
  it('are global settings with documented defaults; an environment cannot override them (400)', async () => {
    const rows = (await t.call('GET', '/api/v1/settings/admin/prod', { token: admin })).body as { name: string; integer: number }[];
    const v = Object.fromEntries(rows.map((s) => [s.name, s.integer]));
    expect(v).toMatchObject({
      retention_query_results_days: 30,
      retention_carves_days: 30,
      retention_audit_days: 365,
      cleanup_expired: 900,
    });
    const perEnv = await t.call('PATCH', '/api/v1/settings/admin/retention_audit_days?env=prod', { token: admin, body: { integer: 7 } });
    expect(perEnv.status).toBe(400);
    expect(perEnv.body.error).toMatch(/applies to the whole server/);
    expect((await t.call('PATCH', '/api/v1/settings/admin/retention_audit_days', { token: admin, body: { integer: -1 } })).status).toBe(
      400,
    );
  });
});

describe('the purge', () => {
  it('takes what is older than each setting and keeps what is newer', async () => {
    const oldQuery = await answered('SELECT 1 AS old;');
    const oldCarve = await carved(3);
    const auditBefore = await count('audit_logs');
    offsetMs += 31 * DAY;
    await login(); // the clock moved past the token's expiry
    const newQuery = await answered('SELECT 2 AS new;');
    const newCarve = await carved(2);
    const blocksBefore = await count('carve_blocks');
    const r = await t.server.retention!.runOnce();
    expect(r).toMatchObject({ query_results: 1, more: false });
    // The old carve's 3 blocks went, and the demo fleet's seeded carves' (their archives are real
    // blocks, older than 30 days); the new carve's 2 stay.
    const blocksOf = async (session: string) =>
      (await db().selectFrom('carve_blocks').select('block_id').where('session_id', '=', session).execute()).length;
    expect(await blocksOf(oldCarve.session)).toBe(0);
    expect(await blocksOf(newCarve.session)).toBe(2);
    expect(r.carve_blocks).toBeGreaterThanOrEqual(3);
    expect(r.carve_blocks).toBe(blocksBefore - (await count('carve_blocks')));
    expect(r.carve_files).toBeGreaterThanOrEqual(1); // and the demo fleet's old carve records
    expect(r.queries).toBeGreaterThanOrEqual(1);
    // The old answers and the old query are gone; the new ones stay.
    expect((await t.call('GET', `/api/v1/queries/prod/${oldQuery}`, { token: admin })).status).toBe(404);
    expect((await t.call('GET', `/api/v1/queries/prod/results/${newQuery}`, { token: admin })).status).toBe(200);
    expect(await count('query_results')).toBe(1);
    // The old carve: listed, expired, its file PURGED, its archive said to be purged; the new one downloads.
    const shown = (await t.call('GET', `/api/v1/carves/prod/${oldCarve.name}`, { token: admin })).body;
    expect(shown.query.carve_status).toBe('EXPIRED');
    expect(shown.files.map((f: { status: string }) => f.status)).toEqual(['PURGED']);
    const gone = await t.call('GET', `/api/v1/carves/prod/archive/${oldCarve.name}`, { token: admin });
    expect(gone.status).toBe(404);
    expect(gone.body.error).toBe('the archive of this carve was purged by retention (setting admin/retention_carves_days)');
    const kept = await fetch(`${t.url}/api/v1/carves/prod/archive/${newCarve.name}`, { headers: { authorization: `Bearer ${admin}` } });
    expect(kept.status).toBe(200);
    expect(Buffer.from(await kept.arrayBuffer()).toString()).toBe('abcdabcd');
    // Audit rows are kept a year: none went.
    expect(await count('audit_logs')).toBeGreaterThanOrEqual(auditBefore);
  });

  it('audit rows older than a year go, newer stay; 0 keeps for ever', async () => {
    const before = await count('audit_logs');
    expect(before).toBeGreaterThan(0);
    await t.call('PATCH', '/api/v1/settings/admin/retention_audit_days', { token: admin, body: { integer: 0 } });
    offsetMs += 400 * DAY;
    await login();
    const kept = await t.server.retention!.runOnce();
    expect(kept.audit_logs).toBe(0);
    await t.call('PATCH', '/api/v1/settings/admin/retention_audit_days', { token: admin, body: { integer: 365 } });
    const cutoff = new Date(t.server.deps.now().getTime() - 365 * DAY).toISOString();
    const older = Number(
      (
        await db()
          .selectFrom('audit_logs')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('created_at', '<', cutoff)
          .executeTakeFirstOrThrow()
      ).n,
    );
    expect(older).toBeGreaterThan(0);
    const r = await t.server.retention!.runOnce();
    expect(r.audit_logs).toBe(older);
    expect(
      Number(
        (
          await db()
            .selectFrom('audit_logs')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .where('created_at', '<', cutoff)
            .executeTakeFirstOrThrow()
        ).n,
      ),
    ).toBe(0);
    // The settings changes just made (newer than a year) are still there.
    expect(await count('audit_logs')).toBeGreaterThan(0);
  });

  it('runs in bounded steps: a run out of budget says more is due, and the next one goes on', async () => {
    const ts = new Date(t.server.deps.now().getTime() - 500 * DAY).toISOString();
    await db()
      .insertInto('audit_logs')
      .values(
        Array.from({ length: 2500 }, (_, i) => ({
          created_at: ts,
          env_uuid: '',
          environment_id: 0,
          line: `old ${i}`,
          log_type: 9,
          severity: 1,
          service: 'api',
          source_ip: '',
          username: 'x',
        })),
      )
      .execute();
    const none = await purgeByAge(t.server.deps, 0);
    expect(none).toMatchObject({ audit_logs: 0, more: true });
    const r = await purgeByAge(t.server.deps);
    expect(r.audit_logs).toBe(2500);
    expect(r.more).toBe(false);
  });
});
