// Issue 11: the nodes list, search and stats run on indexes (EXPLAIN QUERY PLAN of the very SQL
// the services run), search through the trigram index finds exactly what the old substring scan
// found, and cached counts stay right after node changes made by any writer.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { CompiledQuery, Kysely, SqliteDialect, sql } from 'kysely';
import { migrate } from '../../src/server/store/db.js';
import type { DB } from '../../src/server/store/schema.js';
import type { Caller, Deps } from '../../src/server/context.js';
import { createEnvironment, generateNodes, insertNodes } from '../../src/server/seed.js';
import { ensureSettings } from '../../src/server/bootstrap.js';
import { listNodes } from '../../src/server/services/fleet/nodes.js';
import { crossed, crossedOnce, QUIET, type Filters } from '../../src/server/services/fleet/node-query.js';
import { readGenerations } from '../../src/server/store/node-index.js';
import { dashboardStats } from '../../src/server/services/fleet/stats.js';
import { listAuditLogs } from '../../src/server/services/audit/audit-query.js';
import { HealthStatuses, NodeSorts, NodeStatuses, Platforms, RiskLevels } from '../../src/api/index.js';
import { startTestServer, type TestServer } from '../helpers/api-server.js';
import { onPostgres, testDatabaseUrl } from '../helpers/test-db.js';
import { openPostgres } from '../../src/server/store/postgres.js';
import type { Store } from '../../src/server/store/db.js';
import { setSeen } from '../helpers/node-seen.js';

const SEARCHED = ['uuid', 'hostname', 'localname', 'ip_address', 'username', 'osquery_user', 'platform', 'osquery_version'] as const;

// SQLite's plans (EXPLAIN QUERY PLAN); the same questions asked of PostgreSQL's planner are the
// describe at the end of this file. Each runs in its database's project and skips in the other.
describe.skipIf(onPostgres)('query plans', () => {
  const sqlite = new Database(':memory:');
  const ran: { sql: string; params: unknown[] }[] = [];
  // Records every statement the services prepare and run, to EXPLAIN it afterwards.
  const recording = new Proxy(sqlite, {
    get(target, prop) {
      if (prop === 'prepare')
        return (text: string) => {
          const stmt = target.prepare(text);
          const record = (params: unknown[]) => ran.push({ sql: text, params });
          return new Proxy(stmt, {
            get(s, p) {
              const v = Reflect.get(s, p, s) as unknown;
              if (p === 'all' || p === 'run' || p === 'get' || p === 'iterate')
                return (...params: unknown[]) => (record(params.flat()), (v as (...a: unknown[]) => unknown).apply(s, params));
              return typeof v === 'function' ? v.bind(s) : v;
            },
          });
        };
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
  const db = new Kysely<DB>({ dialect: new SqliteDialect({ database: recording }) });
  const deps = { db, dialect: 'sqlite', now: () => new Date(), config: {} } as unknown as Deps;
  const caller = { user: { id: 1, username: 'admin' }, isSuperAdmin: true, access: new Map(), jti: '', csrfToken: '' } as unknown as Caller;
  let envId = 0;

  beforeAll(async () => {
    await migrate(db, 'sqlite');
    await ensureSettings(db, new Date());
    envId = await createEnvironment(db, 'prod', { uuid: '11111111-1111-4111-a111-111111111111', hostname: 'h', now: new Date() });
    await insertNodes(db, generateNodes(7, 'prod', envId, 300, Date.now()));
    // A tag on most nodes and one on a few: the list reads each from a different end.
    const ids = (await db.selectFrom('nodes').select('id').orderBy('id').execute()).map((r) => r.id);
    for (const [name, every] of [
      ['common', 2],
      ['rare', 50],
    ] as const) {
      const { id } = await db
        .insertInto('tags')
        .values({ name, environment_id: envId, created_at: '', updated_at: '' } as never)
        .returning('id')
        .executeTakeFirstOrThrow();
      await db
        .insertInto('node_tags')
        .values(ids.filter((_, i) => i % every === 0).map((node_id) => ({ node_id, tag_id: id })))
        .execute();
    }
  });
  afterAll(async () => db.destroy());

  /** The plan lines of every statement that read `nodes` or `node_seen` while running fn. */
  async function plansOf(fn: () => Promise<unknown>): Promise<{ sql: string; plan: string[] }[]> {
    ran.length = 0;
    await fn();
    return ran
      .filter((r) => /^\s*select/i.test(r.sql) && /"nodes"|\bnodes\b|\bnode_seen\b/.test(r.sql))
      .map((r) => ({
        sql: r.sql,
        plan: sqlite
          .prepare(`explain query plan ${r.sql}`)
          .all(...(r.params as never[]))
          .map((x) => (x as { detail: string }).detail),
      }));
  }

  function expectIndexed(plans: { sql: string; plan: string[] }[], some = true) {
    if (some) expect(plans.length).toBeGreaterThan(0);
    for (const { sql, plan } of plans) {
      // A full pass over nodes (table or whole index) is a SCAN without a constraint; the one
      // allowed SCAN is the newest version read, which stops at the first index entry (LIMIT 1).
      const scans = plan.filter(
        (l) => /^SCAN (nodes|node_seen)\b/.test(l) && !(/limit/i.test(sql) && /order by "osquery_version_key" desc/i.test(sql)),
      );
      expect(scans, `${sql}\n${plan.join('\n')}`).toEqual([]);
    }
  }

  const env = () => ({ id: envId, name: 'prod', config_interval: 300 }) as never;

  it('the nodes list uses an index for every filter and sort', async () => {
    for (const status of [undefined, ...NodeStatuses])
      for (const platform of [undefined, ...Platforms])
        for (const sort of NodeSorts) expectIndexed(await plansOf(() => listNodes(deps, env(), { status, platform, sort })));
  });

  it('health and risk filters (issue 20) count on the node_seen_env_health index, never the table', async () => {
    for (const health of HealthStatuses) {
      const plans = await plansOf(() => listNodes(deps, env(), { health }));
      expectIndexed(plans);
      const count = plans.find((p) => /count\(\*\)/i.test(p.sql))!;
      expect(count.plan.join('\n'), count.sql).toMatch(/COVERING INDEX node_seen_env_health/);
    }
    for (const risk of RiskLevels) {
      const plans = await plansOf(() => listNodes(deps, env(), { risk, status: 'active', platform: 'linux' }));
      expectIndexed(plans);
    }
    for (const sort of NodeSorts) expectIndexed(await plansOf(() => listNodes(deps, env(), { risk: 'high', sort })));
  });

  it('the tag filter reads the tag through its (tag, node) index, with every other filter and sort', async () => {
    let seen = 0;
    for (const tag of ['common', 'rare'])
      for (const status of [undefined, 'active'])
        for (const query of [{}, { platform: 'linux' }, { q: 'web' }, { q: 'e' }])
          for (const sort of NodeSorts)
            for (const page of ['1', '4']) {
              const plans = await plansOf(() => listNodes(deps, env(), { tag, status, sort, page, page_size: '10', ...query }));
              // (A tag's count alone reads node_tags only, and a page past the end reads nothing.)
              expectIndexed(plans, false);
              seen += plans.length;
              // Never the tag's whole list re-read per node (the correlated subquery of before).
              for (const { sql: text, plan } of plans) expect(plan.join('\n'), text).not.toMatch(/CORRELATED LIST SUBQUERY|SCAN node_tags/);
            }
    expect(seen).toBeGreaterThan(100);
  });

  it('a search too short for trigrams counts on the search-text index', async () => {
    const plans = await plansOf(() => listNodes(deps, env(), { q: 'we' }));
    expectIndexed(plans);
    const count = plans.find((p) => /count\(\*\)/i.test(p.sql))!;
    expect(count.plan.join('\n')).toMatch(/COVERING INDEX nodes_env_search_text/);
  });

  it('the audit list pages and counts every filter combination on an index', async () => {
    const audited: { sql: string; plan: string[] }[] = [];
    const auditPlans = async (query: Record<string, string>) => {
      ran.length = 0;
      await listAuditLogs(deps, caller, query);
      for (const r of ran.filter((x) => /^\s*select/i.test(x.sql) && /audit_logs/.test(x.sql)))
        audited.push({
          sql: r.sql,
          plan: sqlite
            .prepare(`explain query plan ${r.sql}`)
            .all(...(r.params as never[]))
            .map((x) => (x as { detail: string }).detail),
        });
    };
    await db
      .insertInto('audit_logs')
      .values({
        created_at: '',
        line: 'user admin logged in',
        log_type: 1,
        severity: 0,
        service: 'api',
        username: 'admin',
        environment_id: envId,
      } as never)
      .execute();
    for (const username of [undefined, 'admin'])
      for (const service of [undefined, 'api'])
        for (const envRef of [undefined, 'prod'])
          for (const q of [undefined, 'logged', 'lo'])
            await auditPlans(
              Object.fromEntries(Object.entries({ username, service, env: envRef, q }).filter(([, v]) => v !== undefined)) as Record<
                string,
                string
              >,
            );
    expect(audited.length).toBeGreaterThan(0);
    for (const { sql: text, plan } of audited) {
      // Allowed: the newest-first walk of the whole table without a filter (it stops at the
      // page), its covering count, and a q too short for trigrams (one pass, cached per counter).
      if (!/\bwhere\b/i.test(text) || /lower\((audit_logs\.)?line\)/.test(text)) continue;
      const full = plan.filter((l) => /^SCAN audit_logs\b/.test(l));
      expect(full, `${text}\n${plan.join('\n')}`).toEqual([]);
    }
    expect(audited.some((p) => p.plan.some((l) => /audit_search VIRTUAL TABLE/.test(l)))).toBe(true);
  });

  it('search q goes through the trigram index', async () => {
    for (const query of [{ q: 'web' }, { q: 'web', status: 'active' }, { q: 'ubuntu', platform: 'linux', sort: 'hostname' }]) {
      const plans = await plansOf(() => listNodes(deps, env(), query));
      expectIndexed(plans);
      expect(plans.some((p) => p.plan.some((l) => /nodes_search VIRTUAL TABLE/.test(l)))).toBe(true);
    }
  });

  it("moving a total to a new cutoff reads a range of the environment's last_seen index, with a tag, a search or the config filter too", async () => {
    const tagId = (await db.selectFrom('tags').select('id').where('name', '=', 'common').executeTakeFirstOrThrow()).id;
    for (const plans of await cutoffMoves(db, deps, envId, tagId, async (fn) => plansOf(fn))) {
      expect(plans.length).toBe(2); // the probe for the next node to cross, and the count of those that did
      for (const { sql: text, plan } of plans)
        expect(plan.join('\n'), text).toMatch(
          /SEARCH node_seen USING (COVERING )?INDEX node_seen_env_\w+ \(environment_id=\? AND (platform_bucket=\? AND )?last_seen>\?/,
        );
    }
  });

  it('a total moved to a later cutoff, back to an earlier one, or over a range known quiet moves by the nodes that crossed', async () => {
    const tagId = (await db.selectFrom('tags').select('id').where('name', '=', 'common').executeTakeFirstOrThrow()).id;
    await expectCrossings(db, deps, envId, tagId);
  });

  it('stats counts on the (environment, platform, last_seen) index of node_seen', async () => {
    const plans = await plansOf(async () => {
      await dashboardStats(deps, caller); // counts
      await new Promise((r) => setTimeout(r, 5));
      await dashboardStats(deps, caller); // moves the cached active counts to the new cutoff
    });
    expectIndexed(plans);
    expect(plans.some((p) => p.plan.some((l) => /node_seen_env_bucket_lastseen/.test(l)))).toBe(true);
    // Moving to the new cutoff: a lookup of the next node to cross (the first entry of an index
    // range), and a count of the nodes in between only when one did.
    const moves = plans
      .flatMap((p) => p.plan)
      .filter((l) => /USING (COVERING )?INDEX node_seen_env_lastseen(_bucket)? \(environment_id=\? AND last_seen>\?/.test(l));
    expect(moves.length, plans.map((p) => `${p.sql}\n${p.plan.join('\n')}`).join('\n---\n')).toBeGreaterThan(0);
  });
});

// PostgreSQL's plans (EXPLAIN): run in the postgres project only, as the SQLite ones above in the sqlite one.
describe.runIf(onPostgres)('query plans on PostgreSQL', () => {
  let store: Store;
  const ran: { sql: string; params: readonly unknown[] }[] = [];
  let deps: Deps;
  const caller = { user: { id: 1, username: 'admin' }, isSuperAdmin: true, access: new Map(), jti: '', csrfToken: '' } as unknown as Caller;
  let envId = 0;

  beforeAll(async () => {
    store = await openPostgres((await testDatabaseUrl())!, { onQuery: (q, params) => ran.push({ sql: q, params }) });
    await ensureSettings(store.db, new Date());
    envId = await createEnvironment(store.db, 'prod', { uuid: '11111111-1111-4111-a111-111111111111', hostname: 'h', now: new Date() });
    // Enough nodes that the planner's costs favour the trigram index as they do at fleet size.
    await insertNodes(store.db, generateNodes(7, 'prod', envId, 5000, Date.now()));
    await sql`analyze`.execute(store.db);
    deps = { db: store.db, dialect: 'postgres', now: () => new Date(), config: {} } as unknown as Deps;
  });
  afterAll(async () => store?.close());

  /** The plan of every statement that read `nodes` while running fn (sequential scans off: can an index answer it?). */
  async function plansOf(fn: () => Promise<unknown>): Promise<{ sql: string; plan: string }[]> {
    ran.length = 0;
    await fn();
    const reads = ran.filter((r) => /^\s*select/i.test(r.sql) && /"nodes"|"node_seen"/.test(r.sql));
    const out: { sql: string; plan: string }[] = [];
    await store.db.connection().execute(async (c) => {
      await sql`set enable_seqscan = off`.execute(c);
      for (const r of reads) {
        const rows = (await c.executeQuery(CompiledQuery.raw(`explain ${r.sql}`, [...r.params]))).rows as { 'QUERY PLAN': string }[];
        out.push({ sql: r.sql, plan: rows.map((x) => x['QUERY PLAN']).join('\n') });
      }
      await sql`reset enable_seqscan`.execute(c);
    });
    return out;
  }

  function expectIndexed(plans: { sql: string; plan: string }[]) {
    expect(plans.length).toBeGreaterThan(0);
    for (const { sql: text, plan } of plans) expect(plan, `${text}\n${plan}`).not.toMatch(/Seq Scan on (nodes|node_seen)\b/);
  }

  const env = () => ({ id: envId, name: 'prod', config_interval: 300 }) as never;

  it('the nodes list uses an index for every filter and sort, without a sort step for last_seen', async () => {
    for (const status of [undefined, ...NodeStatuses])
      for (const platform of [undefined, ...Platforms])
        for (const sort of NodeSorts) expectIndexed(await plansOf(() => listNodes(deps, env(), { status, platform, sort })));
    for (const order of ['asc', 'desc'] as const) {
      // A page size of its own: the first pages sorted by last_seen are read together once per
      // batch of check-ins (node-pages.ts orderWindow), and the loop above read them already.
      const plans = await plansOf(() => listNodes(deps, env(), { sort: 'lastseen', order, page_size: '7' }));
      const page = plans.find((p) => /order by "node_seen"\."last_seen"/i.test(p.sql))!;
      expect(page.plan).toMatch(/Index (Only )?Scan( Backward)? using node_seen_env_lastseen/);
      expect(page.plan).not.toMatch(/\bSort\b/);
    }
  });

  it('the tag filter never scans nodes or node_tags, with every other filter and sort', async () => {
    const ids = (await store.db.selectFrom('nodes').select('id').orderBy('id').execute()).map((r) => r.id);
    for (const [name, every] of [
      ['common', 2],
      ['rare', 50],
    ] as const) {
      const { id } = await store.db
        .insertInto('tags')
        .values({ name, environment_id: envId, created_at: '', updated_at: '' } as never)
        .returning('id')
        .executeTakeFirstOrThrow();
      for (let i = 0; i < ids.length; i += 1000)
        await store.db
          .insertInto('node_tags')
          .values(
            ids
              .slice(i, i + 1000)
              .filter((_, j) => (i + j) % every === 0)
              .map((node_id) => ({ node_id, tag_id: id })),
          )
          .execute();
    }
    await sql`analyze`.execute(store.db);
    for (const tag of ['common', 'rare'])
      for (const query of [{}, { status: 'active' }, { platform: 'linux', sort: 'hostname' }, { q: 'web-001' }])
        for (const page of ['1', '40']) {
          const plans = await plansOf(() => listNodes(deps, env(), { tag, page, page_size: '10', ...query }));
          for (const { sql: text, plan } of plans) expect(plan, `${text}\n${plan}`).not.toMatch(/Seq Scan on (nodes|node_tags)/);
        }
    // A page deep into a tag, sorted by last_seen and filtered on node_seen's columns, reads its
    // ids from the tag's range and node_seen alone: no probe of nodes per tagged node.
    for (const query of [{}, { status: 'active' }, { platform: 'linux' }]) {
      const plans = await plansOf(() => listNodes(deps, env(), { tag: 'rare', page: '2', page_size: '9', ...query }));
      const ids = plans.find((p) => /from "node_tags" cross join "node_seen"/i.test(p.sql));
      expect(ids, plans.map((p) => p.sql).join('\n')).toBeDefined();
      expect(ids!.plan, ids!.sql).not.toMatch(/ on nodes\b|nodes_pkey/);
    }
  });

  it('search q goes through the pg_trgm index', async () => {
    for (const query of [{ q: 'web-001' }, { q: 'web-001', status: 'active' }]) {
      const plans = await plansOf(() => listNodes(deps, env(), query));
      expectIndexed(plans);
      expect(
        plans.some((p) => /nodes_search_trgm/.test(p.plan)),
        plans.map((p) => p.plan).join('\n---\n'),
      ).toBe(true);
    }
    // With a platform filter too, the planner may start from either index: never a full scan.
    expectIndexed(await plansOf(() => listNodes(deps, env(), { q: '10.1.2', platform: 'linux', sort: 'hostname' })));
  });

  it("moving a total to a new cutoff reads a range of the environment's last_seen index, with a tag, a search or the config filter too", async () => {
    // Before: min(last_seen) over every match and a crossed count naming the environment on nodes
    // only, so no index of node_seen had the range: all of node_seen read (186-597 ms a probe at
    // 100,000 nodes under check-ins).
    const tagId = (await store.db.selectFrom('tags').select('id').where('name', '=', 'common').executeTakeFirstOrThrow()).id;
    for (const plans of await cutoffMoves(store.db, deps, envId, tagId, async (fn) => plansOf(fn))) {
      expect(plans.length).toBe(2);
      for (const { sql: text, plan } of plans)
        expect(plan, text).toMatch(
          /(Scan using node_seen_env_\w+ on node_seen|Bitmap Index Scan on node_seen_env_\w+)[^\n]*\n\s+Index Cond: \(\(environment_id = \d+\) AND (\(platform_bucket = '\w+'::text\) AND )?\(last_seen >=/,
        );
    }
  });

  it('a total moved to a later cutoff, back to an earlier one, or over a range known quiet moves by the nodes that crossed', async () => {
    const tagId = (await store.db.selectFrom('tags').select('id').where('name', '=', 'common').executeTakeFirstOrThrow()).id;
    await expectCrossings(store.db, deps, envId, tagId);
  });

  it('stats counts on the (environment, platform, last_seen) indexes', async () => {
    const plans = await plansOf(async () => {
      await dashboardStats(deps, caller);
      await new Promise((r) => setTimeout(r, 5));
      await dashboardStats(deps, caller);
    });
    expectIndexed(plans);
    expect(plans.some((p) => /node_seen_env_bucket_lastseen|node_seen_env_lastseen_bucket/.test(p.plan))).toBe(true);
  });

  it("a line search within one user's entries pages on the (username, id) index, not the whole trail newest first", async () => {
    // As the bench's million rows: one entry in 8 is analyst's, one in 5 says "denied".
    await sql`insert into audit_logs (created_at, env_uuid, environment_id, line, log_type, severity, service, source_ip, username, count)
      select '', '', ${envId}, case n % 5 when 3 then 'denied GET /api/v1/nodes/prod: token expired' else 'user ' || n || ' logged in' end,
        1, 0, 'api', '10.1.0.1', case n % 8 when 2 then 'analyst' else 'user' || (n % 8) end, 1
      from generate_series(1, 200000) n`.execute(store.db);
    await sql`analyze audit_logs`.execute(store.db);
    const query = { q: 'denied', username: 'analyst', page: '3', per_page: '50' };
    ran.length = 0;
    const page = await listAuditLogs(deps, caller, query as never);
    const pageQuery = ran.find((r) => /^\s*select "audit_logs"\."id"/i.test(r.sql) && /order by/i.test(r.sql))!;
    const plan = (await store.db.executeQuery(CompiledQuery.raw(`explain ${pageQuery.sql}`, [...pageQuery.params]))).rows
      .map((x) => (x as { 'QUERY PLAN': string })['QUERY PLAN'])
      .join('\n');
    expect(plan, `${pageQuery.sql}\n${plan}`).toMatch(/Index Scan Backward using audit_logs_user on audit_logs/);
    expect(plan).not.toMatch(/\bSort\b/);
    // The same entries as the plain equality, newest first.
    const expected = await store.db
      .selectFrom('audit_logs')
      .select('id')
      .where('username', '=', 'analyst')
      .where(sql<boolean>`lower(line) like '%denied%'`)
      .orderBy('id', 'desc')
      .limit(50)
      .offset(100)
      .execute();
    expect(page.items.map((e) => e.id)).toEqual(expected.map((r) => r.id));
  });
});

describe('over HTTP: search semantics and counts after changes', () => {
  let ts: TestServer;
  let token: string;
  beforeAll(async () => {
    ts = await startTestServer();
    token = await ts.login('admin', 'prod');
  });
  afterAll(async () => ts?.close());
  const db = () => ts.server.deps.db;

  async function allIds(query: string): Promise<number[]> {
    const ids: number[] = [];
    for (let page = 1; ; page++) {
      const r = await ts.call('GET', `/api/v1/nodes/prod?page_size=500&page=${page}&${query}`, { token });
      expect(r.status).toBe(200);
      ids.push(...r.body.items.map((n: { id: number }) => n.id));
      if (page >= r.body.total_pages) {
        expect(r.body.total_items).toBe(ids.length);
        return ids.sort((a, b) => a - b);
      }
    }
  }

  it('q finds exactly the nodes the old case-insensitive substring scan found', async () => {
    const rows = await db()
      .selectFrom('nodes')
      .innerJoin('environments', 'environments.id', 'nodes.environment_id')
      .selectAll('nodes')
      .where('environments.name', '=', 'prod')
      .execute();
    const some = rows[17];
    const queries = [
      'web',
      'WEB',
      'Web-00',
      'prod-db',
      '10.1.',
      'ubuntu',
      'ROOT',
      '5.1',
      'a',
      'z',
      'db',
      '-0',
      '%',
      '_',
      'o"k',
      "o'k",
      'no-such-node',
      some.uuid.slice(4, 15).toUpperCase(),
      some.localname,
      some.osquery_version,
    ];
    for (const q of queries) {
      const expected = rows
        .filter((r) => SEARCHED.some((c) => String(r[c]).toLowerCase().includes(q.toLowerCase())))
        .map((r) => r.id)
        .sort((a, b) => a - b);
      expect(await allIds(`q=${encodeURIComponent(q)}`), `q=${q}`).toEqual(expected);
    }
  });

  /** Every page's ids in order, at one page size. */
  async function orderedIds(query: string, pageSize: number): Promise<number[]> {
    const ids: number[] = [];
    for (let page = 1; ; page++) {
      const r = await ts.call('GET', `/api/v1/nodes/prod?page_size=${pageSize}&page=${page}&${query}`, { token });
      expect(r.status).toBe(200);
      ids.push(...r.body.items.map((n: { id: number }) => n.id));
      if (page >= r.body.total_pages) return ids;
    }
  }

  it('the tag filter finds exactly the tagged nodes, in the same order from either end of the tag', async () => {
    const tags = await db()
      .selectFrom('tags')
      .innerJoin('environments', 'environments.id', 'tags.environment_id')
      .select(['tags.id', 'tags.name'])
      .where('environments.name', '=', 'prod')
      .execute();
    expect(tags.length).toBeGreaterThan(2);
    const hours = (await ts.call('GET', '/api/v1/stats', { token })).body.inactive_hours as number;
    const cutoff = new Date(Date.now() - hours * 3600_000).toISOString();
    for (const tag of tags) {
      const tagged = new Set(
        (await db().selectFrom('node_tags').select('node_id').where('tag_id', '=', tag.id).execute()).map((r) => r.node_id),
      );
      const rows = await db()
        .selectFrom('nodes')
        .innerJoin('environments', 'environments.id', 'nodes.environment_id')
        .innerJoin('node_seen', 'node_seen.node_id', 'nodes.id')
        .select(['nodes.id', 'node_seen.last_seen', 'nodes.platform_bucket', 'nodes.hostname'])
        .where('environments.name', '=', 'prod')
        .execute();
      for (const [query, keep] of [
        ['', () => true],
        ['status=active', (r: (typeof rows)[number]) => r.last_seen !== null && r.last_seen >= cutoff],
        ['platform=linux&sort=hostname', (r: (typeof rows)[number]) => r.platform_bucket === 'linux'],
        ['q=web&sort=ip&order=desc', (r: (typeof rows)[number]) => r.hostname.includes('web')],
        ['q=e&sort=uuid', () => true],
      ] as const) {
        const q = `tag=${encodeURIComponent(tag.name)}&${query}`;
        // Small pages reach deep into the list (read from the tag's end); one big page from the sort's.
        const small = await orderedIds(q, 7);
        const big = await orderedIds(q, 500);
        expect(small, `${tag.name} ${query}`).toEqual(big);
        if (query.startsWith('q=e')) continue; // q=e matches some other column too: checked by order only
        const expected = rows
          .filter((r) => tagged.has(r.id) && keep(r))
          .map((r) => r.id)
          .sort((a, b) => a - b);
        expect(
          [...big].sort((a, b) => a - b),
          `${tag.name} ${query}`,
        ).toEqual(expected);
      }
    }
    expect((await ts.call('GET', '/api/v1/nodes/prod?tag=no-such-tag', { token })).body).toMatchObject({ items: [], total_items: 0 });
  });

  it('search follows renames, new and deleted nodes', async () => {
    const node = await db()
      .selectFrom('nodes')
      .select(['id', 'uuid'])
      .where('hostname', 'like', 'prod-%')
      .orderBy('id')
      .executeTakeFirstOrThrow();
    await db().updateTable('nodes').set({ hostname: 'renamed-zebra-host' }).where('id', '=', node.id).execute();
    expect(await allIds('q=zebra')).toEqual([node.id]);
    expect((await allIds('q=ZEBRA-H')).length).toBe(1);
    const r = await ts.call('POST', '/api/v1/nodes/prod/delete', { token, body: { uuid: node.uuid } });
    expect(r.status).toBe(200);
    expect(await allIds('q=zebra')).toEqual([]);
  });

  async function counts() {
    const active = (await ts.call('GET', '/api/v1/nodes/prod?status=active&page_size=1', { token })).body.total_items as number;
    const all = (await ts.call('GET', '/api/v1/nodes/prod?page_size=1', { token })).body.total_items as number;
    const linux = (await ts.call('GET', '/api/v1/nodes/prod?platform=linux&page_size=1', { token })).body.total_items as number;
    const stats = (await ts.call('GET', '/api/v1/stats', { token })).body;
    const prod = stats.environments.find((e: { name: string }) => e.name === 'prod');
    expect(prod.total).toBe(all);
    expect(prod.active).toBe(active);
    expect(prod.inactive).toBe(all - active);
    return { active, all, linux, stats, prod };
  }

  it('counts and stats stay right after a delete, a check-in, a tag and the passing of time', async () => {
    const before = await counts();
    const hours = before.stats.inactive_hours as number;

    // Delete an active linux node through the API.
    const victim = await db()
      .selectFrom('nodes')
      .innerJoin('environments', 'environments.id', 'nodes.environment_id')
      .innerJoin('node_seen', 'node_seen.node_id', 'nodes.id')
      .select(['nodes.uuid'])
      .where('environments.name', '=', 'prod')
      .where('nodes.platform_bucket', '=', 'linux')
      .where('node_seen.last_seen', '>=', new Date(Date.now() - 3600_000).toISOString())
      .executeTakeFirstOrThrow();
    expect((await ts.call('POST', '/api/v1/nodes/prod/delete', { token, body: { uuid: victim.uuid } })).status).toBe(200);
    const afterDelete = await counts();
    expect(afterDelete).toMatchObject({ all: before.all - 1, active: before.active - 1, linux: before.linux - 1 });
    expect(afterDelete.stats.total_nodes).toBe(before.stats.total_nodes - 1);
    expect(afterDelete.prod.platform_counts.linux).toBe(before.prod.platform_counts.linux - 1);

    // A new check-in (written straight to the table, as an agent endpoint would) makes an inactive node active.
    const sleeper = await db()
      .selectFrom('nodes')
      .innerJoin('environments', 'environments.id', 'nodes.environment_id')
      .innerJoin('node_seen', 'node_seen.node_id', 'nodes.id')
      .select(['nodes.id', 'nodes.uuid'])
      .where('environments.name', '=', 'prod')
      .where('node_seen.last_seen', '<', new Date(Date.now() - (hours + 1) * 3600_000).toISOString())
      .executeTakeFirstOrThrow();
    await setSeen(db(), sleeper.id, { last_seen: new Date().toISOString() });
    const afterCheckin = await counts();
    expect(afterCheckin).toMatchObject({ all: afterDelete.all, active: afterDelete.active + 1 });
    expect(afterCheckin.stats.active_nodes).toBe(afterDelete.stats.active_nodes + 1);

    // Tagging changes no count, and the list shows the tag at once.
    const tag = await db()
      .selectFrom('tags')
      .innerJoin('environments', 'environments.id', 'tags.environment_id')
      .select(['tags.id', 'tags.name'])
      .where('environments.name', '=', 'prod')
      .executeTakeFirstOrThrow();
    await db()
      .insertInto('node_tags')
      .values({ node_id: sleeper.id, tag_id: tag.id })
      .onConflict((oc) => oc.doNothing())
      .execute();
    const first = (await ts.call('GET', '/api/v1/nodes/prod?page_size=1', { token })).body.items[0];
    expect(first.id).toBe(sleeper.id); // the newest check-in sorts first
    expect(first.tags.map((t: { name: string }) => t.name)).toContain(tag.name);
    expect((await counts()).active).toBe(afterCheckin.active);
    // Pages are cached too: any change a listed node shows reaches the next request.
    await setSeen(db(), sleeper.id, { bytes_received: 424242 });
    await db().updateTable('tags').set({ color: '#123456' }).where('id', '=', tag.id).execute();
    const again = (await ts.call('GET', '/api/v1/nodes/prod?page_size=1', { token })).body.items[0];
    expect(again.bytes_received).toBe(424242);
    expect(again.tags.find((t: { name: string }) => t.name === tag.name).color).toBe('#123456');

    // Time alone: a node a minute inside the active window leaves it without any write, once the
    // server's clock has moved two minutes on (moved, not waited for: no race with a slow machine).
    await setSeen(db(), sleeper.id, { last_seen: new Date(Date.now() - hours * 3600_000 + 60_000).toISOString() });
    const edge = await counts();
    expect(edge.active).toBe(afterCheckin.active);
    const signals = async () => (await ts.call('GET', `/api/v1/nodes/prod?q=${sleeper.uuid}`, { token })).body.items[0].health.signals;
    expect(await signals()).not.toContain('inactive');
    const realNow = ts.server.deps.now;
    ts.server.deps.now = () => new Date(realNow().getTime() + 120_000);
    expect(await signals()).toContain('inactive'); // a cached page still shows health as of now
    const later = await counts();
    expect(later.active).toBe(edge.active - 1);
    expect(later.stats.active_nodes).toBe(edge.stats.active_nodes - 1);
    expect(later.stats.inactive_nodes).toBe(edge.stats.inactive_nodes + 1);
    ts.server.deps.now = realNow;
  });
});

/**
 * What crossedOnce is given besides the filters, for the environment envId: the environment (as
 * the service reads it), the counts generation, and the times its nodes were last seen, in order
 * (never-seen nodes left out), to pick cutoffs from.
 */
async function crossingInputs(db: Kysely<DB>, envId: number) {
  const seen = (
    await db
      .selectFrom('node_seen')
      .select('last_seen')
      .where('environment_id', '=', envId)
      .where('last_seen', '>', '')
      .orderBy('last_seen')
      .execute()
  ).map((r) => r.last_seen);
  const env = { id: envId, name: 'prod', config_interval: 300 } as never;
  return { seen, env, generation: (await readGenerations(db)).counts };
}

/**
 * Runs the two statements that move a cached total to a new cutoff (node-query.ts crossedOnce:
 * the probe for the next node to cross, then the count of those between the two cutoffs), for
 * filters that also need node_tags or nodes, over a short range of last_seen, and
 * returns the plans `plansOf` recorded for each filter.
 */
async function cutoffMoves<P>(
  db: Kysely<DB>,
  deps: Deps,
  envId: number,
  tagId: number,
  plansOf: (fn: () => Promise<unknown>) => Promise<P[]>,
): Promise<P[][]> {
  const { seen, env, generation } = await crossingInputs(db, envId);
  // From the first node seen to the one a tenth of the way on: a short range holding some of every filter's nodes.
  const from = seen[0]!;
  const to = seen[Math.floor(seen.length / 10)]!;
  const out: P[][] = [];
  const filters: Partial<Filters>[] = [
    { tagId, platform: 'linux' },
    { tagId },
    { q: 'web' },
    { q: 'e', platform: 'linux' },
    { config: 'stale', configHash: 'x' },
  ];
  for (const f of filters) {
    QUIET.delete(db);
    out.push(await plansOf(() => crossedOnce(deps, env, { sort: 'hostname', order: 'asc', ...f }, generation)(from, to)));
  }
  return out;
}

/**
 * crossedOnce (what is known quiet, probes, counts) agrees with a plain count of the nodes last
 * seen between two cutoffs: forward, backward (a request finishing after a later one), and over
 * ranges inside and around one it probed before.
 */
async function expectCrossings(db: Kysely<DB>, deps: Deps, envId: number, tagId: number): Promise<void> {
  const { seen, env, generation } = await crossingInputs(db, envId);
  const at = (f: number) => seen[Math.floor(seen.length * f)]!;
  let moved = 0;
  for (const f of [{ tagId, platform: 'linux' }, { q: 'web' }, {}] as Partial<Filters>[]) {
    const p = { sort: 'hostname', order: 'asc', ...f } as Filters;
    QUIET.delete(db);
    for (const [a, b] of [
      [at(0.1), at(0.1)],
      [at(0.3), at(0.5)],
      [at(0.5), at(0.3)],
      [at(0.35), at(0.4)],
      [at(0.4), at(0.35)],
      [at(0.2), at(0.35)],
      [at(0.6), at(0.9)],
      [at(0.9), at(0.2)],
    ]) {
      const want = (await crossed(deps, env, p, a, b)) + 0; // (-0 for an empty range)
      expect(await crossedOnce(deps, env, p, generation)(a, b), `${JSON.stringify(f)} ${a} -> ${b}`).toBe(want);
      moved += Math.abs(want);
    }
  }
  expect(moved).toBeGreaterThan(0);
  // A range probed, then one just below it without a node (only the gap is probed), then both.
  const distinct = [...new Set(seen)];
  const i = Math.floor(distinct.length * 0.7);
  const [s1, s2, s3] = [distinct[i]!, distinct[i + 1]!, distinct[i + 2]!];
  const p = { sort: 'hostname', order: 'asc' } as Filters;
  QUIET.delete(db);
  // (s + '0' sorts just after s and before the next time.)
  for (const [a, b] of [
    [s2, `${s3}0`],
    [`${s1}0`, s2],
    [`${s1}0`, `${s3}0`],
    [`${s3}0`, `${s1}0`],
  ]) {
    const want = (await crossed(deps, env, p, a, b)) + 0;
    expect(await crossedOnce(deps, env, p, generation)(a, b), `${a} -> ${b}`).toBe(want);
  }
}
