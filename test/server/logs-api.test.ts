// Logs and query reports (issue 30), on SQLite and PostgreSQL: lines posted through the agent door
// (osquery's protocol) read back through GET /api/v1/logs/{env} with every filter, both orders and
// cursors; following by long polling; query reports from snapshot and differential results; the
// node read's status problems; the errors and permissions; retention with the server's clock moved.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/api-server.js';
import { eventually, parseFlags, type Flags } from '../helpers/osquery-agent.js';
import { added, logAgent, removed, snapshot, status, type LoggingNode } from '../helpers/osquery-logs.js';

let t: TestServer;
let admin: string;
let flags: Flags;
let secret: string;
let ca: string;

let agent: ReturnType<typeof logAgent>;
const enroll = (hostname?: string) => agent.enroll(hostname);
const send = (n: LoggingNode, type: 'result' | 'status', data: unknown[]) => agent.send(n, type, data);

const logs = async (query: string, token = admin) => t.call('GET', `/api/v1/logs/prod${query ? `?${query}` : ''}`, { token });
const ids = (b: { items: { id: number }[] }) => b.items.map((i) => i.id);

beforeAll(async () => {
  t = await startTestServer({ devNodes: 20, agent: { host: '127.0.0.1', port: 0 } });
  admin = await t.login('admin');
  ca = t.server.agent!.certPem;
  flags = parseFlags((await t.call('GET', '/api/v1/environments/prod/enroll/flags', { token: admin })).body.data);
  secret = (await t.call('GET', '/api/v1/environments/prod/enroll/secret', { token: admin })).body.data;
  agent = logAgent(flags, secret, ca);
  // The store's first line, received two hours ago by the server's clock (moved back for it):
  // later lines have later ids and times, as they do when time passes.
  const real = t.server.deps.now;
  t.server.deps.now = () => new Date(Date.now() - 2 * 3600_000);
  try {
    await send(await enroll(), 'result', [added('old_q', { v: 'old' }, 0)]);
  } finally {
    t.server.deps.now = real;
  }
}, 180_000);

afterAll(async () => {
  await t?.close();
});

describe('GET /api/v1/logs/{env}', () => {
  let a: LoggingNode;
  let b: LoggingNode;
  beforeAll(async () => {
    a = await enroll();
    b = await enroll();
    await send(a, 'result', [added('users_q', { user: 'root', uid: '0' }, 0), added('users_q', { user: 'alice', uid: '1000' }, 0)]);
    await send(b, 'result', [added('users_q', { user: 'bob', uid: '1001' }, 0)]);
    await send(a, 'result', [added('pack_web_listening', { port: '443' }, 0), added('pack_webx_other', { port: '8443' }, 0)]);
    await send(a, 'status', [
      status(0, 'osquery started'),
      status(1, 'Scheduled query may be outdated'),
      status(2, 'Error executing scheduled query nope: no such table: nope_table'),
    ]);
  });

  it('gives the lines newest first, each the envelope a sink gets plus its id', async () => {
    const r = await logs(`node=${a.hostname}`);
    expect(r.status).toBe(200);
    const lines = r.body.items;
    expect(lines).toHaveLength(7);
    expect(ids(r.body)).toEqual([...ids(r.body)].sort((x, y) => y - x));
    const alice = lines.find((l: { entry: { columns?: { user?: string } } }) => l.entry.columns?.user === 'alice');
    expect(Object.keys(alice)).toEqual(['id', 'environment', 'node_uuid', 'hostname', 'log_type', 'name', 'received_at', 'entry']);
    expect(alice).toMatchObject({ environment: 'prod', node_uuid: a.uuid, hostname: a.hostname, log_type: 'result', name: 'users_q' });
    expect(alice.entry).toEqual(added('users_q', { user: 'alice', uid: '1000' }, 0));
    expect(Date.parse(alice.received_at)).not.toBeNaN();
    const st = lines.find((l: { log_type: string }) => l.log_type === 'status');
    expect(st.name).toBeUndefined();
    expect(r.body.next_cursor).toBeNull();
  });

  it('filters by query, pack, type, severity, node and text', async () => {
    const users = (await logs('query=users_q')).body.items;
    expect(users.map((l: { entry: { columns: { user: string } } }) => l.entry.columns.user).sort()).toEqual(['alice', 'bob', 'root']);
    expect((await logs(`query=users_q&node=${b.uuid.toUpperCase()}`)).body.items.map((l: { hostname: string }) => l.hostname)).toEqual([
      b.hostname,
    ]);
    // A pack by the prefix of its queries' names: pack "web" is not pack "webx".
    expect((await logs('pack=web')).body.items.map((l: { name: string }) => l.name)).toEqual(['pack_web_listening']);
    expect((await logs('pack=web&query=listening')).body.items.map((l: { name: string }) => l.name)).toEqual(['pack_web_listening']);
    expect((await logs(`type=status&node=${a.hostname}`)).body.items).toHaveLength(3);
    const problems = (await logs('severity=warning')).body.items.map((l: { entry: { severity: number } }) => l.entry.severity);
    expect(problems).toEqual([2, 1]);
    expect((await logs('severity=error')).body.items).toHaveLength(1);
    expect((await logs('q=ALICE')).body.items).toHaveLength(1);
    expect((await logs('q=%25')).body.items).toHaveLength(0); // % is literal
    expect((await logs('type=result&q=no%20such')).body.items).toHaveLength(0);
  });

  it('pages with cursors in both orders, every line once', async () => {
    const all = ids((await logs(`node=${a.hostname}&limit=1000`)).body);
    for (const order of ['desc', 'asc']) {
      const seen: number[] = [];
      let cursor = '';
      for (let i = 0; i < 20; i++) {
        const p = (await logs(`node=${a.hostname}&limit=2&order=${order}${cursor ? `&cursor=${cursor}` : ''}`)).body;
        seen.push(...ids(p));
        if (p.next_cursor === null) break;
        cursor = p.next_cursor;
      }
      expect(seen).toEqual(order === 'desc' ? all : [...all].reverse());
    }
  });

  it('bounds by time (received_at): since and until', async () => {
    // The 'old' line was received two hours ago (the first line of the store, beforeAll below).
    await send(b, 'result', [added('old_q', { v: 'new' }, 0)]);
    const hourAgo = new Date(Date.now() - 3600_000).toISOString();
    expect(
      (await logs(`query=old_q&since=${hourAgo}`)).body.items.map((l: { entry: { columns: { v: string } } }) => l.entry.columns.v),
    ).toEqual(['new']);
    expect(
      (await logs(`query=old_q&until=${hourAgo}`)).body.items.map((l: { entry: { columns: { v: string } } }) => l.entry.columns.v),
    ).toEqual(['old']);
    expect((await logs(`query=old_q&since=${new Date(Date.now() + 60_000).toISOString()}`)).body.items).toEqual([]);
  });

  it('refuses what it cannot answer with 400 naming the parameter, 404 for an unknown node', async () => {
    for (const [q, what] of [
      ['type=query', 'type'],
      ['severity=loud', 'severity'],
      ['severity=warning&type=result', 'severity'],
      ['query=x&type=status', 'query'],
      ['order=up', 'order'],
      ['limit=abc', 'limit'],
      ['cursor=xyz', 'cursor'],
      ['wait=5', 'wait'],
      ['wait=61&order=asc', 'wait'],
      ['since=yesterday', 'since'],
      ['since=2026-11-25T10:00:00Z&until=2026-11-25T09:00:00Z', 'since'],
    ]) {
      const r = await logs(q);
      expect(r.status, q).toBe(400);
      expect(r.body.error, q).toContain(what);
    }
    expect((await logs('node=no-such-host')).status).toBe(404);
    expect((await t.call('GET', '/api/v1/logs/nope', { token: admin })).status).toBe(404);
  });

  it('env users read their environment, others are refused', async () => {
    const analyst = await t.login('analyst');
    expect((await logs('', analyst)).status).toBe(200);
    const devUser = await t.login('dev-user', 'dev');
    expect((await logs('', devUser)).status).toBe(403);
    expect((await t.call('GET', '/api/v1/logs/prod')).status).toBe(401);
  });
});

describe('following', () => {
  it('a request with wait is held until a line arrives, and answers with it', async () => {
    const n = await enroll();
    const head = (await logs(`node=${n.hostname}`)).body.follow_cursor as string;
    const held = logs(`node=${n.hostname}&order=asc&cursor=${head}&wait=60`);
    // Held: the server's watch has the request waiting (nothing has arrived for it).
    await eventually(async () => (t.server.logWatch.size > 0 ? true : undefined), 'the follower waiting');
    expect(await t.server.deps.metrics!.text()).toMatch(/^fleetctl_log_followers 1$/m);
    await send(n, 'result', [added('follow_q', { v: 'live' }, 0)]);
    const r = await held;
    expect(r.status).toBe(200);
    expect(r.body.items.map((l: { entry: { columns: { v: string } } }) => l.entry.columns.v)).toEqual(['live']);
    // The next poll from its follow_cursor sees nothing new (no line twice).
    expect((await logs(`node=${n.hostname}&order=asc&cursor=${r.body.follow_cursor}&wait=1`)).body.items).toEqual([]);
  });

  it('a wait that sees nothing answers empty, with a cursor to go on from', async () => {
    const n = await enroll();
    const head = (await logs(`node=${n.hostname}`)).body.follow_cursor;
    const r = await logs(`node=${n.hostname}&order=asc&cursor=${head}&wait=1`);
    expect(r.status).toBe(200);
    expect(r.body.items).toEqual([]);
    expect(Number(r.body.follow_cursor)).toBeGreaterThanOrEqual(Number(head));
  });
});

describe('query reports', () => {
  it('a snapshot query: each node its last snapshot', async () => {
    const a = await enroll('rep-a');
    const b = await enroll('rep-b');
    await send(a, 'result', [snapshot('snap_q', [{ u: '1' }, { u: '2' }])]);
    await send(a, 'result', [snapshot('snap_q', [{ u: '3' }])]);
    await send(b, 'result', [snapshot('snap_q', [{ u: '4' }, { u: '5' }])]);
    const r = await t.call('GET', '/api/v1/reports/prod/snap_q', { token: admin });
    expect(r.status).toBe(200);
    expect(r.body.items.map((i: { hostname: string; rows: unknown[]; kind: string }) => [i.hostname, i.kind, i.rows])).toEqual([
      ['rep-a', 'snapshot', [{ u: '3' }]],
      ['rep-b', 'snapshot', [{ u: '4' }, { u: '5' }]],
    ]);
    expect(r.body).toMatchObject({ name: 'snap_q', total_nodes: 2, total_rows: 3, hostname_width: 5, next_cursor: null });
    // Paged by hostname.
    const p1 = (await t.call('GET', '/api/v1/reports/prod/snap_q?limit=1', { token: admin })).body;
    const p2 = (await t.call('GET', `/api/v1/reports/prod/snap_q?limit=1&cursor=${p1.next_cursor}`, { token: admin })).body;
    expect([...p1.items, ...p2.items].map((i: { hostname: string }) => i.hostname)).toEqual(['rep-a', 'rep-b']);
    expect(p2.next_cursor).toBeNull();
    expect((await t.call('GET', '/api/v1/reports/prod/snap_q?node=rep-b', { token: admin })).body.items).toHaveLength(1);
  });

  it('a differential query: rows added and not removed, over several requests', async () => {
    const n = await enroll('rep-diff');
    await send(n, 'result', [added('diff_q', { p: '22' }, 0), added('diff_q', { p: '80' }, 0)]);
    await send(n, 'result', [removed('diff_q', { p: '22' }, 1), added('diff_q', { p: '443' }, 1)]);
    const r = (await t.call('GET', `/api/v1/reports/prod/diff_q?node=${n.uuid}`, { token: admin })).body;
    expect(r.items[0]).toMatchObject({
      node_uuid: n.uuid,
      kind: 'differential',
      counter: 1,
      rows: [{ p: '80' }, { p: '443' }],
      truncated: false,
    });
    expect(Date.parse(r.items[0].reported_at)).not.toBeNaN();
    const list = (await t.call('GET', '/api/v1/reports/prod', { token: admin })).body;
    expect(list.find((q: { name: string }) => q.name === 'diff_q')).toMatchObject({ nodes: 1, rows: 2 });
  });

  it('one batch touching 40 reports (more than go as bound values) keeps each', async () => {
    const n = await enroll('rep-many');
    await send(
      n,
      'result',
      Array.from({ length: 40 }, (_, k) => snapshot(`many_q${k}`, [{ k: String(k) }])),
    );
    for (const k of [0, 31, 32, 39]) {
      const r = (await t.call('GET', `/api/v1/reports/prod/many_q${k}`, { token: admin })).body;
      expect(r.items.map((i: { hostname: string; rows: unknown[] }) => [i.hostname, i.rows])).toEqual([['rep-many', [{ k: String(k) }]]]);
    }
  });

  it('a name neither scheduled nor reported is 404; a scheduled one not reported yet is empty', async () => {
    expect((await t.call('GET', '/api/v1/reports/prod/never_heard_of', { token: admin })).status).toBe(404);
    const put = await t.call('PUT', '/api/v1/environments/prod/config/schedule', {
      token: admin,
      body: { quiet_q: { query: 'SELECT 1', interval: 60 } },
    });
    expect(put.status).toBe(200);
    const r = await t.call('GET', '/api/v1/reports/prod/quiet_q', { token: admin });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ items: [], total_nodes: 0 });
  });
});

describe('nodes show: status problems', () => {
  it('the node read carries its last warnings and errors, newest first, not its info lines', async () => {
    const n = await enroll();
    await send(n, 'status', [status(1, 'first warning'), status(0, 'info line'), status(2, 'an error')]);
    const node = (await t.call('GET', `/api/v1/nodes/prod/node/${n.uuid}`, { token: admin })).body;
    expect(node.status_problems.map((l: { entry: { message: string } }) => l.entry.message)).toEqual(['an error', 'first warning']);
    expect(node.status_problems[0]).toMatchObject({ node_uuid: n.uuid, log_type: 'status' });
    const quiet = await enroll();
    expect((await t.call('GET', `/api/v1/nodes/prod/node/${quiet.uuid}`, { token: admin })).body.status_problems).toEqual([]);
  });
});

describe('retention', () => {
  it('lines older than the retention go when the clock passes it, and the bytes bound holds', async () => {
    const setting = (name: string, integer: number) =>
      t.call('PATCH', `/api/v1/settings/admin/${name}?env=dev`, { token: admin, body: { integer } });
    // In dev, so the other tests' lines in prod stay.
    const devFlags = parseFlags((await t.call('GET', '/api/v1/environments/dev/enroll/flags', { token: admin })).body.data);
    const devSecret = (await t.call('GET', '/api/v1/environments/dev/enroll/secret', { token: admin })).body.data;
    const dev = logAgent(devFlags, devSecret, ca);
    const node = await dev.enroll('ret-1');
    const devLog = (data: unknown[]) => dev.send(node, 'result', data);
    const devLines = async (q = '', token = admin) => {
      const r = await t.call('GET', `/api/v1/logs/dev?limit=1000${q}`, { token });
      expect(r.status).toBe(200);
      return r.body.items as { id: number; entry: { columns: { i: string } } }[];
    };

    // 0 MiB would delete every line as it arrives: refused; 0 days means no age bound.
    expect((await setting('retention_logs_mb', 0)).status).toBe(400);
    expect((await setting('retention_logs_days', 0)).status).toBe(200);
    await devLog([added('ret_q', { i: 'before' }, 0), added('stale_q', { i: 'x' }, 0)]);
    expect((await t.call('GET', '/api/v1/reports/dev/stale_q', { token: admin })).body.total_nodes).toBe(1);
    expect((await setting('retention_logs_days', 1)).status).toBe(200);
    // Two days later by the server's clock: the line is past the retention and is pruned.
    const real = t.server.deps.now;
    t.server.deps.now = () => new Date(Date.now() + 2 * 86_400_000);
    try {
      // The admin's session has expired by then too: a new one, two days later.
      const later = await t.login('admin');
      await devLog([added('ret_q', { i: 'after' }, 0)]);
      await eventually(
        async () => ((await devLines('&query=ret_q', later)).map((l) => l.entry.columns.i).join() === 'after' ? true : undefined),
        'the old line pruned',
      );
      // A report not updated within the retention goes too (stale_q); one updated after the move stays.
      await eventually(
        async () => ((await t.call('GET', '/api/v1/reports/dev/stale_q', { token: later })).status === 404 ? true : undefined),
        'the stale report purged',
      );
      expect((await t.call('GET', '/api/v1/reports/dev/ret_q', { token: later })).body.total_nodes).toBe(1);
    } finally {
      t.server.deps.now = real;
    }

    // The bytes bound: 1 MiB for dev, 3 MiB sent; the newest stay, the store of dev holds at most 1 MiB.
    expect((await setting('retention_logs_mb', 1)).status).toBe(200);
    const pad = 'x'.repeat(2000);
    for (let batch = 0; batch < 30; batch++) {
      await devLog(Array.from({ length: 50 }, (_, i) => added('bulk_q', { i: String(batch * 50 + i), pad }, 1)));
    }
    const bytes = async () => {
      const r = await t.server.store.db
        .selectFrom('log_spool')
        .select((eb) => eb.fn.sum<number>(eb.fn('length', ['line'])).as('b'))
        .where(
          'environment_id',
          '=',
          (await t.server.store.db.selectFrom('environments').select('id').where('name', '=', 'dev').executeTakeFirstOrThrow()).id,
        )
        .executeTakeFirst();
      return Number(r?.b ?? 0);
    };
    await eventually(async () => ((await bytes()) <= 1024 * 1024 ? true : undefined), 'dev within 1 MiB');
    const left = await devLines('&query=bulk_q');
    expect(left.length).toBeGreaterThan(0);
    expect(left[0].entry.columns.i).toBe('1499'); // the newest stayed
  });
});
