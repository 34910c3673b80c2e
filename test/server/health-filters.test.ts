// Issue 20: `?health=` and `?risk=` on the nodes list agree, node for node, with the health and
// risk the API shows for each node; live queries target by status, health and risk (a union with
// the other lists); queries expire after a day unless told otherwise; the results page says how
// many targets are online and how many of those still owe an answer. Against the demo fleet, on
// SQLite and on PostgreSQL.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/api-server.js';
import { HealthStatuses, RiskLevels, type Node } from '../../src/api/index.js';
import { setSeen } from '../helpers/node-seen.js';

let t: TestServer;
let admin: string;
let all: Node[];

const list = async (query: string): Promise<{ items: Node[]; total: number }> => {
  const items: Node[] = [];
  let total = 0;
  for (let page = 1; ; page++) {
    const r = await t.call('GET', `/api/v1/nodes/prod?page_size=500&page=${page}&${query}`, { token: admin });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    items.push(...r.body.items);
    total = r.body.total_items;
    if (page >= r.body.total_pages) break;
  }
  return { items, total };
};

beforeAll(async () => {
  t = await startTestServer({ devNodes: 400 });
  admin = await t.login('admin');
  ({ items: all } = await list(''));
});

afterAll(async () => t?.close());

describe('nodes list ?health= and ?risk=', () => {
  it('each value lists exactly the nodes showing that health (or risk), and the values cover the environment', async () => {
    expect(all.length).toBeGreaterThan(100);
    for (const [param, values, of] of [
      ['health', HealthStatuses, (n: Node) => n.health.status],
      ['risk', RiskLevels, (n: Node) => n.posture.risk_level],
    ] as const) {
      let sum = 0;
      for (const v of values) {
        const { items, total } = await list(`${param}=${v}`);
        expect(items.length, `${param}=${v}`).toBe(total);
        expect(new Set(items.map(of)), `${param}=${v}`).toEqual(total ? new Set([v]) : new Set());
        expect(total, `${param}=${v}`).toBe(all.filter((n) => of(n) === v).length);
        sum += total;
      }
      expect(sum).toBe(all.length);
    }
    // The demo fleet has each kind (invalid configs, outdated and silent nodes, never-seen ones).
    for (const v of RiskLevels)
      expect(
        all.some((n) => n.posture.risk_level === v),
        v,
      ).toBe(true);
  });

  it('stays exact as time passes: totals moved with the cutoffs agree with the nodes listed and their own health', async () => {
    const realNow = t.server.deps.now;
    try {
      // Forward in steps (the cached totals are moved, not recounted), across many stale and inactive crossings.
      for (const minutes of [1, 7, 45, 180, 900]) {
        t.server.deps.now = () => new Date(realNow().getTime() + minutes * 60_000);
        admin = await t.login('admin'); // tokens expire on the server's clock too
        const nodes = (await list('')).items;
        for (const [param, values, of] of [
          ['health', HealthStatuses, (n: Node) => n.health.status],
          ['risk', RiskLevels, (n: Node) => n.posture.risk_level],
        ] as const) {
          for (const v of values) {
            const { items, total } = await list(`${param}=${v}`);
            expect(items.length, `+${minutes} min ${param}=${v}`).toBe(total);
            expect(total, `+${minutes} min ${param}=${v}`).toBe(nodes.filter((n) => of(n) === v).length);
            // The page itself, not only its size: each node listed is of the class asked for now.
            expect(
              items.filter((n) => of(n) !== v).map((n) => n.hostname),
              `+${minutes} min ${param}=${v}`,
            ).toEqual([]);
          }
        }
      }
    } finally {
      t.server.deps.now = realNow;
      admin = await t.login('admin');
    }
  });

  it('combines with the other filters; an unknown value is 400', async () => {
    const { items } = await list('risk=high&status=active&platform=linux');
    expect(items.length).toBe(
      all.filter(
        (n) => n.posture.risk_level === 'high' && n.health.signals.indexOf('inactive') < 0 && ['linux'].includes(platformBucket(n)),
      ).length,
    );
    const bad = await t.call('GET', '/api/v1/nodes/prod?risk=severe', { token: admin });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatch(/invalid risk "severe"; valid values: low, medium, high, unknown/);
  });
});

function platformBucket(n: Node): string {
  return n.system_info.osquery.build_platform;
}

describe('live query targets: status_list, health_list, risk_list', () => {
  it('target exactly the nodes the list filters give, in a union with the other lists', async () => {
    const high = all.filter((n) => n.posture.risk_level === 'high');
    const active = all.filter((n) => !n.health.signals.includes('inactive') && n.health.status !== 'unknown');
    const unhealthy = all.filter((n) => n.health.status === 'unhealthy');
    const cases: [Record<string, string[]>, number][] = [
      [{ risk_list: ['high'] }, high.length],
      [{ status_list: ['active'] }, active.length],
      [{ health_list: ['unhealthy'] }, unhealthy.length],
      [{ risk_list: ['high'], health_list: ['unhealthy'] }, new Set([...high, ...unhealthy].map((n) => n.uuid)).size],
      [{ risk_list: ['high'], uuid_list: [active[0].uuid] }, new Set([...high, active[0]].map((n) => n.uuid)).size],
    ];
    for (const [lists, expected] of cases) {
      const r = await t.call('POST', '/api/v1/queries/prod', { token: admin, body: { query: 'SELECT 1', ...lists } });
      expect(r.status, JSON.stringify(lists)).toBe(200);
      expect(r.body.expected, JSON.stringify(lists)).toBe(expected);
    }
    const bad = await t.call('POST', '/api/v1/queries/prod', { token: admin, body: { query: 'SELECT 1', risk_list: ['severe'] } });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatch(/risk_list: invalid value "severe"/);
  });
});

describe('expiry and online targets', () => {
  const expiresIn = async (body: Record<string, unknown>) => {
    const r = await t.call('POST', '/api/v1/queries/prod', {
      token: admin,
      body: { query: 'SELECT 1', uuid_list: [all[0].uuid], ...body },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const q = (await t.call('GET', `/api/v1/queries/prod/${r.body.query_name}`, { token: admin })).body;
    return q.expiration.startsWith('0001') ? 0 : Math.round((Date.parse(q.expiration) - Date.parse(q.created_at)) / 1000);
  };

  it('a day by default; expire_seconds wins over exp_hours; exp_hours 0 is never (osctrl)', async () => {
    expect(await expiresIn({})).toBe(86_400);
    expect(await expiresIn({ exp_hours: 2 })).toBe(7200);
    expect(await expiresIn({ exp_hours: 2, expire_seconds: 90 })).toBe(90);
    expect(await expiresIn({ exp_hours: 0 })).toBe(0);
    const bad = await t.call('POST', '/api/v1/queries/prod', { token: admin, body: { query: 'SELECT 1', expire_seconds: 0 } });
    expect(bad.status).toBe(400);
  });

  it('the results page counts online targets and those of them that still owe an answer', async () => {
    // The demo's seeded nodes are never online (none checked in within 3 distributed intervals).
    const r = await t.call('POST', '/api/v1/queries/prod', { token: admin, body: { query: 'SELECT 1' } });
    const page = (await t.call('GET', `/api/v1/queries/prod/results/${r.body.query_name}`, { token: admin })).body;
    expect(page).toMatchObject({ expected: all.length, answered: 0, online: 0, online_pending: 0 });
    expect(page.hostname_width).toBe(Math.max(...all.map((n) => n.hostname.length)));
    // A node seen just now is online and owes its answer.
    const one = all[0];
    await setSeen(t.server.deps.db, one.id, { last_seen: new Date().toISOString() });
    const again = (await t.call('GET', `/api/v1/queries/prod/results/${r.body.query_name}`, { token: admin })).body;
    expect(again).toMatchObject({ online: 1, online_pending: 1 });
    const read = (await t.call('GET', `/api/v1/queries/prod/${r.body.query_name}`, { token: admin })).body;
    expect(read).toMatchObject({ online: 1, online_pending: 1 });
  });
});
