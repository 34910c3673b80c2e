// Nodes (4.11 list, 4.12 read, 4.13 delete), filtered, sorted and counted in SQL.
import { sql, type SelectQueryBuilder } from 'kysely';
import type { Deps, Caller } from '../../context.js';
import type { DB, EnvironmentRow, NodeRow, TagRow } from '../../store/schema.js';
import {
  NodeSorts, NodeStatuses, Platforms, SortOrders, LogTypes, HealthStatuses, RiskLevels, NEVER,
  type Node, type NodesQuery, type NodeSort, type Page, type Tag, SystemInfo,
} from '../../../api/index.js';
import { badRequest, conflict, notFound } from '../../errors.js';
import { pageOf, parsePage, type PageRequest } from '../../lib/pagination.js';
import { inTransaction } from '../../store/db.js';
import { MIN_INDEXED_QUERY, readGenerations, searchMatch, type Generations } from '../../store/node-index.js';
import { between, cachedCount, COUNTS } from './node-counts.js';
import { deriveHealth, uptime } from './node-health.js';
import { inactiveHours } from '../environments/settings-values.js';
import { writeAudit } from '../audit/audit.js';
import { hasLevel } from '../../permissions.js';
import { toTag } from './tag-shape.js';
import { healthBounds, healthWhere, onSeen, riskWhere, type HealthBounds, type HealthStatus, type RiskLevel } from './node-filters.js';
import { agentConfig } from '../environments/osquery-config.js';

/** A node and its node_seen row (migration 017_node_seen): every list, count and read joins the two. */
export const nodesWithSeen = (db: Deps['db']) => db.selectFrom('nodes').innerJoin('node_seen', 'node_seen.node_id', 'nodes.id');
/**
 * The nodes of an environment with their node_seen rows. Sorted by last_seen, the environment is
 * named on node_seen too (the same value), so its (environment, last_seen) index drives the
 * query; otherwise not: the planner multiplied the two conditions as if independent and, its row
 * estimates halved, sorted a deep page's rows in memory instead of walking an index.
 */
const nodesOfEnv = (deps: Deps, env: EnvironmentRow, bySeen = false): NodeQuery => {
  const q = nodesWithSeen(deps.db).where('nodes.environment_id', '=', env.id);
  return bySeen ? q.where('node_seen.environment_id', '=', env.id) : q;
};

/** Whether p needs node_seen's columns: a time filter (status, health, risk), the config filter, or the last_seen sort. */
const usesSeen = (p: Filters) => !!(p.status || p.health || p.risk || p.config || p.sort === 'lastseen');

/**
 * The environment's nodes for a page of p: joined to node_seen only when p needs its columns, so a
 * page sorted by a nodes column walks that column's index alone (typed as the join; it names
 * nodes' columns only).
 */
const nodesFor = (deps: Deps, env: EnvironmentRow, p: Filters): NodeQuery =>
  usesSeen(p) ? nodesOfEnv(deps, env, p.sort === 'lastseen') : deps.db.selectFrom('nodes').where('nodes.environment_id', '=', env.id);
/** What a shaped node needs from node_seen, besides the nodes row. */
export const SEEN_FIELDS = [sql<string | null>`nullif(node_seen.last_seen, '')`.as('last_seen'), 'node_seen.bytes_received', 'node_seen.config_fetched_at'] as const;

const SORT_COLUMNS: Record<NodeSort, string> = {
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

function oneOf<T extends string>(name: string, value: string | undefined, allowed: readonly T[]): T | undefined {
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
  const order =
    oneOf('order', q.order ?? q.dir, SortOrders) ?? (sort === 'lastseen' || sort === 'firstseen' ? 'desc' : 'asc');
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

/** What health and risk filters compare with in `env` now (live-query targets use it too). */
export async function healthBoundsOf(deps: Deps, env: EnvironmentRow): Promise<HealthBounds> {
  const ctx = await shapeContext(deps, env, await readGenerations(deps.db));
  return healthBounds(ctx.nowMs, ctx.inactiveHours, env, ctx.newestOsqueryVersion);
}

/** The newest osquery version in the fleet (for the outdated signal), counted once per generation. */
async function newestOsqueryVersion(deps: Deps, generation: number): Promise<string> {
  return cachedCount(deps.db, 'newest-osquery', generation, '', async () => {
    const row = await deps.db
      .selectFrom('nodes')
      .select('osquery_version')
      .orderBy('osquery_version_key', 'desc')
      .limit(1)
      .executeTakeFirst();
    return row?.osquery_version ?? '';
  });
}

/** Shared context for shaping node rows into API nodes. */
async function shapeContext(deps: Deps, env: EnvironmentRow, gens: Generations) {
  const [hours, newest] = await Promise.all([inactiveHours(deps, env.id, gens.config), newestOsqueryVersion(deps, gens.counts)]);
  return { nowMs: deps.now().getTime(), inactiveHours: hours, newestOsqueryVersion: newest, env };
}

function toNode(r: NodeRow, tags: Tag[], ctx: Awaited<ReturnType<typeof shapeContext>>, withKey: boolean, systemInfo?: SystemInfo): Node {
  const { health, risk_level } = deriveHealth(
    { lastSeen: r.last_seen, configValid: !!r.config_valid, osqueryVersion: r.osquery_version, configIntervalSeconds: ctx.env.config_interval },
    ctx,
  );
  const node: Node = {
    id: r.id,
    uuid: r.uuid,
    hostname: r.hostname,
    localname: r.localname,
    ip_address: r.ip_address,
    country_code: r.country_code,
    platform: r.platform,
    platform_version: r.platform_version,
    osquery_user: r.osquery_user,
    osquery_version: r.osquery_version,
    cpu: r.cpu,
    memory: r.memory,
    hardware_serial: r.hardware_serial,
    config_hash: r.config_hash,
    config_fetched_at: r.config_fetched_at ?? NEVER,
    daemon_hash: r.daemon_hash,
    extra_data: r.extra_data,
    bytes_received: Number(r.bytes_received),
    environment: ctx.env.name,
    environment_id: r.environment_id,
    user_id: r.user_id,
    username: r.username,
    last_seen: r.last_seen ?? '0001-01-01T00:00:00Z',
    created_at: r.created_at,
    updated_at: r.updated_at,
    health,
    posture: { risk_level },
    tags,
    uptime: uptime(Number(r.uptime_seconds), r.last_seen),
    system_info: systemInfo ?? parseSystemInfo(r),
  };
  if (withKey) node.node_key = r.node_key;
  return node;
}

/**
 * The stored system_info in the API's shape: every group and key present (empty string when the
 * agent did not report it), nothing else. Agents report what osquery's tables give, which is not
 * always every key the API lists, and a missing one must not fail the response schema.
 */
/** A column osquery sent: its text (osquery sends strings; numbers and nested values as they read). */
const columnText = (v: unknown): string => (typeof v === 'string' ? v : (JSON.stringify(v) ?? ''));

const parseSystemInfo = (r: NodeRow): SystemInfo => {
  let raw: unknown;
  try {
    raw = JSON.parse(r.system_info || '{}');
  } catch {
    raw = {};
  }
  const src = (raw && typeof raw === 'object' ? raw : {}) as Record<string, Record<string, unknown> | undefined>;
  const out: Record<string, Record<string, string>> = {};
  for (const [group, schema] of Object.entries(SystemInfo.properties)) {
    const given = src[group] && typeof src[group] === 'object' ? src[group]! : {};
    // NUL padding from older rows (osquery pads cpu_brand with NULs) never reaches a client (issue 26).
    out[group] = Object.fromEntries(Object.keys((schema as { properties: object }).properties).map((k) => [k, given[k] == null ? '' : columnText(given[k]).replace(/\0+/g, '').trim()]));
  }
  // What osquery reported at enroll ("0": it had no configuration yet) is not news once it has
  // fetched one: the node's own config_valid (issue 26).
  if (out.osquery && 'config_valid' in out.osquery) out.osquery.config_valid = r.config_valid ? '1' : '0';
  return out as SystemInfo;
};

async function tagsByNode(deps: Deps, nodeIds: number[]): Promise<Map<number, Tag[]>> {
  const out = new Map<number, Tag[]>();
  if (nodeIds.length === 0) return out;
  const rows = await deps.db
    .selectFrom('node_tags')
    .innerJoin('tags', 'tags.id', 'node_tags.tag_id')
    .selectAll('tags')
    .select('node_tags.node_id')
    .where('node_tags.node_id', 'in', nodeIds)
    .orderBy('tags.name')
    .execute();
  for (const r of rows) {
    const list = out.get(r.node_id) ?? [];
    list.push(toTag(r as TagRow));
    out.set(r.node_id, list);
  }
  return out;
}

type NodeQuery = SelectQueryBuilder<DB, 'nodes' | 'node_seen', object>;

/** The list's filters with the tag resolved to its id (the tag of that name in the environment). */
interface Filters extends NodeListParams {
  tagId?: number;
  /** A short q read in one pass over the environment's search text (node-index.ts: searchMatch). */
  qScan?: boolean;
}

function applyFilters(deps: Deps, q: NodeQuery, p: Filters, cutoffIso: string): NodeQuery {
  if (p.status === 'active') q = q.where('node_seen.last_seen', '>=', cutoffIso);
  if (p.status === 'inactive') q = q.where('node_seen.last_seen', '<', cutoffIso); // never seen ('') included
  if (p.platform) q = q.where('nodes.platform_bucket', '=', p.platform);
  if (p.q) q = q.where(searchMatch(deps.dialect, p.q, p.qScan));
  // A probe of node_tags' primary key (node_id, tag_id) per node the outer index visits: the
  // plan for a tag on many nodes, read in the sort's order. tagDriven() below is the other one.
  if (p.tagId !== undefined) {
    const tagId = p.tagId;
    q = q.where((eb) => eb.exists(eb.selectFrom('node_tags').select('node_tags.node_id').whereRef('node_tags.node_id', '=', 'nodes.id').where('node_tags.tag_id', '=', tagId)));
  }
  // A node is on the current configuration once it fetched it: its recorded hash is the env's.
  if (p.config === 'stale') {
    const hash = p.configHash ?? '';
    q = q.where((eb) => eb.or([eb('node_seen.config_fetched_at', 'is', null), eb('nodes.config_hash', '!=', hash)]));
  }
  if (p.config === 'current') q = q.where('node_seen.config_fetched_at', 'is not', null).where('nodes.config_hash', '=', p.configHash ?? '');
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

/** Filters that node_seen answers alone (status, platform, health, risk): counted without visiting nodes. */
const seenOnly = (p: Filters) => !p.q && p.tagId === undefined && !p.config;

/**
 * The environment's node_seen rows matching p (seenOnly(p)): status, platform, health and risk on
 * its own columns and indexes. Typed as the join the other queries are: it names node_seen's
 * columns only, which both have, so counting code is shared.
 */
function seenRows(deps: Deps, env: EnvironmentRow, p: Filters, cutoffIso: string): NodeQuery {
  let q = deps.db.selectFrom('node_seen').where('node_seen.environment_id', '=', env.id);
  if (p.status === 'active') q = q.where('node_seen.last_seen', '>=', cutoffIso);
  if (p.status === 'inactive') q = q.where('node_seen.last_seen', '<', cutoffIso); // never seen ('') included
  if (p.platform) q = q.where('node_seen.platform_bucket', '=', p.platform);
  const bounds = p.bounds;
  if (p.health && bounds) {
    const health = p.health;
    q = q.where((eb) => healthWhere(eb, health, bounds));
  }
  if (p.risk && bounds) {
    const risk = p.risk;
    q = q.where((eb) => riskWhere(eb, risk, bounds));
  }
  return q;
}

/** The rows of the environment matching p: from node_seen alone when it can answer (counts), else the join. */
const matching = (deps: Deps, env: EnvironmentRow, p: Filters, cutoffIso: string): NodeQuery =>
  seenOnly(p) ? seenRows(deps, env, p, cutoffIso) : applyFilters(deps, nodesOfEnv(deps, env), p, cutoffIso);

/**
 * The nodes of a tag, read from the tag's node_tags range (node_tags_tag_node) and joined to
 * nodes by primary key: the plan for a tag on few nodes, or a page deep into a tag's list, where
 * walking the sort index would visit many nodes per match. CROSS JOIN keeps SQLite from
 * reordering the two (PostgreSQL treats it as an inner join and plans it by its statistics).
 */
function tagDriven(deps: Deps, env: EnvironmentRow, p: Filters & { tagId: number }, cutoffIso: string): NodeQuery {
  const tagged = deps.db.selectFrom('node_tags').crossJoin('nodes');
  // node_seen only when p needs its columns (as nodesFor).
  const base = (usesSeen(p) ? tagged.innerJoin('node_seen', 'node_seen.node_id', 'nodes.id') : tagged)
    .whereRef('nodes.id', '=', 'node_tags.node_id')
    .where('node_tags.tag_id', '=', p.tagId)
    .where('nodes.environment_id', '=', env.id);
  return applyFilters(deps, base as unknown as NodeQuery, { ...p, tagId: undefined }, cutoffIso);
}

/** The tag's id in the environment; undefined when the environment has no tag of that name. */
async function tagIdOf(deps: Deps, env: EnvironmentRow, name: string): Promise<number | undefined> {
  const row = await deps.db.selectFrom('tags').select('id').where('environment_id', '=', env.id).where('name', '=', name).executeTakeFirst();
  return row?.id;
}

/** How many nodes carry the tag: one range of the covering (tag_id, node_id) index. */
function taggedCount(deps: Deps, tagId: number, generation: number): Promise<number> {
  return cachedCount(deps.db, JSON.stringify(['tagged', tagId]), generation, '', async () => {
    const row = await deps.db.selectFrom('node_tags').select((eb) => eb.fn.countAll<number>().as('n')).where('tag_id', '=', tagId).executeTakeFirst();
    return Number(row?.n ?? 0);
  });
}

async function countOf(q: NodeQuery): Promise<number> {
  const row = await q.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirst();
  return Number(row?.n ?? 0);
}

/** How many nodes matching p (status aside) were last seen between two cutoffs: they changed status. */
async function crossed(deps: Deps, env: EnvironmentRow, p: Filters, from: string, to: string): Promise<number> {
  const { lo, hi, sign } = between(from, to);
  return sign * (await countOf(matching(deps, env, { ...p, status: undefined }, to).where('node_seen.last_seen', '>=', lo).where('node_seen.last_seen', '<', hi)));
}

type Crossed = (from: string, to: string) => Promise<number>;

/**
 * Where the next node of a filter crosses the activity cutoff: the earliest last_seen at or after
 * `from`, per filter and node generation. Until the cutoff reaches it no node can change side,
 * so most requests need no query to move their counts and pages along with the clock.
 */
const QUIET = new WeakMap<object, Map<string, { generation: number; from: string; next: string | null }>>();

/** crossed() for one request: counted once for the total and the page, skipped while quiet. */
function crossedOnce(deps: Deps, env: EnvironmentRow, p: Filters, generation: number): Crossed {
  const seen = new Map<string, Promise<number>>();
  let quiet = QUIET.get(deps.db);
  if (!quiet) QUIET.set(deps.db, (quiet = new Map<string, { generation: number; from: string; next: string | null }>()));
  const key = JSON.stringify([env.id, p.platform ?? '', p.q ?? '', p.tagId ?? '', p.config ?? '', p.configHash ?? '']);
  const count = async (from: string, to: string): Promise<number> => {
    if (from < to) {
      let q = quiet.get(key);
      if (!q || q.generation !== generation || from < q.from) {
        const row = await matching(deps, env, { ...p, status: undefined }, to)
          .where('node_seen.last_seen', '>=', from)
          .select((eb) => eb.fn.min<string>('node_seen.last_seen').as('next'))
          .executeTakeFirst();
        q = { generation, from, next: row?.next ?? null };
        if (quiet.size >= 1000) quiet.clear();
        quiet.set(key, q);
      }
      if (q.next === null || to <= q.next) return 0;
    }
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
function filteredTotal(deps: Deps, env: EnvironmentRow, p: Filters, cutoff: string, generation: number, cross: Crossed, seen?: number): Promise<number> {
  const key = JSON.stringify(['nodes', env.id, p.status ?? '', p.platform ?? '', p.q ?? '', p.tagId ?? '', p.config ?? '', p.configHash ?? '']);
  const timed = p.status === 'active' || p.status === 'inactive';
  return cachedCount(
    deps.db,
    key,
    generation,
    timed ? cutoff : '',
    // A tag's count joins its node_tags range to nodes: at most the tagged nodes are visited.
    () => {
      const f = { ...p, qScan: true };
      if (f.tagId === undefined) return countOf(matching(deps, env, f, cutoff));
      // Every node of a tag is a node of the tag's environment (tags.ts tags only those).
      if (!f.status && !f.platform && !f.q && !f.config) return taggedCount(deps, f.tagId, generation);
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

interface PageRows {
  rows: NodeRow[];
  systemInfo: SystemInfo[];
  tags: Map<number, Tag[]>;
  /** The check-ins counter the rows' node_seen fields were read at (fresh(): read again when it moved). */
  checkins?: number;
  /** The page shaped into API nodes, reusable while no node's health can have changed. */
  shaped?: { key: string; validUntil: number; checkins?: number; nodes: Node[]; page?: Page<Node> };
}

/**
 * The page's rows with their node_seen fields as of now: a cached page (its nodes and order) is
 * kept across check-ins, which change only node_seen (migration 017_node_seen); when the check-ins counter
 * moved since its rows were read, their last_seen, bytes and config time are read again, by id.
 */
async function fresh(deps: Deps, page: PageRows, checkins: number): Promise<PageRows> {
  if (page.checkins === checkins || page.rows.length === 0) return page;
  const seen = await deps.db
    .selectFrom('node_seen')
    .select(['node_id', 'last_seen', 'bytes_received', 'config_fetched_at'])
    .where('node_id', 'in', page.rows.map((r) => r.id))
    .execute();
  const byId = new Map(seen.map((r) => [r.node_id, r]));
  for (const r of page.rows) {
    const now = byId.get(r.id);
    if (now) Object.assign(r, { last_seen: now.last_seen || null, bytes_received: now.bytes_received, config_fetched_at: now.config_fetched_at });
  }
  page.checkins = checkins;
  return page;
}

/**
 * The last instant at which the page's derived fields (health, posture) are still what they
 * are at `nowMs`: each node's health changes only when the clock passes its last check-in plus
 * the inactive window, or plus three config intervals (stale). Uptime depends on the row alone.
 */
function shapedUntil(rows: NodeRow[], ctx: Awaited<ReturnType<typeof shapeContext>>): number {
  let until = Number.POSITIVE_INFINITY;
  for (const r of rows) {
    if (!r.last_seen) continue;
    const seen = Date.parse(r.last_seen);
    for (const t of [seen + ctx.inactiveHours * 3600_000, seen + 3 * ctx.env.config_interval * 1000]) if (t >= ctx.nowMs && t < until) until = t;
  }
  return until;
}

/** Pages up to this size are cached (the dashboard's first pages); --all's 500-node pages are not. */
const CACHED_PAGE_SIZE = 100;
/** At most 64 pages of 100 nodes (about 12 MiB) are kept. */
const PAGE_CACHE = { name: 'pages', entries: 64 };

/**
 * One page of rows with their tags and parsed system_info. Cached per content generation (any
 * change to a node or its tags); a status-filtered page also stays valid while no node crossed
 * the activity cutoff since it was read (then the filtered set, hence the page, is the same).
 * Health and uptime depend on the clock: toNode derives them per request.
 */
/** One page of rows, with tags and parsed system_info (fromTag: read from the tag's end, see listNodes). */
async function readPage(deps: Deps, env: EnvironmentRow, p: Filters, pageReq: PageRequest, cutoff: string, fromTag = false): Promise<PageRows> {
  const ordered = (q: NodeQuery) => {
    const col = SORT_COLUMNS[p.sort].includes('.') ? SORT_COLUMNS[p.sort] : `nodes.${SORT_COLUMNS[p.sort]}`;
    return q
      .orderBy(sql.ref(col), p.order)
      // The tie-break on the id of the table whose index gives the order (the same value).
      .orderBy(col === 'node_seen.last_seen' ? 'node_seen.node_id' : 'nodes.id', p.order)
      .limit(pageReq.pageSize)
      .offset(pageReq.offset);
  };
  // The page's ids first (walking an index of the sort and the filters, skipping the offset's
  // entries without reading their rows), then the rows of those ids with their node_seen.
  const from = fromTag && p.tagId !== undefined ? tagDriven(deps, env, { ...p, tagId: p.tagId }, cutoff) : applyFilters(deps, nodesFor(deps, env, p), p, cutoff);
  const ids = (await ordered(from).select('nodes.id').execute()).map((r) => r.id);
  const byId = new Map((ids.length ? await nodesWithSeen(deps.db).selectAll('nodes').select(SEEN_FIELDS).where('nodes.id', 'in', ids).execute() : []).map((r) => [r.id, r]));
  const rows = ids.map((id) => byId.get(id)).filter((r): r is NodeRow => r !== undefined);
  return { rows, systemInfo: rows.map(parseSystemInfo), tags: await tagsByNode(deps, rows.map((r) => r.id)) };
}

/**
 * `gens`: content (any change to a node or its tags), seen (a node back across a window: a
 * status-filtered page is read again softly, as its total) and checkins (every batch: the order of
 * a last_seen sort; other pages only read their node_seen fields again, fresh()).
 */
async function pageRows(deps: Deps, env: EnvironmentRow, p: Filters, pageReq: PageRequest, cutoff: string, gens: Generations, cross: Crossed, fromTag: boolean): Promise<PageRows> {
  const read = () => readPage(deps, env, p, pageReq, cutoff, fromTag).then((r) => ({ ...r, checkins: gens.checkins }));
  if (pageReq.pageSize > CACHED_PAGE_SIZE) return read();
  const timed = p.status === 'active' || p.status === 'inactive';
  // Sorted by last_seen, the order itself moves with every batch of check-ins.
  const key = JSON.stringify(['page', env.id, env.name, p, pageReq.page, pageReq.pageSize, p.sort === 'lastseen' ? gens.checkins : 0]);
  const page = await cachedCount(deps.db, key, gens.content, timed ? cutoff : '', read, async (prev, from, to) => ((await cross(from, to)) === 0 ? prev : read()), PAGE_CACHE, timed ? gens.seen : undefined);
  return fresh(deps, page, gens.checkins);
}

interface DerivedEntry {
  generation: number;
  /** The seen counter it was counted at; when it moved, the total is recounted in the background (as node-counts.ts `soft`). */
  soft: number;
  bounds: HealthBounds;
  total: number;
  recounting?: boolean;
}
const DERIVED = new WeakMap<object, Map<string, DerivedEntry>>();

/**
 * The total of a health- or risk-filtered list, exact at every instant without a recount per
 * request. Cached per counts generation with the bounds it was counted at; when the clock has
 * moved the two cutoffs (inactive, stale), only the nodes last seen between the old and the new
 * cutoffs can have changed class, so the total is moved by counting just those, under the old
 * bounds and under the new ones (two short ranges of the node_seen_env_health index).
 */
const DERIVED_TURNS = new WeakMap<object, Map<string, Promise<unknown>>>();

/** One derivedTotal at a time per list: two requests must not both move the same total. */
function derivedTotal(deps: Deps, env: EnvironmentRow, p: Filters, cutoff: string, generation: number, soft: number, ctx: Awaited<ReturnType<typeof shapeContext>>): Promise<DerivedEntry> {
  let turns = DERIVED_TURNS.get(deps.db);
  if (!turns) DERIVED_TURNS.set(deps.db, (turns = new Map<string, Promise<unknown>>()));
  const key = JSON.stringify([env.id, p.health ?? '', p.risk ?? '']);
  const prev = turns.get(key) ?? Promise.resolve();
  const next = prev.then(() => derivedTotalNow(deps, env, p, cutoff, generation, soft, ctx));
  const settled = next.catch(() => undefined);
  turns.set(key, settled);
  void settled.then(() => {
    if (turns.get(key) === settled) turns.delete(key);
  });
  return next;
}

async function derivedTotalNow(deps: Deps, env: EnvironmentRow, p: Filters, cutoff: string, generation: number, soft: number, ctx: Awaited<ReturnType<typeof shapeContext>>): Promise<DerivedEntry> {
  let cache = DERIVED.get(deps.db);
  if (!cache) DERIVED.set(deps.db, (cache = new Map<string, DerivedEntry>()));
  const { bounds, sort: _s, order: _o, ...filters } = p;
  void _s;
  void _o;
  const b1 = bounds!;
  const key = JSON.stringify([env.id, env.name, filters, ctx.inactiveHours, env.config_interval, ctx.newestOsqueryVersion, b1.outdatedBelow ?? '']);
  const hit = cache.get(key);
  if (hit && hit.generation === generation && hit.soft !== soft && !hit.recounting) {
    // A node came back across a window: recounted in the background, this total answered meanwhile.
    hit.recounting = true;
    const entries = cache;
    countOf(matching(deps, env, p, cutoff)).then(
      (total) => {
        if (entries.get(key) === hit) entries.set(key, { generation, soft, bounds: b1, total });
      },
      () => (hit.recounting = false),
    );
  }
  if (hit && hit.generation === generation) {
    const b0 = hit.bounds;
    if (b0.inactiveBefore === b1.inactiveBefore && b0.staleBefore === b1.staleBefore) return hit;
    const ranges = movedRanges([b0.inactiveBefore, b1.inactiveBefore], [b0.staleBefore, b1.staleBefore]);
    const inRanges = (q: NodeQuery) => q.where((eb) => eb.or(ranges.map(([lo, hi]) => eb.and([eb('node_seen.last_seen', '>=', lo), eb('node_seen.last_seen', '<', hi)]))));
    const [was, is] = await Promise.all([
      countOf(inRanges(matching(deps, env, { ...p, bounds: b0 }, b0.inactiveBefore))),
      countOf(inRanges(matching(deps, env, p, cutoff))),
    ]);
    hit.total += is - was;
    hit.bounds = b1;
    return hit;
  }
  const entry: DerivedEntry = { generation, soft, bounds: b1, total: await countOf(matching(deps, env, p, cutoff)) };
  if (!hit && cache.size >= 256) cache.clear();
  cache.set(key, entry);
  return entry;
}

/** [lo, hi) ranges of last_seen covered by two moved cutoffs, merged when they overlap. */
function movedRanges(...moves: [string, string][]): [string, string][] {
  const ranges = moves.map(([a, b]) => (a < b ? [a, b] : [b, a]) as [string, string]).filter(([lo, hi]) => lo < hi).sort((x, y) => (x[0] < y[0] ? -1 : 1));
  const out: [string, string][] = [];
  for (const r of ranges) {
    const last = out[out.length - 1];
    if (last && r[0] <= last[1]) last[1] = r[1] > last[1] ? r[1] : last[1];
    else out.push([...r]);
  }
  return out;
}

const DERIVED_PAGES = new WeakMap<object, Map<string, { generation: string; bounds: HealthBounds; page: Promise<PageRows> }>>();

/**
 * A page of a health- or risk-filtered list (issue 21: read per request, it cost 20-40 ms at
 * 100,000 nodes). Cached per content generation (the nodes it shows), with the bounds it was read
 * at; when the clock has moved the cutoffs, it is still the page while no node of the
 * environment was last seen between the old and the new cutoffs (one probe of the (environment,
 * last_seen) index), since a node changes health or risk class only by crossing one. Requests
 * for the same page while it is read share the read.
 */
async function derivedPage(deps: Deps, env: EnvironmentRow, p: Filters, pageReq: PageRequest, cutoff: string, gens: Generations, ctx: Awaited<ReturnType<typeof shapeContext>>): Promise<PageRows> {
  // Its nodes change with any change to a node (content), and with one back across a window (seen).
  const generation = `${gens.content}/${gens.seen}`;
  let cache = DERIVED_PAGES.get(deps.db);
  if (!cache) DERIVED_PAGES.set(deps.db, (cache = new Map<string, { generation: string; bounds: HealthBounds; page: Promise<PageRows> }>()));
  const { bounds, ...rest } = p;
  const b1 = bounds!;
  const key = JSON.stringify([env.id, rest, pageReq.page, pageReq.pageSize, ctx.inactiveHours, env.config_interval, ctx.newestOsqueryVersion, b1.outdatedBelow ?? '']);
  const hit = cache.get(key);
  if (hit && hit.generation === generation) {
    const b0 = hit.bounds;
    if (b0.inactiveBefore === b1.inactiveBefore && b0.staleBefore === b1.staleBefore) return hit.page;
    const ranges = movedRanges([b0.inactiveBefore, b1.inactiveBefore], [b0.staleBefore, b1.staleBefore]);
    const crossed = await deps.db
      .selectFrom('node_seen')
      .select('node_id')
      .where('environment_id', '=', env.id)
      .where((eb) => eb.or(ranges.map(([lo, hi]) => eb.and([eb('last_seen', '>=', lo), eb('last_seen', '<', hi)]))))
      .limit(1)
      .executeTakeFirst();
    if (!crossed) return hit.page;
  }
  const page = readPage(deps, env, p, pageReq, cutoff);
  if (!hit && cache.size >= 256) cache.clear();
  const entry = { generation, bounds: b1, page };
  cache.set(key, entry);
  page.catch(() => cache.get(key) === entry && cache.delete(key));
  return page;
}

/** `gens`: the change counters this request's authentication read (one read per request). */
export async function listNodes(deps: Deps, env: EnvironmentRow, query: NodesQuery, gens?: Generations): Promise<Page<Node>> {
  const params = parseNodeQuery(query);
  if (params.config) params.configHash = agentConfig(env).hash;
  const pageReq = parsePage(query);
  const generation = gens ?? (await readGenerations(deps.db));
  const ctx = await shapeContext(deps, env, generation);
  const cutoff = new Date(ctx.nowMs - ctx.inactiveHours * 3600_000).toISOString();
  const filters: Filters = { ...params };
  if (params.tag !== undefined) {
    filters.tagId = await tagIdOf(deps, env, params.tag);
    if (filters.tagId === undefined) return pageOf([], pageReq, 0);
  }
  if (params.health || params.risk) {
    // Health and risk move with two cutoffs (inactive, stale) and the fleet's newest osquery: the
    // total is moved with them (derivedTotal), a page read again once a node crossed (derivedPage).
    filters.bounds = healthBounds(ctx.nowMs, ctx.inactiveHours, env, ctx.newestOsqueryVersion);
    const entry = await derivedTotal(deps, env, filters, cutoff, generation.counts, generation.seen, ctx);
    const total = entry.total;
    if (pageReq.offset >= total) return pageOf([], pageReq, total);
    const page = await fresh(deps, await derivedPage(deps, env, filters, pageReq, cutoff, generation, ctx), generation.checkins);
    return pageOf(page.rows.map((r, i) => toNode(r, page.tags.get(r.id) ?? [], ctx, false, page.systemInfo[i])), pageReq, total);
  }
  // Totals follow the counts counter: tagging, a node's config hash and validity move it too, and
  // a check-in only when it brings a node back across a window (migration 017_node_seen), so under steady
  // check-ins a total is counted once, not every second.
  const countGeneration = generation.counts;
  const cross = crossedOnce(deps, env, filters, countGeneration);
  const total = await filteredTotal(deps, env, filters, cutoff, countGeneration, cross, generation.seen);
  if (pageReq.offset >= total) return pageOf([], pageReq, total);
  // Which end to read a tag's page from: walking the sort index visits about
  // (offset + size) * nodes / matches nodes to fill the page; the tag's own range visits each
  // tagged node once. The cheaper one (a rare tag, or a page deep into a common one).
  let fromTag = false;
  if (filters.tagId !== undefined || (params.q && [...params.q].length < MIN_INDEXED_QUERY)) {
    const all = await filteredTotal(deps, env, { sort: params.sort, order: params.order }, cutoff, generation.counts, cross);
    const walked = ((pageReq.offset + pageReq.pageSize) * all) / Math.max(1, total);
    if (filters.tagId !== undefined) fromTag = (await taggedCount(deps, filters.tagId, generation.counts)) < walked;
    // The same choice for a short search: test the nodes along the sort index while few are
    // walked per match, else read the matches from the search-text index and sort them.
    else filters.qScan = walked > all / 8;
  }
  const page = await pageRows(deps, env, filters, pageReq, cutoff, generation, cross, fromTag);
  const shapeKey = JSON.stringify([env.name, env.config_interval, ctx.inactiveHours, ctx.newestOsqueryVersion]);
  const memo = page.shaped;
  if (memo && memo.key === shapeKey && memo.checkins === page.checkins && ctx.nowMs <= memo.validUntil) {
    // The same answer object while nothing changed, so the route can reuse its serialised body.
    if (memo.page?.total_items !== total) memo.page = pageOf(memo.nodes, pageReq, total);
    return memo.page;
  }
  const nodes = page.rows.map((r, i) => toNode(r, page.tags.get(r.id) ?? [], ctx, false, page.systemInfo[i]));
  page.shaped = { key: shapeKey, validUntil: shapedUntil(page.rows, ctx), checkins: page.checkins, nodes };
  return pageOf(nodes, pageReq, total);
}

export async function findNodeRows(deps: Deps, env: EnvironmentRow, ref: string): Promise<NodeRow[]> {
  return nodesWithSeen(deps.db)
    .selectAll('nodes')
    .select(SEEN_FIELDS)
    .where('nodes.environment_id', '=', env.id)
    .where((eb) => eb.or([eb('nodes.uuid', '=', ref.toLowerCase()), eb('nodes.uuid', '=', ref.toUpperCase()), eb('nodes.hostname', '=', ref), eb('nodes.localname', '=', ref)]))
    .orderBy('nodes.id')
    .execute();
}

export async function readNode(deps: Deps, caller: Caller, env: EnvironmentRow, ref: string): Promise<Node> {
  let rows = await findNodeRows(deps, env, ref);
  if (rows.length === 0) throw notFound(`node "${ref}" not found in environment ${env.name}`);
  // A node's own identifier wins over other nodes' hostnames (issue 26): osquery's default
  // --host_identifier is the hostname, and such a node shares its identifier with the hostname of
  // every other node of that host (clones, a host enrolled again by instance or UUID).
  const exact = rows.filter((r) => r.uuid.toLowerCase() === ref.toLowerCase());
  if (exact.length === 1) rows = exact;
  if (rows.length > 1) {
    const uuids = rows.map((r) => r.uuid);
    throw conflict(`"${ref}" matches ${rows.length} nodes: ${uuids.join(', ')}; use a UUID`, { uuids });
  }
  const row = rows[0]!;
  const ctx = await shapeContext(deps, env, caller.generations ?? (await readGenerations(deps.db)));
  const tags = await tagsByNode(deps, [row.id]);
  const isEnvAdmin = hasLevel(caller.isSuperAdmin, caller.access.get(env.id), 'admin');
  return toNode(row, tags.get(row.id) ?? [], ctx, isEnvAdmin);
}

export async function deleteNode(deps: Deps, caller: Caller, env: EnvironmentRow, uuid: string, sourceIp: string): Promise<string> {
  if (!uuid) throw badRequest('uuid is required');
  const node = await deps.db
    .selectFrom('nodes')
    .select(['id', 'uuid', 'hostname'])
    .where('environment_id', '=', env.id)
    .where((eb) => eb.or([eb('uuid', '=', uuid.toLowerCase()), eb('uuid', '=', uuid.toUpperCase())]))
    .executeTakeFirst();
  if (!node) throw notFound(`node ${uuid} not found in environment ${env.name}`);
  // The delete (with its live-query assignments) and its audit row commit together.
  await inTransaction(deps.db, async (trx) => {
    await trx.deleteFrom('node_tags').where('node_id', '=', node.id).execute();
    await trx.deleteFrom('node_queries').where('node_id', '=', node.id).execute();
    await trx.deleteFrom('nodes').where('id', '=', node.id).execute();
    await writeAudit({ ...deps, db: trx }, {
      line: `node ${node.uuid} (${node.hostname}) deleted from ${env.name}`,
      logType: LogTypes.node,
      username: caller.user.username,
      sourceIp,
      env,
    });
  });
  return `node ${node.uuid} deleted`;
}
