// The SQL of a node list: its parameters, filters, sorts and totals (moved exactly as the activity
// cutoff moves, cached per change generation: node-counts.ts).
import { sql, type ExpressionBuilder, type SelectQueryBuilder } from 'kysely';
import type { Deps } from '../../context.js';
import type { DB, EnvironmentRow } from '../../store/schema.js';
import {
  NodeSorts,
  NodeStatuses,
  Platforms,
  SortOrders,
  HealthStatuses,
  RiskLevels,
  type NodesQuery,
  type NodeSort,
} from '../../../api/index.js';
import { badRequest } from '../../errors.js';
import { searchMatch } from '../../store/node-index.js';
import { between, cachedCount, COUNTS } from './node-counts.js';
import { healthWhere, onSeen, riskWhere, type HealthBounds, type HealthStatus, type RiskLevel } from './node-filters.js';

/** A node and its node_seen row (migration 017_node_seen): every list, count and read joins the two. */
export const nodesWithSeen = (db: Deps['db']) => db.selectFrom('nodes').innerJoin('node_seen', 'node_seen.node_id', 'nodes.id');
/**
 * The nodes of an environment with their node_seen rows. Sorted by last_seen, the environment is
 * named on node_seen too (the same value), so its (environment, last_seen) index drives the
 * query; otherwise not: the planner multiplied the two conditions as if independent and, its row
 * estimates halved, sorted a deep page's rows in memory instead of walking an index.
 */
export const nodesOfEnv = (deps: Deps, env: EnvironmentRow, bySeen = false): NodeQuery => {
  const q = nodesWithSeen(deps.db).where('nodes.environment_id', '=', env.id);
  return bySeen ? q.where('node_seen.environment_id', '=', env.id) : q;
};

/** Whether p needs node_seen's columns: a time filter (status, health, risk), the config filter, or the last_seen sort. */
export const usesSeen = (p: Filters) => !!(p.status || p.health || p.risk || p.config || p.sort === 'lastseen');

/**
 * The environment's nodes for a page of p: joined to node_seen only when p needs its columns, so a
 * page sorted by a nodes column walks that column's index alone (typed as the join; it names
 * nodes' columns only).
 */
export const nodesFor = (deps: Deps, env: EnvironmentRow, p: Filters): NodeQuery =>
  usesSeen(p) ? nodesOfEnv(deps, env, p.sort === 'lastseen') : deps.db.selectFrom('nodes').where('nodes.environment_id', '=', env.id);
/** What a shaped node needs from node_seen, besides the nodes row. */
export const SEEN_FIELDS = [
  sql<string | null>`nullif(node_seen.last_seen, '')`.as('last_seen'),
  'node_seen.bytes_received',
  'node_seen.config_fetched_at',
] as const;

export const SORT_COLUMNS: Record<NodeSort, string> = {
  hostname: 'hostname',
  localname: 'localname',
  uuid: 'uuid',
  ip: 'ip_address',
  platform: 'platform',
  version: 'platform_version',
  osquery: 'osquery_version_key',
  lastseen: 'node_seen.last_seen',
  firstseen: 'created_at',
};

export function oneOf<T extends string>(name: string, value: string | undefined, allowed: readonly T[]): T | undefined {
  if (value === undefined || value === '') return undefined;
  const v = value.toLowerCase();
  if (!(allowed as readonly string[]).includes(v)) throw badRequest(`invalid ${name} "${value}"; valid values: ${allowed.join(', ')}`);
  return v as T;
}

export interface NodeListParams {
  status?: (typeof NodeStatuses)[number];
  platform?: (typeof Platforms)[number];
  q?: string;
  /** Only nodes carrying the tag of this name (issue 10: `nodes list --tag`). */
  tag?: string;
  /** Issue 22: nodes not (stale) or already (current) on the configuration whose hash is configHash. */
  config?: 'stale' | 'current';
  configHash?: string;
  /** Issue 20: derived health.status / posture.risk_level (node-filters.ts), with the bounds they compare to. */
  health?: HealthStatus;
  risk?: RiskLevel;
  bounds?: HealthBounds;
  sort: NodeSort;
  order: 'asc' | 'desc';
}

export function parseNodeQuery(q: NodesQuery): NodeListParams {
  const sort = oneOf('sort', q.sort, NodeSorts) ?? 'lastseen';
  const order = oneOf('order', q.order ?? q.dir, SortOrders) ?? (sort === 'lastseen' || sort === 'firstseen' ? 'desc' : 'asc');
  return {
    status: oneOf('status', q.status, NodeStatuses),
    platform: oneOf('platform', q.platform, Platforms),
    q: q.q === undefined || q.q === '' ? undefined : q.q,
    tag: q.tag === undefined || q.tag === '' ? undefined : q.tag,
    config: oneOf('config', q.config, ['stale', 'current'] as const),
    health: oneOf('health', q.health, HealthStatuses),
    risk: oneOf('risk', q.risk, RiskLevels),
    sort,
    order,
  };
}

export type NodeQuery = SelectQueryBuilder<DB, 'nodes' | 'node_seen', object>;

/** The list's filters with the tag resolved to its id (the tag of that name in the environment). */
export interface Filters extends NodeListParams {
  tagId?: number;
  /** A short q read in one pass over the environment's search text (node-index.ts: searchMatch). */
  qScan?: boolean;
}

/** The tag filter: a row whose node (`nodeId`, its column in the query) has the tag in node_tags. */
function hasTag(eb: ExpressionBuilder<DB, 'node_seen'>, nodeId: 'nodes.id' | 'node_seen.node_id', tagId: number) {
  return eb.exists(
    eb
      .selectFrom('node_tags')
      .select('node_tags.node_id')
      .where('node_tags.node_id', '=', sql.ref<number>(nodeId))
      .where('node_tags.tag_id', '=', tagId),
  );
}

export function applyFilters(deps: Deps, q: NodeQuery, p: Filters, cutoffIso: string): NodeQuery {
  if (p.status === 'active') q = q.where('node_seen.last_seen', '>=', cutoffIso);
  if (p.status === 'inactive') q = q.where('node_seen.last_seen', '<', cutoffIso); // never seen ('') included
  if (p.platform) q = q.where('nodes.platform_bucket', '=', p.platform);
  if (p.q) q = q.where(searchMatch(deps.dialect, p.q, p.qScan));
  // A probe of node_tags' primary key (node_id, tag_id) per node the outer index visits: the
  // plan for a tag on many nodes, read in the sort's order. tagDriven() below is the other one.
  if (p.tagId !== undefined) {
    const tagId = p.tagId;
    q = q.where((eb) => hasTag(eb, 'nodes.id', tagId));
  }
  // A node is on the current configuration once it fetched it: its recorded hash is the env's.
  if (p.config === 'stale') {
    const hash = p.configHash ?? '';
    q = q.where((eb) => eb.or([eb('node_seen.config_fetched_at', 'is', null), eb('nodes.config_hash', '!=', hash)]));
  }
  if (p.config === 'current')
    q = q.where('node_seen.config_fetched_at', 'is not', null).where('nodes.config_hash', '=', p.configHash ?? '');
  const bounds = p.bounds;
  if (p.health && bounds) {
    const health = p.health;
    q = q.where((eb) => healthWhere(onSeen(eb), health, bounds));
  }
  if (p.risk && bounds) {
    const risk = p.risk;
    q = q.where((eb) => riskWhere(onSeen(eb), risk, bounds));
  }
  return q;
}

/**
 * Filters that node_seen answers with at most a probe of node_tags (status, platform, health, risk,
 * tag): counted without visiting nodes. Every node of a tag is a node of the tag's environment
 * (tags.ts tags only those), whose copy node_seen holds.
 */
export const seenOnly = (p: Filters) => !p.q && !p.config;

/**
 * The environment's node_seen rows matching p (seenOnly(p)): status, platform, health and risk on
 * its own columns and indexes. Typed as the join the other queries are: it names node_seen's
 * columns only, which both have, so counting code is shared.
 */
export function seenRows(deps: Deps, env: EnvironmentRow, p: Filters, cutoffIso: string): NodeQuery {
  return seenFilters(deps.db.selectFrom('node_seen').where('node_seen.environment_id', '=', env.id), p, cutoffIso);
}

/** seenRows' filters, on any query of node_seen rows. */
function seenFilters(q: NodeQuery, p: Filters, cutoffIso: string): NodeQuery {
  if (p.status === 'active') q = q.where('node_seen.last_seen', '>=', cutoffIso);
  if (p.status === 'inactive') q = q.where('node_seen.last_seen', '<', cutoffIso); // never seen ('') included
  if (p.platform) q = q.where('node_seen.platform_bucket', '=', p.platform);
  if (p.tagId !== undefined) {
    const tagId = p.tagId;
    // node_tags' primary key (node_id, tag_id) probed per node_seen row, or the tag's
    // (tag_id, node_id) range joined to them: the planner's choice by their sizes.
    q = q.where((eb) => hasTag(eb, 'node_seen.node_id', tagId));
  }
  const bounds = p.bounds;
  if (p.health && bounds) {
    const health = p.health;
    q = q.where((eb) => healthWhere(onSeen(eb), health, bounds));
  }
  if (p.risk && bounds) {
    const risk = p.risk;
    q = q.where((eb) => riskWhere(onSeen(eb), risk, bounds));
  }
  return q;
}

/**
 * The rows of the environment matching p: from node_seen alone when it can answer (counts), else
 * the join. `ranged`: the caller adds a range of last_seen (crossed(), the quiet probe, moved
 * health totals): the join then names the environment on node_seen too, so that range is one
 * range of its (environment, last_seen) index; without it PostgreSQL has no index for a bare
 * last_seen range and read all of node_seen (83-208 ms a probe under check-ins at 100,000 nodes).
 */
export const matching = (deps: Deps, env: EnvironmentRow, p: Filters, cutoffIso: string, ranged = false): NodeQuery =>
  seenOnly(p) ? seenRows(deps, env, p, cutoffIso) : applyFilters(deps, nodesOfEnv(deps, env, ranged), p, cutoffIso);

/**
 * The nodes of a tag, read from the tag's node_tags range (node_tags_tag_node) and joined to
 * nodes by primary key: the plan for a tag on few nodes, or a page deep into a tag's list, where
 * walking the sort index would visit many nodes per match. CROSS JOIN keeps SQLite from
 * reordering the two (PostgreSQL treats it as an inner join and plans it by its statistics).
 */
export function tagDriven(deps: Deps, env: EnvironmentRow, p: Filters & { tagId: number }, cutoffIso: string): NodeQuery {
  if (seenOnly(p) && SORT_COLUMNS[p.sort] === 'node_seen.last_seen') {
    // Sorted by last_seen and filtered on node_seen's columns alone: the tag's range joined to
    // node_seen (by its key on SQLite; PostgreSQL may hash-join), and no probe of nodes per tagged
    // node (a page deep into a tag of 8,355 of 100,000 nodes on PostgreSQL: 68 ms with the probes,
    // 37 ms without). Every node of a tag is a node of the tag's environment (seenOnly), which
    // node_seen's copy of the node names.
    const seen = deps.db
      .selectFrom('node_tags')
      .crossJoin('node_seen')
      .whereRef('node_seen.node_id', '=', 'node_tags.node_id')
      .where('node_tags.tag_id', '=', p.tagId)
      .where('node_seen.environment_id', '=', env.id);
    return seenFilters(seen as unknown as NodeQuery, { ...p, tagId: undefined }, cutoffIso);
  }
  const tagged = deps.db.selectFrom('node_tags').crossJoin('nodes');
  // node_seen only when p needs its columns (as nodesFor).
  const base = (usesSeen(p) ? tagged.innerJoin('node_seen', 'node_seen.node_id', 'nodes.id') : tagged)
    .whereRef('nodes.id', '=', 'node_tags.node_id')
    .where('node_tags.tag_id', '=', p.tagId)
    .where('nodes.environment_id', '=', env.id);
  return applyFilters(deps, base as unknown as NodeQuery, { ...p, tagId: undefined }, cutoffIso);
}

const TAG_IDS = new WeakMap<object, Map<string, { generation: number; id: number }>>();

/**
 * The tag's id in the environment; undefined when the environment has no tag of that name. A tag
 * found is remembered per counts generation (`generation`), which its rename or deletion moves
 * (a tag's creation does not on SQLite: a name not found is not remembered).
 */
export async function tagIdOf(deps: Deps, env: EnvironmentRow, name: string, generation?: number): Promise<number | undefined> {
  let ids = TAG_IDS.get(deps.db);
  if (!ids) TAG_IDS.set(deps.db, (ids = new Map<string, { generation: number; id: number }>()));
  const key = JSON.stringify([env.id, name]);
  const hit = ids.get(key);
  if (hit && generation !== undefined && hit.generation === generation) return hit.id;
  const row = await deps.db
    .selectFrom('tags')
    .select('id')
    .where('environment_id', '=', env.id)
    .where('name', '=', name)
    .executeTakeFirst();
  if (row && generation !== undefined) {
    if (ids.size >= 1000) ids.clear();
    ids.set(key, { generation, id: row.id });
  }
  return row?.id;
}

/** How many nodes carry the tag: one range of the covering (tag_id, node_id) index. */
export function taggedCount(deps: Deps, tagId: number, generation: number): Promise<number> {
  return cachedCount(deps.db, JSON.stringify(['tagged', tagId]), generation, '', async () => {
    const row = await deps.db
      .selectFrom('node_tags')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('tag_id', '=', tagId)
      .executeTakeFirst();
    return Number(row?.n ?? 0);
  });
}

export async function countOf(q: NodeQuery): Promise<number> {
  const row = await q.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirst();
  return Number(row?.n ?? 0);
}

/** How many nodes matching p (status aside) were last seen between two cutoffs: they changed status. */
export async function crossed(deps: Deps, env: EnvironmentRow, p: Filters, from: string, to: string): Promise<number> {
  const { lo, hi, sign } = between(from, to);
  return (
    sign *
    (await countOf(
      matching(deps, env, { ...p, status: undefined }, to, true)
        .where('node_seen.last_seen', '>=', lo)
        .where('node_seen.last_seen', '<', hi),
    ))
  );
}

export type Crossed = (from: string, to: string) => Promise<number>;

/**
 * What is known of a filter's nodes near the activity cutoff, per filter and counts generation: no
 * node matching it was last seen in [lo, next) (next null: none at or after lo). Until the cutoff
 * passes next no node can change side, so most requests need no query to move their counts and
 * pages along with the clock. A check-in only writes a last_seen of now, after every cutoff, so
 * it never puts a node into such a range; anything else that could (a node added, edited,
 * tagged) moves the counts generation.
 */
interface Quiet {
  generation: number;
  lo: string;
  next: string | null;
}
export const QUIET = new WeakMap<object, Map<string, Quiet>>();

/**
 * The earliest last_seen of a node matching p (status aside) in [from, below) (below undefined:
 * no upper bound): the first entry of the environment's last_seen index at `from`, each probed
 * for the other filters, read in order and stopped at the first match (not min() over every
 * match: PostgreSQL aggregated all of them, 186-597 ms under check-ins at 100,000 nodes).
 */
async function firstSeen(deps: Deps, env: EnvironmentRow, p: Filters, from: string, below?: string): Promise<string | null> {
  let q = matching(deps, env, { ...p, status: undefined }, from, true).where('node_seen.last_seen', '>=', from);
  if (below !== undefined) q = q.where('node_seen.last_seen', '<', below);
  const row = await q.select('node_seen.last_seen').orderBy('node_seen.last_seen').limit(1).executeTakeFirst();
  return row?.last_seen ?? null;
}

/**
 * Whether no node matching p (status aside) can have been last seen in [lo, hi), from what QUIET
 * knows (one probe of the last_seen index when it is not enough). `lane`: the cutoff the range
 * moves with, so two cutoffs of one filter far apart (health's inactive and stale) each keep
 * their own knowledge instead of probing in turn; the activity cutoff's lane is ''.
 */
export async function quietIn(
  deps: Deps,
  env: EnvironmentRow,
  p: Filters,
  generation: number,
  lo: string,
  hi: string,
  lane = '',
): Promise<boolean> {
  let known = QUIET.get(deps.db);
  if (!known) QUIET.set(deps.db, (known = new Map<string, Quiet>()));
  const key = JSON.stringify([env.id, p.platform ?? '', p.q ?? '', p.tagId ?? '', p.config ?? '', p.configHash ?? '', lane]);
  let q = known.get(key);
  if (q && q.generation !== generation) q = undefined;
  if (!q || lo < q.lo || (q.next !== null && lo > q.next)) {
    // A total recounted in the background moves from a cutoff a little older than the one
    // last probed: only [lo, q.lo) is then unknown, one short range.
    const next = q && lo < q.lo ? ((await firstSeen(deps, env, p, lo, q.lo)) ?? q.next) : await firstSeen(deps, env, p, lo);
    q = { generation, lo, next };
    if (known.size >= 1000) known.clear();
    known.set(key, q);
  }
  return q.next === null || hi <= q.next;
}

/** crossed() for one request: counted once for the total and the page, skipped while quiet. */
export function crossedOnce(deps: Deps, env: EnvironmentRow, p: Filters, generation: number): Crossed {
  const seen = new Map<string, Promise<number>>();
  const count = async (from: string, to: string): Promise<number> => {
    // Concurrent requests finish out of order, so the cutoff also steps back a little: the same
    // knowledge answers [to, from) then.
    if (from === to) return 0;
    const { lo, hi } = between(from, to);
    if (await quietIn(deps, env, p, generation, lo, hi)) return 0;
    return crossed(deps, env, p, from, to);
  };
  return (from, to) => {
    const k = `${from} ${to}`;
    let n = seen.get(k);
    if (!n) seen.set(k, (n = count(from, to)));
    return n;
  };
}

/** Total of a filtered list, cached (node-counts.ts), moved exactly with the activity cutoff. */
/** `seen`: the seen counter (a status-filtered total is recounted softly when it moves: node-counts.ts). */
export function filteredTotal(
  deps: Deps,
  env: EnvironmentRow,
  p: Filters,
  cutoff: string,
  generation: number,
  cross: Crossed,
  seen?: number,
): Promise<number> {
  const key = JSON.stringify([
    'nodes',
    env.id,
    p.status ?? '',
    p.platform ?? '',
    p.q ?? '',
    p.tagId ?? '',
    p.config ?? '',
    p.configHash ?? '',
  ]);
  const timed = p.status === 'active' || p.status === 'inactive';
  return cachedCount(
    deps.db,
    key,
    generation,
    timed ? cutoff : '',
    // A tag's count joins its node_tags range to node_seen (status, platform) or to nodes (a
    // search, the config filter): at most the tagged nodes are visited.
    () => {
      const f = { ...p, qScan: true };
      if (f.tagId === undefined || seenOnly(f)) {
        // Every node of a tag is a node of the tag's environment (tags.ts tags only those).
        if (f.tagId !== undefined && !f.status && !f.platform) return taggedCount(deps, f.tagId, generation);
        return countOf(matching(deps, env, f, cutoff));
      }
      return countOf(tagDriven(deps, env, { ...f, tagId: f.tagId }, cutoff));
    },
    async (n, from, to) => {
      const moved = await cross(from, to);
      return p.status === 'active' ? n - moved : n + moved;
    },
    COUNTS,
    timed ? seen : undefined,
  );
}
