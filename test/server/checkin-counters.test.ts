// What a check-in does to the change counters and the totals (issue 31, migration 017_node_seen): it writes
// node_seen (not the node's row) and moves the check-ins counter; the totals (counts counter) move
// only when a node comes back across a window, through the seen counter, and the totals that
// depend on last_seen then catch up with it by themselves.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { startTestServer, type TestServer } from '../helpers/api-server.js';
import { agentPost, eventually, hostDetails, parseFlags, type Flags } from '../helpers/osquery-agent.js';
import { readGenerations } from '../../src/server/store/node-index.js';
import { setSeen } from '../helpers/node-seen.js';

describe('check-ins and the change counters', () => {
  let t: TestServer;
  let admin: string;
  let flags: Flags;
  let secret: string;
  let ca: string;
  const post = (ep: string, body: unknown) => agentPost(flags.hostname, flags.endpoint[ep], body, { ca });

  beforeAll(async () => {
    t = await startTestServer({ devNodes: 40, agent: { host: '127.0.0.1', port: 0 } });
    admin = await t.login('admin');
    ca = t.server.agent!.certPem;
    flags = parseFlags((await t.call('GET', '/api/v1/environments/prod/enroll/flags', { token: admin })).body.data);
    secret = (await t.call('GET', '/api/v1/environments/prod/enroll/secret', { token: admin })).body.data;
  }, 180_000);
  afterAll(async () => t?.close());

  /** One check-in at `endpoint`, written: the agent door's queue flushed. */
  const checkIn = async (key: string, endpoint: 'config' | 'read') => {
    await post(endpoint, { node_key: key });
    await t.server.agent!.flushCheckins();
  };
  /** A node enrolled now as `hostname`; unless `fetched` is false, it has fetched its configuration once (written). */
  const newNode = async (hostname: string, fetched = true) => {
    const uuid = randomUUID();
    const key = (await post('enroll', { enroll_secret: secret, host_identifier: uuid, host_details: hostDetails(uuid, hostname) })).body
      .node_key as string;
    if (fetched) await checkIn(key, 'config');
    return { uuid, key };
  };
  const gens = () => readGenerations(t.server.deps.db);
  const total = async (query: string) =>
    (await t.call('GET', `/api/v1/nodes/prod?page_size=1&${query}`, { token: admin })).body.total_items as number;

  it('a node checking in again within the window moves the check-ins counter only; its last_seen and bytes are written', async () => {
    const { uuid, key } = await newNode('steady-host');
    const before = await gens();
    const node = (await t.call('GET', `/api/v1/nodes/prod/node/${uuid}`, { token: admin })).body;
    await checkIn(key, 'read');
    const after = await gens();
    expect(after.counts).toBe(before.counts);
    expect(after.seen).toBe(before.seen);
    expect(after.content).toBe(before.content);
    expect(after.checkins).toBeGreaterThan(before.checkins);
    const again = (await t.call('GET', `/api/v1/nodes/prod/node/${uuid}`, { token: admin })).body;
    expect(again.last_seen > node.last_seen).toBe(true);
    expect(again.bytes_received).toBeGreaterThan(node.bytes_received);
    expect(again.config_fetched_at).not.toBe('0001-01-01T00:00:00Z');
  });

  it('a config fetch that changes nothing moves neither the content nor the counts counter (migration 019_content_on_change)', async () => {
    // The flush's node statement runs for every batch holding a config fetch and updates no row
    // when hash and validity are the same; PostgreSQL fired its statement trigger anyway, and every
    // cached page of every list was read again after each flush.
    const { key } = await newNode('fetch-host');
    const before = await gens();
    await checkIn(key, 'config');
    const after = await gens();
    expect(after.checkins).toBeGreaterThan(before.checkins);
    expect(after.content).toBe(before.content);
    expect(after.counts).toBe(before.counts);
  });

  it('a node back after days moves the seen counter, and the active total counts it again', async () => {
    const { uuid, key } = await newNode('sleeper-host', false);
    const id = (await t.call('GET', `/api/v1/nodes/prod/node/${uuid}`, { token: admin })).body.id as number;
    // Asleep for a week (written as a flush would, exact: both counters).
    await setSeen(t.server.deps.db, id, { last_seen: new Date(Date.now() - 7 * 86400_000).toISOString() });
    const active = await total('status=active');
    // Health and risk lists are kept as the status ones are: primed here at the seen counter before.
    const healthOf = async () => (await t.call('GET', `/api/v1/nodes/prod/node/${uuid}`, { token: admin })).body.health.status as string;
    const listed = async (query: string) =>
      ((await t.call('GET', `/api/v1/nodes/prod?page_size=100&${query}`, { token: admin })).body.items as { uuid: string }[]).some(
        (n) => n.uuid === uuid,
      );
    expect(await listed('status=inactive')).toBe(true);
    const asleep = await healthOf();
    const healthTotals = new Map<string, number>();
    for (const h of ['healthy', 'degraded', 'unhealthy', 'unknown']) {
      healthTotals.set(h, await total(`health=${h}`));
      expect(await listed(`health=${h}`), h).toBe(h === asleep);
    }
    const before = await gens();
    await checkIn(key, 'read');
    const after = await gens();
    expect(after.seen).toBeGreaterThan(before.seen);
    expect(after.counts).toBe(before.counts);
    // The total counted before may answer once more while it is recounted; then it has the node.
    await eventually(
      async () => ((await total('status=active')) === active + 1 ? true : undefined),
      'the active total to count the node back',
    );
    const awake = await healthOf();
    expect(awake).not.toBe(asleep);
    await eventually(
      async () =>
        !(await listed('status=inactive')) &&
        (await listed(`health=${awake}`)) &&
        !(await listed(`health=${asleep}`)) &&
        (await total(`health=${awake}`)) === healthTotals.get(awake)! + 1 &&
        (await total(`health=${asleep}`)) === healthTotals.get(asleep)! - 1
          ? true
          : undefined,
      `the health lists to move the node from ${asleep} to ${awake}`,
    );
    expect((await t.call('GET', '/api/v1/stats', { token: admin })).body.active_nodes).toBeGreaterThan(0);
    await eventually(async () => {
      const stats = (await t.call('GET', '/api/v1/stats', { token: admin })).body;
      const prod = stats.environments.find((e: { name: string }) => e.name === 'prod');
      return prod.active === active + 1 ? true : undefined;
    }, 'stats to count the node back');
  });

  it('a changed config hash or validity moves the counts counter; the same values do not touch the node', async () => {
    const { key } = await newNode('config-host');
    const before = await gens();
    await checkIn(key, 'config'); // the same hash and validity again
    expect((await gens()).counts).toBe(before.counts);
    const stale = await total('config=stale');
    const put = await t.call('PUT', '/api/v1/environments/prod/config/options', {
      token: admin,
      body: { disable_distributed: false, schedule_splay_percent: 17 },
    });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(await total('config=stale')).toBeGreaterThan(stale);
    await checkIn(key, 'config'); // fetches the new hash
    expect((await gens()).counts).toBeGreaterThan(before.counts);
  });

  it('the first pages sorted by last_seen follow every check-in: each the slice of the whole list, the next request in the new order', async () => {
    const a = await newNode('order-a');
    const b = await newNode('order-b');
    const ids = async (query: string) =>
      ((await t.call('GET', `/api/v1/nodes/prod?${query}`, { token: admin })).body.items as { uuid: string }[]).map((n) => n.uuid);
    // Pages are read five at a time (node-pages.ts orderWindow): 1-5 and 6-10 are two reads.
    const pagesMatchTheWhole = async (filter = '') => {
      const whole = await ids(`${filter}page_size=500`);
      for (const page of [3, 1, 7, 5, 2, 6, 4]) {
        const got = await ids(`${filter}page_size=6&page=${page}`);
        expect(got, `${filter} page ${page}`).toEqual(whole.slice((page - 1) * 6, page * 6));
      }
      return whole;
    };
    await checkIn(b.key, 'read');
    expect((await pagesMatchTheWhole())[0]).toBe(b.uuid);
    // Each check-in reorders: the very next request (none other under way) reads the new order.
    await checkIn(a.key, 'read');
    expect((await ids('page_size=8'))[0]).toBe(a.uuid);
    expect((await pagesMatchTheWhole()).slice(0, 2)).toEqual([a.uuid, b.uuid]);
    expect((await pagesMatchTheWhole('status=active&')).slice(0, 2)).toEqual([a.uuid, b.uuid]);
    // Requests arriving together after a check-in: each answer is a whole order, the one before
    // it (a read of the new one under way) or the new one, never a mix; then the new one.
    const before = await ids('page_size=8');
    await checkIn(b.key, 'read');
    const after = [b.uuid, ...before.filter((u) => u !== b.uuid)].slice(0, 8);
    for (const got of await Promise.all(Array.from({ length: 12 }, () => ids('page_size=8')))) expect([before, after]).toContainEqual(got);
    expect(await ids('page_size=8')).toEqual(after);
    // A health- or risk-filtered list sorted by last_seen follows the check-ins too.
    const health = async (n: { uuid: string }) =>
      (await t.call('GET', `/api/v1/nodes/prod/node/${n.uuid}`, { token: admin })).body.health.status as string;
    const h = await health(a);
    expect(await health(b)).toBe(h);
    expect((await pagesMatchTheWhole(`health=${h}&`))[0]).toBe(b.uuid);
    await checkIn(a.key, 'read');
    expect((await ids(`health=${h}&page_size=8`))[0]).toBe(a.uuid);
    expect((await pagesMatchTheWhole(`health=${h}&`)).slice(0, 2)).toEqual([a.uuid, b.uuid]);
  });

  it('pages of one order window asked for together after a check-in: each whole, from the order before or the new one', async () => {
    const ids = async (query: string) =>
      ((await t.call('GET', `/api/v1/nodes/prod?${query}`, { token: admin })).body.items as { uuid: string }[]).map((n) => n.uuid);
    const nodes = [];
    for (let i = 0; i < 7; i++) nodes.push(await newNode(`window-${i}`));
    // Newest first: pages 1 and 2 of 6 both change when the seventh newest checks in again.
    const before = [await ids('page_size=6&page=1'), await ids('page_size=6&page=2')];
    expect(before[1][0]).toBe(nodes[0].uuid);
    await checkIn(nodes[0].key, 'read');
    const got = await Promise.all(Array.from({ length: 12 }, (_, i) => ids(`page_size=6&page=${1 + (i % 2)}`)));
    const whole = await ids('page_size=500');
    const after = [whole.slice(0, 6), whole.slice(6, 12)];
    expect(after[0][0]).toBe(nodes[0].uuid);
    got.forEach((page, i) => expect([before[i % 2], after[i % 2]], `request ${i}`).toContainEqual(page));
    expect([await ids('page_size=6&page=1'), await ids('page_size=6&page=2')]).toEqual(after);
  });
});
