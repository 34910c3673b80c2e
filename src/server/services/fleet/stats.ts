// Dashboard statistics (4.20). Node counts are counted by the database (GROUP BY over the
// node_seen_env_bucket_lastseen index: node_seen carries each node's environment and bucket), never by loading nodes, and cached per node generation
// (node-counts.ts), so a request between node changes costs a short index range, not a rescan.
import { sql } from 'kysely';
import type { Caller, Deps } from '../../context.js';
import { Platforms, type DashboardStats, type EnvironmentStats, type Platform, type PlatformCounts } from '../../../api/index.js';
import { accessibleEnvs } from '../environments/environments.js';
import { enrollmentStateOf } from '../../../api/index.js';
import { inactiveHours } from '../environments/settings-values.js';
import { carveStatusSql } from '../agents/carves.js';
import { readGenerations, type Generations } from '../../store/node-index.js';
import { between, cachedCount, COUNTS } from './node-counts.js';

const zeroCounts = (): PlatformCounts => ({ darwin: 0, linux: 0, windows: 0, other: 0 });

function bucketOf(b: string): Platform {
  return (Platforms as readonly string[]).includes(b) ? (b as Platform) : 'other';
}

interface BucketCount {
  environment_id: number;
  platform_bucket: string;
  total: number;
  active: number;
}

/** Nodes per environment and platform bucket, and how many of them are active at `cutoff`. */
async function countByBucket(deps: Deps, ids: number[], cutoff: string): Promise<BucketCount[]> {
  const rows = await deps.db
    .selectFrom('node_seen')
    .select([
      'environment_id',
      'platform_bucket',
      (eb) => eb.fn.countAll<number>().as('total'),
      sql<number>`sum(case when last_seen >= ${cutoff} then 1 else 0 end)`.as('active'),
    ])
    .where('environment_id', 'in', ids)
    .groupBy(['environment_id', 'platform_bucket'])
    .execute();
  return rows.map((r) => ({
    environment_id: r.environment_id,
    platform_bucket: r.platform_bucket,
    total: Number(r.total),
    active: Number(r.active ?? 0),
  }));
}

/**
 * The earliest last_seen at or after a cutoff, per set of environments and node generation:
 * until the cutoff passes it no node changes side, and the counts move without a query.
 */
const QUIET = new WeakMap<object, Map<string, { generation: number; from: string; next: string | null }>>();

async function quietUntil(deps: Deps, ids: number[], from: string, generation: number): Promise<string | null> {
  let quiet = QUIET.get(deps.db);
  if (!quiet) QUIET.set(deps.db, (quiet = new Map<string, { generation: number; from: string; next: string | null }>()));
  const key = ids.join(',');
  const q = quiet.get(key);
  if (q && q.generation === generation && q.from <= from) return q.next;
  // One lookup per environment: each is the first entry of an index range.
  let next: string | null = null;
  for (const id of ids) {
    const row = await deps.db
      .selectFrom('node_seen')
      .select((eb) => eb.fn.min<string>('last_seen').as('next'))
      .where('environment_id', '=', id)
      .where('last_seen', '>=', from)
      .executeTakeFirst();
    if (row?.next && (next === null || row.next < next)) next = row.next;
  }
  if (quiet.size >= 1000) quiet.clear();
  quiet.set(key, { generation, from, next });
  return next;
}

/** Moves active counts from cutoff `from` to `to`: nodes last seen in between changed sides. */
async function advanceActive(
  deps: Deps,
  ids: number[],
  prev: BucketCount[],
  from: string,
  to: string,
  generation: number,
): Promise<BucketCount[]> {
  if (from < to) {
    const next = await quietUntil(deps, ids, from, generation);
    if (next === null || to <= next) return prev;
  }
  const { lo, hi, sign } = between(from, to);
  const moved = await deps.db
    .selectFrom('node_seen')
    .select(['environment_id', 'platform_bucket', (eb) => eb.fn.countAll<number>().as('n')])
    .where('environment_id', 'in', ids)
    .where('last_seen', '>=', lo)
    .where('last_seen', '<', hi)
    .groupBy(['environment_id', 'platform_bucket'])
    .execute();
  const gone = new Map(moved.map((m) => [`${m.environment_id}/${m.platform_bucket}`, sign * Number(m.n)]));
  return prev.map((r) => ({ ...r, active: r.active - (gone.get(`${r.environment_id}/${r.platform_bucket}`) ?? 0) }));
}

interface LiveCount {
  environment_id: number;
  type: string;
  n: number;
}

/**
 * Live queries and running carves per environment, read once per change of what they depend on:
 * the live-queries counter (a query or carve added, deleted or its state changed) and the carve
 * files counter (a carve's state follows its files: carveStatusSql), on any replica.
 */
const LIVE = new WeakMap<object, Map<string, { generation: string; counts: Promise<LiveCount[]> }>>();

function liveCounts(deps: Deps, ids: number[], gens: Generations): Promise<LiveCount[]> {
  let live = LIVE.get(deps.db);
  if (!live) LIVE.set(deps.db, (live = new Map<string, { generation: string; counts: Promise<LiveCount[]> }>()));
  const key = ids.join(',');
  const generation = `${gens.liveQueries}/${gens.carveFiles}`;
  const cached = live.get(key);
  if (cached?.generation === generation) return cached.counts;
  // Standard queries: active and not finished. Carves: the same, and carve_status still ACTIVE or
  // PENDING, so the count matches what `carves list` shows as running.
  const counts = deps.db
    .selectFrom('queries')
    .select(['environment_id', 'type', (eb) => eb.fn.countAll<number>().as('n')])
    .where('environment_id', 'in', ids)
    .where('active', '<>', 0)
    .where('completed', '=', 0)
    .where('deleted', '=', 0)
    .where('expired', '=', 0)
    .where((eb) => eb.or([eb('type', '=', 'query'), eb.and([eb('type', '=', 'carve'), eb(carveStatusSql(), 'in', ['ACTIVE', 'PENDING'])])]))
    .groupBy(['environment_id', 'type'])
    .execute()
    .then((rows) => rows.map((r) => ({ environment_id: r.environment_id, type: r.type, n: Number(r.n) })));
  if (live.size >= 1000) live.clear();
  const entry = { generation, counts };
  live.set(key, entry);
  // A failed read is not kept: the next request reads again.
  const map = live;
  counts.catch(() => map.get(key) === entry && map.delete(key));
  return counts;
}

export async function dashboardStats(deps: Deps, caller: Caller): Promise<DashboardStats> {
  const gens = caller.generations ?? (await readGenerations(deps.db, deps.readNow));
  const envs = await accessibleEnvs(deps, caller, gens.config);
  const globalHours = await inactiveHours(deps, 0, gens.config);
  const stats = new Map<number, EnvironmentStats>(
    envs.map((e) => [
      e.id,
      {
        uuid: e.uuid,
        name: e.name,
        active: 0,
        inactive: 0,
        total: 0,
        active_queries: 0,
        active_carves: 0,
        platform_counts: zeroCounts(),
        enrollment: enrollmentStateOf(e.accept_enrolls !== 0, e.enroll_expire, deps.now()),
        enroll_expire: e.enroll_expire,
      },
    ]),
  );
  if (envs.length > 0) {
    // An env may override inactive_hours; envs sharing a cutoff are counted in one query.
    const nowMs = deps.now().getTime();
    const byCutoff = new Map<string, number[]>();
    for (const e of envs) {
      const cutoff = new Date(nowMs - (await inactiveHours(deps, e.id, gens.config)) * 3600_000).toISOString();
      byCutoff.set(cutoff, [...(byCutoff.get(cutoff) ?? []), e.id]);
    }
    const generation = gens.counts;
    for (const [cutoff, ids] of byCutoff) {
      const rows = await cachedCount(
        deps.db,
        JSON.stringify(['stats', ids]),
        generation,
        cutoff,
        () => countByBucket(deps, ids, cutoff),
        (prev, from, to) => advanceActive(deps, ids, prev, from, to, generation),
        COUNTS,
        gens.seen,
      );
      for (const r of rows) {
        const s = stats.get(r.environment_id)!;
        s.total += r.total;
        s.active += r.active;
        s.inactive += r.total - r.active;
        s.platform_counts[bucketOf(r.platform_bucket)] += r.total;
      }
    }

    for (const q of await liveCounts(deps, [...stats.keys()], gens)) {
      const s = stats.get(q.environment_id)!;
      if (q.type === 'query') s.active_queries += q.n;
      else s.active_carves += q.n;
    }
  }

  const environments = [...stats.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const sum = (f: (s: EnvironmentStats) => number) => environments.reduce((acc, s) => acc + f(s), 0);
  const platform_counts = zeroCounts();
  for (const s of environments) for (const p of Platforms) platform_counts[p] += s.platform_counts[p];
  return {
    total_nodes: sum((s) => s.total),
    active_nodes: sum((s) => s.active),
    inactive_nodes: sum((s) => s.inactive),
    inactive_hours: globalHours,
    total_active_queries: sum((s) => s.active_queries),
    total_active_carves: sum((s) => s.active_carves),
    platform_counts,
    environments,
  };
}
