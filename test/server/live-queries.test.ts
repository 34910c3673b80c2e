// Live queries and carves in the admin API (issue 13), against the dev fleet in-process, with
// the agent door open so answers and logs arrive through osquery's protocol.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import { randomUUID } from 'node:crypto';
import { startTestServer, type TestServer } from '../helpers/api-server.js';
import { setSeen } from '../helpers/node-seen.js';
import { agentGet, agentPost, eventually, hostDetails, parseFlags, type Flags } from '../helpers/osquery-agent.js';

let t: TestServer;
let admin: string;
let flags: Flags;
let secret: string;
let ca: string;
let collector: Server;
const collected: unknown[][] = [];
let collectorUrl = '';

const post = (ep: string, body: unknown) => agentPost(flags.hostname, flags.endpoint[ep], body, { ca });

beforeAll(async () => {
  t = await startTestServer({ devNodes: 30, agent: { host: '127.0.0.1', port: 0 } });
  admin = await t.login('admin');
  ca = t.server.agent!.certPem;
  flags = parseFlags((await t.call('GET', '/api/v1/environments/prod/enroll/flags', { token: admin })).body.data);
  secret = (await t.call('GET', '/api/v1/environments/prod/enroll/secret', { token: admin })).body.data;
  collector = createServer((req, res) => {
    let s = '';
    req.on('data', (c) => (s += c));
    req.on('end', () => {
      collected.push(JSON.parse(s) as unknown[]);
      res.end('ok');
    });
  });
  await new Promise<void>((r) => collector.listen(0, '127.0.0.1', r));
  const a = collector.address();
  collectorUrl = `http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}/ingest`;
});

afterAll(async () => {
  await t?.close();
  collector?.close();
});

describe('permissions follow the query and carve flags', () => {
  it('querier may run queries on prod but not carves; carver the reverse; analyst neither', async () => {
    const querier = await t.login('querier');
    const carver = await t.login('carver');
    const analyst = await t.login('analyst');
    const q = { query: 'SELECT 1;' };
    expect((await t.call('POST', '/api/v1/queries/prod', { token: querier, body: q })).status).toBe(200);
    expect((await t.call('POST', '/api/v1/carves/prod', { token: querier, body: { path: '/etc/hosts' } })).status).toBe(403);
    expect((await t.call('POST', '/api/v1/carves/prod', { token: carver, body: { path: '/etc/hosts' } })).status).toBe(201);
    expect((await t.call('POST', '/api/v1/queries/prod', { token: carver, body: q })).status).toBe(403);
    expect((await t.call('POST', '/api/v1/queries/prod', { token: analyst, body: q })).status).toBe(403);
    expect((await t.call('GET', '/api/v1/queries/prod', { token: analyst })).status).toBe(403);
  });
});

describe('bad requests change nothing', () => {
  it('no query, no path, targets matching nobody, bad exp_hours: 400 {code, error}; unknown action 400; unknown query 404', async () => {
    const before = (await t.call('GET', '/api/v1/queries/prod', { token: admin })).body.total_items;
    for (const body of [
      {},
      { query: '  ' },
      { query: 'SELECT 1', uuid_list: ['no-such-node'] },
      { query: 'SELECT 1', exp_hours: -1 },
      { query: 'SELECT 1', host_list: 'x' },
    ]) {
      const r = await t.call('POST', '/api/v1/queries/prod', { token: admin, body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.code).toBe('bad_request');
    }
    expect((await t.call('POST', '/api/v1/carves/prod', { token: admin, body: {} })).body.error).toBe('path can not be empty');
    expect((await t.call('GET', '/api/v1/queries/prod', { token: admin })).body.total_items).toBe(before);
    expect((await t.call('POST', '/api/v1/queries/prod/explode/query_x', { token: admin })).body.code).toBe('invalid_action');
    expect((await t.call('GET', '/api/v1/queries/prod/query_nope', { token: admin })).status).toBe(404);
  });
});

describe('targets', () => {
  it('platform and tag targets pick the matching nodes of the environment only', async () => {
    const linux = await t.call('POST', '/api/v1/queries/prod', { token: admin, body: { query: 'SELECT 1', platform_list: ['linux'] } });
    const nodes = (await t.call('GET', '/api/v1/nodes/prod?platform=linux&page_size=500', { token: admin })).body;
    expect(linux.body.expected).toBe(nodes.total_items);
    const all = await t.call('POST', '/api/v1/queries/prod', { token: admin, body: { query: 'SELECT 1' } });
    const every = (await t.call('GET', '/api/v1/nodes/prod?page_size=500', { token: admin })).body.total_items;
    expect(all.body.expected).toBe(every);
    const shown = await t.call('GET', `/api/v1/queries/prod/${all.body.query_name}`, { token: admin });
    expect(shown.body).toMatchObject({
      expected: every,
      executions: 0,
      status: 'ACTIVE',
      targets: [{ type: 'environment', value: 'prod' }],
    });
  });

  it('cancel stops agents from getting the query', async () => {
    const uuid = randomUUID();
    const e = await post('enroll', { enroll_secret: secret, host_identifier: uuid, host_details: hostDetails(uuid, 'cancel-host') });
    const run = await t.call('POST', '/api/v1/queries/prod', { token: admin, body: { query: 'SELECT 2', uuid_list: [uuid] } });
    expect(Object.keys((await post('read', { node_key: e.body.node_key })).body.queries)).toEqual([run.body.query_name]);
    expect((await t.call('POST', `/api/v1/queries/prod/cancel/${run.body.query_name}`, { token: admin })).status).toBe(200);
    expect((await post('read', { node_key: e.body.node_key })).body.queries).toEqual({});
    expect((await t.call('GET', `/api/v1/queries/prod/${run.body.query_name}`, { token: admin })).body.status).toBe('EXPIRED');
  });

  it('deleting a node drops what it owed to live queries, and the delete is audited in the same write', async () => {
    const uuid = randomUUID();
    await post('enroll', { enroll_secret: secret, host_identifier: uuid, host_details: hostDetails(uuid, 'doomed-host') });
    const run = await t.call('POST', '/api/v1/queries/prod', { token: admin, body: { query: 'SELECT 5', uuid_list: [uuid] } });
    expect(run.status).toBe(200);
    const db = t.server.deps.db;
    const owed = () =>
      db
        .selectFrom('node_queries')
        .innerJoin('nodes', 'nodes.id', 'node_queries.node_id')
        .select('node_queries.status')
        .where('nodes.uuid', '=', uuid)
        .execute();
    const nodeId = (await db.selectFrom('nodes').select('id').where('uuid', '=', uuid).executeTakeFirstOrThrow()).id;
    expect(await owed()).toHaveLength(1);
    expect((await t.call('POST', '/api/v1/nodes/prod/delete', { token: admin, body: { uuid } })).status).toBe(200);
    expect(await db.selectFrom('node_queries').select('query_id').where('node_id', '=', nodeId).execute()).toEqual([]);
    expect(
      await db.selectFrom('audit_logs').select('line').where('line', 'like', `node ${uuid} (doomed-host) deleted%`).execute(),
    ).toHaveLength(1);
  });

  it('rows that are not objects are dropped from an answer; a non-zero status counts as an error', async () => {
    const uuid = randomUUID();
    const e = await post('enroll', { enroll_secret: secret, host_identifier: uuid, host_details: hostDetails(uuid, 'odd-host') });
    const run = await t.call('POST', '/api/v1/queries/prod', { token: admin, body: { query: 'SELECT 4', uuid_list: [uuid] } });
    const name = run.body.query_name as string;
    await post('write', {
      node_key: e.body.node_key,
      queries: { [name]: [1, 'x', null, [2], { a: '1' }] },
      statuses: { [name]: 1 },
      messages: { [name]: 'no such table' },
    });
    const r = await t.call('GET', `/api/v1/queries/prod/results/${name}`, { token: admin });
    expect(r.body.items[0]).toMatchObject({ uuid, status: 1, error: 'no such table', rows: [{ a: '1' }] });
    expect((await t.call('GET', `/api/v1/queries/prod/${name}`, { token: admin })).body).toMatchObject({ errors: 1, executions: 1 });
  });
});

describe("each node's cadence (issue 26): the interval its configuration told it", () => {
  it('a raised interval counts at once, a lowered one from its second config fetch; a live query counts the node online by it', async () => {
    const intervals = (query_interval: number) =>
      t.call('PATCH', '/api/v1/environments/intervals/prod', { token: admin, body: { query_interval } });
    const was = (await t.call('GET', '/api/v1/environments/prod', { token: admin })).body.query_interval as number;
    const uuid = randomUUID();
    const row = () =>
      t.server.deps.db
        .selectFrom('nodes')
        .select(['distributed_interval', 'distributed_interval_told'])
        .where('uuid', '=', uuid)
        .executeTakeFirstOrThrow();
    const cadence = async () => (await row()).distributed_interval;
    /** A config fetch telling the environment's interval; then the node's cadence, once the check-in reached its row. */
    const configFetch = async (key: string, want: number) => {
      const told = (await t.call('GET', '/api/v1/environments/prod', { token: admin })).body.query_interval as number;
      const before = (await row()).distributed_interval_told;
      expect((await post('config', { node_key: key })).body.options).toMatchObject({ distributed_interval: told });
      // Check-ins reach the node rows with the batch's flush: a new telling shows in the told
      // column, written with the cadence; told again, only the cadence can move.
      if (before === told)
        return eventually(async () => ((await cadence()) === want ? want : undefined), `the node's cadence to be ${want}`);
      await eventually(
        async () => ((await row()).distributed_interval_told === told ? true : undefined),
        'the config fetch in the node row',
      );
      expect(await cadence()).toBe(want);
    };
    try {
      expect((await intervals(30)).status).toBe(200);
      const key = (await post('enroll', { enroll_secret: secret, host_identifier: uuid, host_details: hostDetails(uuid, 'cadence-host') }))
        .body.node_key as string;
      expect(await cadence()).toBe(30); // its flags at enroll: the environment's
      expect((await intervals(300)).status).toBe(200);
      await configFetch(key, 300); // longer: at once
      expect((await intervals(2)).status).toBe(200);
      await configFetch(key, 300); // shorter: osquery first waits out its current 300 s pause
      await configFetch(key, 2); // told twice: it polls at 2 s now
      expect((await intervals(30)).status).toBe(200);
      await configFetch(key, 30);
      // Seen a minute ago: offline by the environment's 2 s (at least 10 s), online by its own 30 s (90 s).
      expect((await intervals(2)).status).toBe(200);
      const id = (await t.server.deps.db.selectFrom('nodes').select('id').where('uuid', '=', uuid).executeTakeFirstOrThrow()).id;
      await setSeen(t.server.deps.db, id, { last_seen: new Date(Date.now() - 60_000).toISOString() });
      const run = await t.call('POST', '/api/v1/queries/prod', { token: admin, body: { query: 'SELECT 1;', uuid_list: [uuid] } });
      expect(run.status).toBe(200);
      expect((await t.call('GET', `/api/v1/queries/prod/${run.body.query_name}`, { token: admin })).body).toMatchObject({
        expected: 1,
        online: 1,
        online_pending: 1,
      });
    } finally {
      await intervals(was);
    }
  });
});

describe('http sink', () => {
  it('result logs are POSTed in batches to a collector; a failing sink does not block the agent', async () => {
    const ok = await t.call('POST', '/api/v1/log-sinks', {
      token: admin,
      body: { name: 'collector', type: 'http', source: 'result', environment_id: 0, config: { url: collectorUrl } },
    });
    expect(ok.status).toBe(200);
    const bad = await t.call('POST', '/api/v1/log-sinks', {
      token: admin,
      body: { name: 'down', type: 'http', source: 'result', environment_id: 0, config: { url: 'http://127.0.0.1:1/' } },
    });
    expect(bad.status).toBe(200);
    const uuid = randomUUID();
    const e = await post('enroll', { enroll_secret: secret, host_identifier: uuid, host_details: hostDetails(uuid, 'sink-host') });
    const marker = randomUUID();
    const r = await post('log', { node_key: e.body.node_key, log_type: 'result', data: [{ name: 'pack_x', columns: { marker } }] });
    expect(r.body).toEqual({ node_invalid: false });
    const batch = await eventually(
      async () => collected.flat().find((x) => JSON.stringify(x).includes(marker)),
      'the collector to get the result',
    );
    expect(batch).toMatchObject({ environment: 'prod', node_uuid: uuid, log_type: 'result' });
    // The sink that cannot be reached loses nothing (issues 18, 28): the entry stays in the spool
    // as its backlog and is retried with a backoff; the failures are counted (metrics) and logged.
    expect((await t.call('PATCH', '/api/v1/settings/api/service_metrics', { token: admin, body: { boolean: true } })).status).toBe(200);
    const metrics = await eventually(async () => {
      const m = await t.call('GET', '/metrics', { token: admin });
      return /fleetctl_faults_total\{where="log sink down",kind="error"\} [1-9]/.test(m.body) ? String(m.body) : undefined;
    }, 'the failing sink counted in /metrics');
    const backlog = await eventually(async () => {
      const m = String((await t.call('GET', '/metrics', { token: admin })).body);
      const down = /fleetctl_sink_backlog_entries\{sink="down",environment="global"\} [1-9]/.test(m);
      return down && /fleetctl_sink_backlog_entries\{sink="collector",environment="global"\} 0/.test(m) ? m : undefined;
    }, "the failing sink's backlog in /metrics, none for the collector");
    expect(backlog).toMatch(/fleetctl_sink_delivered_total\{sink="collector",environment="global"\} [1-9]/);
    expect(metrics).toMatch(/fleetctl_sink_failed_total\{sink="down",environment="global"\} [1-9]/);
    const drops = await t.call('GET', `/api/v1/audit-logs?q=${encodeURIComponent('log sink down dropped')}`, { token: admin });
    expect(drops.body.items).toEqual([]);
    expect((await t.call('DELETE', `/api/v1/log-sinks/${bad.body.id}`, { token: admin })).status).toBe(200);
  });
});

describe('enrollment rules on the agent door', () => {
  it('serves the one-liner scripts under their secret paths until they expire; an expired enroll refuses agents', async () => {
    const env = (await t.call('GET', '/api/v1/environments/staging', { token: admin })).body;
    const sflags = parseFlags((await t.call('GET', '/api/v1/environments/staging/enroll/flags', { token: admin })).body.data);
    const script = await agentGet(sflags.hostname, `/${env.uuid}/${env.enroll_secret_path}/enroll.sh`, ca);
    expect(script.status).toBe(200);
    expect(script.text).toContain(env.secret);
    expect((await agentGet(sflags.hostname, `/${env.uuid}/${env.remove_secret_path}/remove.sh`, ca)).status).toBe(200);
    expect((await agentGet(sflags.hostname, `/${env.uuid}/${env.remove_secret_path}/enroll.sh`, ca)).status).toBe(404);
    expect((await agentGet(sflags.hostname, `/${env.uuid}/${'0'.repeat(32)}/enroll.sh`, ca)).status).toBe(404);
    const uuid = randomUUID();
    const body = { enroll_secret: env.secret, host_identifier: uuid, host_details: hostDetails(uuid, 'late-host') };
    expect((await t.call('POST', '/api/v1/environments/staging/enroll/expire', { token: admin })).status).toBe(200);
    expect((await agentPost(sflags.hostname, sflags.endpoint.enroll, body, { ca })).body).toEqual({ node_invalid: true });
    expect((await agentGet(sflags.hostname, `/${env.uuid}/${env.enroll_secret_path}/enroll.sh`, ca)).status).toBe(404);
    expect((await t.call('POST', '/api/v1/environments/staging/enroll/extend', { token: admin })).status).toBe(200);
    expect((await agentPost(sflags.hostname, sflags.endpoint.enroll, body, { ca })).body.node_invalid).toBe(false);
  });
});

describe('the *_tls switches', () => {
  it('off means that endpoint answers as disabled (no queries, no configuration), and osquery keeps its key', async () => {
    const uuid = randomUUID();
    const e = await post('enroll', { enroll_secret: secret, host_identifier: uuid, host_details: hostDetails(uuid, 'switch-host') });
    await t.call('POST', '/api/v1/queries/prod', { token: admin, body: { query: 'SELECT 3', uuid_list: [uuid] } });
    const db = t.server.store.db;
    await db.updateTable('environments').set({ query_tls: 0, config_tls: 0 }).where('name', '=', 'prod').execute();
    try {
      expect((await post('read', { node_key: e.body.node_key })).body).toEqual({ queries: {}, node_invalid: false });
      expect((await post('config', { node_key: e.body.node_key })).body).toEqual({ node_invalid: false });
    } finally {
      await db.updateTable('environments').set({ query_tls: 1, config_tls: 1 }).where('name', '=', 'prod').execute();
    }
    expect(Object.keys((await post('read', { node_key: e.body.node_key })).body.queries)).toHaveLength(1);
  });
});
