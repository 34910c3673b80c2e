// Issue 27, point 5: host details kept fresh. The server asks each node for osquery_info,
// system_info, os_version, platform_info and uptime in its distributed read once a detail refresh
// is due, and the answers rewrite the node's row: a renamed host is found by its new name, an
// upgraded osquery loses its osquery_outdated signal. Time passes on the server's clock.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { startTestServer, type TestServer } from '../helpers/api-server.js';
import { agentPost, hostDetails, parseFlags, type Flags } from '../helpers/osquery-agent.js';
import { DETAIL_QUERIES } from '../../src/server/services/agents/node-details.js';

let t: TestServer;
let admin: string;
let ca: string;
let flags: Flags;
let secret: string;
const realNow = () => new Date();
let offsetMs = 0;

beforeAll(async () => {
  t = await startTestServer({ devNodes: 30, agent: { host: '127.0.0.1', port: 0 } });
  t.server.deps.now = () => new Date(realNow().getTime() + offsetMs);
  admin = await t.login('admin');
  ca = t.server.agent!.certPem;
  flags = parseFlags((await t.call('GET', '/api/v1/environments/prod/enroll/flags', { token: admin })).body.data);
  secret = (await t.call('GET', '/api/v1/environments/prod/enroll/secret', { token: admin })).body.data;
}, 180_000);
afterAll(async () => {
  if (t) t.server.deps.now = realNow;
  await t?.close();
});

const post = (ep: string, body: unknown) => agentPost(flags.hostname, flags.endpoint[ep], body, { ca });
const node = async (ref: string) => (await t.call('GET', `/api/v1/nodes/prod/node/${ref}`, { token: admin })).body;

async function enrolled(hostname: string) {
  const uuid = randomUUID();
  const r = await post('enroll', { enroll_secret: secret, host_identifier: uuid, host_details: hostDetails(uuid, hostname) });
  expect(r.body.node_invalid).toBe(false);
  return { uuid, key: r.body.node_key as string };
}

describe('detail refresh', () => {
  it('asks nothing before the interval, the five tables after it, and once until answered', async () => {
    const a = await enrolled('web-before');
    expect((await post('read', { node_key: a.key })).body.queries).toEqual({});
    offsetMs += 3601_000; // past --detail-refresh's default hour
    const due = await post('read', { node_key: a.key });
    expect(due.body.queries).toEqual(DETAIL_QUERIES);
    expect((await post('read', { node_key: a.key })).body.queries).toEqual({});
  });

  it('the answers rewrite the row: renamed host found by its new name, upgraded osquery no longer outdated, uptime', async () => {
    const a = await enrolled('db-old-name');
    const before = await node(a.uuid);
    expect(before.hostname).toBe('db-old-name');
    expect(before.health.signals).toContain('osquery_outdated'); // 5.12.1 in a fleet that has 5.13.1
    offsetMs += 3601_000;
    const q = (await post('read', { node_key: a.key })).body.queries as Record<string, string>;
    expect(Object.keys(q).sort()).toEqual(Object.keys(DETAIL_QUERIES).sort());
    const d = hostDetails(a.uuid, 'db-new-name');
    const w = await post('write', {
      node_key: a.key,
      queries: {
        fleetctl_details_osquery_info: [{ ...d.osquery_info, version: '5.13.1', config_valid: '1' }],
        fleetctl_details_system_info: [{ ...d.system_info, cpu_brand: 'AMD EPYC\u0000\u0000\u0000' }],
        fleetctl_details_os_version: [{ ...d.os_version, version: '24.04.1 LTS (Noble Numbat)' }],
        fleetctl_details_platform_info: [],
        fleetctl_details_uptime: [{ days: '1', hours: '2', minutes: '3', seconds: '4', total_seconds: '93784' }],
      },
      statuses: { fleetctl_details_platform_info: 1 },
      messages: { fleetctl_details_platform_info: 'no such table: platform_info' },
    });
    expect(w).toMatchObject({ status: 200, body: { node_invalid: false } });
    const after = await node('db-new-name');
    expect(after).toMatchObject({
      uuid: a.uuid,
      hostname: 'db-new-name',
      osquery_version: '5.13.1',
      platform_version: '24.04.1 LTS (Noble Numbat)',
      cpu: 'AMD EPYC',
    });
    expect(after.health.signals).not.toContain('osquery_outdated');
    expect(after.uptime).toMatchObject({ days: 1, hours: 2, minutes: 3, seconds: 4, total_seconds: 93784 });
    // The part that failed on the host (platform_info) keeps what it had.
    expect(after.system_info.bios.vendor).toBe('SeaBIOS');
    expect(after.system_info.os.version).toBe('24.04.1 LTS (Noble Numbat)');
    expect((await t.call('GET', '/api/v1/nodes/prod/node/db-old-name', { token: admin })).status).toBe(404);
    const found = await t.call('GET', '/api/v1/nodes/prod?q=db-new', { token: admin });
    expect(found.body.items.map((n: { uuid: string }) => n.uuid)).toEqual([a.uuid]);
    // Answered: not asked again until the next interval.
    expect((await post('read', { node_key: a.key })).body.queries).toEqual({});
    offsetMs += 3601_000;
    expect(Object.keys((await post('read', { node_key: a.key })).body.queries)).toHaveLength(5);
  });

  it('an environment sets its own interval (detail_refresh); live queries are asked beside the details, and their answers kept apart', async () => {
    admin = await t.login('admin'); // the server's clock moved past the first token's expiry
    const a = await enrolled('lq-host');
    expect((await t.call('PATCH', '/api/v1/environments/prod', { token: admin, body: { detail_refresh: 120 } })).status).toBe(200);
    offsetMs += 121_000;
    const run = await t.call('POST', '/api/v1/queries/prod', { token: admin, body: { query: 'SELECT 1 AS one;', uuid_list: [a.uuid] } });
    expect(run.status).toBe(200);
    const q = (await post('read', { node_key: a.key })).body.queries as Record<string, string>;
    expect(q[run.body.query_name]).toBe('SELECT 1 AS one;');
    expect(q.fleetctl_details_uptime).toBe('SELECT * FROM uptime;');
    await post('write', {
      node_key: a.key,
      queries: { [run.body.query_name]: [{ one: '1' }], fleetctl_details_uptime: [{ total_seconds: '5' }] },
      statuses: {},
    });
    const results = await t.call('GET', `/api/v1/queries/prod/results/${run.body.query_name}`, { token: admin });
    expect(results.body.items ?? results.body).toEqual(
      expect.arrayContaining([expect.objectContaining({ uuid: a.uuid, rows: [{ one: '1' }] })]),
    );
    expect((await node(a.uuid)).uptime.total_seconds).toBe(5);
    expect((await t.call('PATCH', '/api/v1/environments/prod', { token: admin, body: { detail_refresh: 0 } })).status).toBe(200);
  });
});
