// Pages of a node list: read, shaped and cached per change generation, and the totals of filters
// derived from health (outdated, risk) kept moving with the cutoff rather than recounted.
import { sql } from 'kysely';
import type { Deps } from '../../context.js';
import type { EnvironmentRow, NodeRow } from '../../store/schema.js';
import { type Node, type Page, type Tag, SystemInfo } from '../../../api/index.js';
import { pageOf, type PageRequest } from '../../lib/pagination.js';
import { type Generations } from '../../store/node-index.js';
import { between, cachedCount, COUNTS, type CacheSpace } from './node-counts.js';
import { type HealthBounds } from './node-filters.js';
import { tagsByNode, parseSystemInfo, toNode, type ShapeContext } from './node-shape.js';
import {
  type Crossed,
  type Filters,
  type NodeQuery,
  SEEN_FIELDS,
  SORT_COLUMNS,
  applyFilters,
  countOf,
  matching,
  nodesFor,
  nodesWithSeen,
  quietIn,
  tagDriven,
} from './node-query.js';

export interface PageRows {
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
export async function fresh(deps: Deps, page: PageRows, checkins: number): Promise<PageRows> {
  if (page.checkins === checkins || page.rows.length === 0) return page;
  const seen = await deps.db
    .selectFrom('node_seen')
    .select(['node_id', 'last_seen', 'bytes_received', 'config_fetched_at'])
    .where(
      'node_id',
      'in',
      page.rows.map((r) => r.id),
    )
    .execute();
  const byId = new Map(seen.map((r) => [r.node_id, r]));
  for (const r of page.rows) {
    const now = byId.get(r.id);
    if (now)
      Object.assign(r, { last_seen: now.last_seen || null, bytes_received: now.bytes_received, config_fetched_at: now.config_fetched_at });
  }
  page.checkins = checkins;
  return page;
}

/**
 * The last instant at which the page's derived fields (health, posture) are still what they
 * are at `nowMs`: each node's health changes only when the clock passes its last check-in plus
 * the inactive window, or plus three config intervals (stale). Uptime depends on the row alone.
 */
export function shapedUntil(rows: NodeRow[], ctx: ShapeContext): number {
  let until = Number.POSITIVE_INFINITY;
  for (const r of rows) {
    if (!r.last_seen) continue;
    const seen = Date.parse(r.last_seen);
    for (const t of [seen + ctx.inactiveHours * 3600_000, seen + 3 * ctx.env.config_interval * 1000])
      if (t >= ctx.nowMs && t < until) until = t;
  }
  return until;
}

/**
 * The page as API nodes. The same answer object while neither its rows, their check-ins, the
 * shaping context nor the total changed and no node's health can have changed (shapedUntil), so
 * the route sends the body it serialised before (routes/cached-body.ts) instead of shaping and
 * serialising the page per request.
 */
export function shapedPage(page: PageRows, pageReq: PageRequest, total: number, ctx: ShapeContext): Page<Node> {
  const key = JSON.stringify([ctx.env.name, ctx.env.config_interval, ctx.inactiveHours, ctx.newestOsqueryVersion]);
  const memo = page.shaped;
  if (memo && memo.key === key && memo.checkins === page.checkins && ctx.nowMs <= memo.validUntil) {
    if (memo.page?.total_items !== total) memo.page = pageOf(memo.nodes, pageReq, total);
    return memo.page;
  }
  const nodes = page.rows.map((r, i) => toNode(r, page.tags.get(r.id) ?? [], ctx, false, page.systemInfo[i]));
  page.shaped = { key, validUntil: shapedUntil(page.rows, ctx), checkins: page.checkins, nodes };
  return pageOf(nodes, pageReq, total);
}

/** The ids of a list's entries [offset, offset + limit), in its order. */
type IdsReader = (limit: number, offset: number) => Promise<number[]>;

/** Pages up to this size are cached (the dashboard's first pages); --all's 500-node pages are not. */
export const CACHED_PAGE_SIZE = 100;
/** At most 64 pages of 100 nodes (about 12 MiB) are kept. */
export const PAGE_CACHE: CacheSpace = { name: 'pages', entries: 64 };

/**
 * One page of rows with their tags and parsed system_info. Cached per content generation (any
 * change to a node or its tags); a status-filtered page also stays valid while no node crossed
 * the activity cutoff since it was read (then the filtered set, hence the page, is the same).
 * Health and uptime depend on the clock: toNode derives them per request.
 */
/** One page of rows, with tags and parsed system_info (fromTag: read from the tag's end, see listNodes). */
export async function readPage(
  deps: Deps,
  env: EnvironmentRow,
  p: Filters,
  pageReq: PageRequest,
  cutoff: string,
  fromTag = false,
  idsOf?: (readIds: IdsReader) => Promise<number[]>,
): Promise<PageRows> {
  const col = SORT_COLUMNS[p.sort].includes('.') ? SORT_COLUMNS[p.sort] : `nodes.${SORT_COLUMNS[p.sort]}`;
  // The node's id from the table whose index gives the order (the same value), as the tie-break
  // and as the id read: a tag's nodes sorted by last_seen are read from node_seen alone (tagDriven).
  const id = col === 'node_seen.last_seen' ? 'node_seen.node_id' : 'nodes.id';
  const ordered = (q: NodeQuery, limit: number, offset: number) =>
    q.orderBy(sql.ref(col), p.order).orderBy(id, p.order).limit(limit).offset(offset);
  // The page's ids first (walking an index of the sort and the filters, skipping the offset's
  // entries without reading their rows), then the rows of those ids with their node_seen.
  const from =
    fromTag && p.tagId !== undefined
      ? tagDriven(deps, env, { ...p, tagId: p.tagId }, cutoff)
      : applyFilters(deps, nodesFor(deps, env, p), p, cutoff);
  const readIds: IdsReader = async (limit, offset) =>
    (await ordered(from, limit, offset).select(sql.ref<number>(id).as('id')).execute()).map((r) => r.id);
  const ids = idsOf ? await idsOf(readIds) : await readIds(pageReq.pageSize, pageReq.offset);
  const byId = new Map(
    (ids.length ? await nodesWithSeen(deps.db).selectAll('nodes').select(SEEN_FIELDS).where('nodes.id', 'in', ids).execute() : []).map(
      (r) => [r.id, r],
    ),
  );
  const rows = ids.map((id) => byId.get(id)).filter((r): r is NodeRow => r !== undefined);
  return {
    rows,
    systemInfo: rows.map(parseSystemInfo),
    tags: await tagsByNode(
      deps,
      rows.map((r) => r.id),
    ),
  };
}

/**
 * How a list's cached values (pages, order windows) move with the clock: the cutoff they are kept
 * at ('' for a list that does not depend on it), whether a node crossed between two cutoffs (then
 * the value is read again), and the seen counter on which it is read again softly (node-counts.ts
 * `soft`; undefined: never).
 */
export interface ListClock {
  cutoff: string;
  crossed: (from: string, to: string) => Promise<boolean>;
  soft?: number;
}

/** The clock of a list filtered by status or by nothing that moves with time (its activity cutoff, crossed counted by `cross`). */
export function statusClock(p: Filters, cutoff: string, gens: Generations, cross: Crossed): ListClock {
  if (p.status !== 'active' && p.status !== 'inactive') return { cutoff: '', crossed: () => Promise.resolve(false) };
  return { cutoff, crossed: async (from, to) => (await cross(from, to)) !== 0, soft: gens.seen };
}

/** p's key in a cache: health and risk bounds move with the clock, so only what else they compare with. */
const timeless = (p: Filters): unknown => (p.bounds ? { ...p, bounds: { outdatedBelow: p.bounds.outdatedBelow } } : p);

/**
 * `gens`: content (any change to a node or its tags), seen (a node back across a window: a page
 * filtered by status, health or risk is read again softly, as its total) and checkins (every
 * batch: the order of a last_seen sort; other pages only read their node_seen fields again,
 * fresh()).
 */
export async function pageRows(
  deps: Deps,
  env: EnvironmentRow,
  p: Filters,
  pageReq: PageRequest,
  cutoff: string,
  gens: Generations,
  clock: ListClock,
  fromTag: boolean,
): Promise<PageRows> {
  const windowed = p.sort === 'lastseen' && pageReq.pageSize <= CACHED_PAGE_SIZE;
  const window = windowed ? orderWindow(deps, env, p, pageReq, gens, clock) : undefined;
  const read = (): Promise<PageRows> =>
    readPage(deps, env, p, pageReq, cutoff, fromTag, window?.idsOf).then((r) => ({ ...r, checkins: gens.checkins }));
  if (pageReq.pageSize > CACHED_PAGE_SIZE) return read();
  const list = JSON.stringify(['page', env.id, env.name, timeless(p), pageReq.page, pageReq.pageSize]);
  const cached = (key: string, read: () => Promise<PageRows>) => cachedForList(deps, key, gens, clock, read, PAGE_CACHE);
  if (!reorderedByCheckins(p)) return fresh(deps, await cached(list, read), gens.checkins);
  // Reordered by every batch: keyed by it, and while the new order is read, the page of the batch
  // before answers (reorders).
  const order = reorders(deps.db, list, gens, read, window?.reading);
  if (order.previous) return order.previous;
  return fresh(deps, await cached(`${list}@${gens.checkins}`, order.read), gens.checkins);
}

/**
 * Whether a batch of check-ins can reorder p's list: sorted by last_seen, unless it lists only
 * inactive nodes, none of which checks in without coming back across a window (which moves the
 * seen counter, on which such a list is read again softly, instead).
 */
const reorderedByCheckins = (p: Filters) => p.sort === 'lastseen' && p.status !== 'inactive';

/**
 * A value read for a list (a page, a window of its ids), cached per content counter and moved
 * with its clock: kept while no node crossed its cutoff, read again once one did, and read again
 * in the background when the seen counter moves.
 */
function cachedForList<T>(
  deps: Deps,
  key: string,
  gens: Generations,
  clock: ListClock,
  read: () => Promise<T>,
  space: CacheSpace,
): Promise<T> {
  return cachedCount(
    deps.db,
    key,
    gens.content,
    clock.cutoff,
    read,
    async (prev, from, to) => ((await clock.crossed(from, to)) ? read() : prev),
    space,
    clock.soft,
  );
}

/** Pages of a list sorted by last_seen are read five at a time, once per batch of check-ins (orderWindow). */
const ORDER_WINDOW_PAGES = 5;
const ORDER_WINDOWS: CacheSpace = { name: 'order windows', entries: 64 };

/**
 * The ids of a page of a list sorted by last_seen, from one read of the five pages it is among
 * (pages 1-5, 6-10, ...) per batch of check-ins and content counter. Each batch reorders the
 * list, and its pages were read one by one, each walking the entries before it again: the first
 * five pages of a search within a tag walked the tag's index three times as far as the fifth page
 * alone, and five pages near page 100 of a tag five times as far as one (PostgreSQL at 100,000
 * nodes, 3,700 check-ins a second: 60-100 ms a page). A status-filtered window moves with the
 * cutoff as its pages do (kept while no node crossed it, read again once one did). The plan (from
 * the tag's end, a short search read in one pass) does not change which ids.
 */
function orderWindow(deps: Deps, env: EnvironmentRow, p: Filters, pageReq: PageRequest, gens: Generations, clock: ListClock) {
  const { qScan: _plan, ...filters } = timeless(p) as Filters;
  void _plan;
  const span = ORDER_WINDOW_PAGES * pageReq.pageSize;
  const first = Math.floor(pageReq.offset / span) * span;
  // Not reordered by check-ins (inactive nodes only), its pages are read again softly when the seen
  // counter moves: the window is then read anew for them, not kept (it would answer the old ids).
  const key = JSON.stringify([
    'order',
    env.id,
    filters,
    pageReq.pageSize,
    first,
    reorderedByCheckins(p) ? gens.checkins : `seen ${gens.seen}`,
  ]);
  let reads = WINDOW_READS.get(deps.db);
  if (!reads) WINDOW_READS.set(deps.db, (reads = new Set<string>()));
  const running = reads;
  const readWindow = async (readIds: IdsReader) => {
    running.add(key);
    try {
      return await readIds(span, first);
    } finally {
      running.delete(key);
    }
  };
  return {
    /** Whether this batch's window is being read (for another of its pages). */
    reading: () => running.has(key),
    idsOf: async (readIds: IdsReader): Promise<number[]> => {
      const ids = await cachedForList(deps, key, gens, clock, () => readWindow(readIds), ORDER_WINDOWS);
      return ids.slice(pageReq.offset - first, pageReq.offset - first + pageReq.pageSize);
    },
  };
}

/** The order windows being read, per database: their pages answer from the batch before meanwhile (reorders). */
const WINDOW_READS = new WeakMap<object, Set<string>>();

/** Per list page sorted by last_seen: the last page read (its counters) and whether a read is under way. */
interface Reorder {
  content: number;
  page?: PageRows;
  /** Reads under way (more than one only before the first page is known). */
  reading: number;
}
const REORDERS = new WeakMap<object, Map<string, Reorder>>();

/**
 * A page sorted by last_seen (reorderedByCheckins) is read again after every batch of
 * check-ins: its order is theirs. Requests that arrive while that read (or the read of its order
 * window, for another of the window's pages) is under way are answered with the page of the
 * batch before, as it was read (its order, nodes and last_seen values together; filtered by
 * status, health or risk, as of the cutoffs then), instead of each waiting for the read: under
 * 3,700 check-ins a second at 100,000 nodes, a page that costs 60-100 ms to read (a search within
 * a tag) was read once a second and every request in between queued behind it (PostgreSQL: p50
 * 143-384 ms at 20 readers). A request that finds no read under way reads and waits as before, so
 * one user's next request sees the order after the check-ins it follows; a page newer by content
 * (a node added, edited, tagged) is never replaced by an older one.
 */
function reorders(
  db: object,
  list: string,
  gens: Generations,
  read: () => Promise<PageRows>,
  windowReading?: () => boolean,
): { previous?: PageRows; read: () => Promise<PageRows> } {
  let lists = REORDERS.get(db);
  if (!lists) REORDERS.set(db, (lists = new Map<string, Reorder>()));
  const known = lists.get(list);
  if (known && (known.reading > 0 || windowReading?.()) && known.page && known.content === gens.content)
    return { previous: known.page, read };
  const entries = lists;
  return {
    read: async () => {
      let r = entries.get(list);
      if (!r || r.content !== gens.content) {
        if (!r && entries.size >= PAGE_CACHE.entries) entries.delete(entries.keys().next().value!);
        entries.set(list, (r = { content: gens.content, reading: 0 }));
      }
      const mine = r;
      mine.reading++;
      try {
        const page = await read();
        // Reads of two batches can end out of order: the later batch's page is kept.
        if ((mine.page?.checkins ?? -1) <= (page.checkins ?? 0)) mine.page = page;
        return page;
      } finally {
        mine.reading--;
      }
    },
  };
}

/*
 * Health and risk move with two cutoffs (inactive, stale), kept by cachedCount as one cutoff
 * string, "inactiveBefore staleBefore" (ISO times have no space), so these totals and pages are
 * cached, moved with the clock and recounted softly when a node comes back (the seen counter)
 * exactly as the status-filtered ones are (node-counts.ts).
 */
const boundsCutoff = (b: HealthBounds) => `${b.inactiveBefore} ${b.staleBefore}`;
function boundsAt(cutoff: string, b: HealthBounds): HealthBounds {
  const [inactiveBefore = '', staleBefore = ''] = cutoff.split(' ');
  return { ...b, inactiveBefore, staleBefore };
}

/**
 * The total of a health- or risk-filtered list, exact at every instant without a recount per
 * request. When the clock has moved the two cutoffs, only the nodes last seen between the old and
 * the new cutoffs can have changed class, so the total is moved by counting just those, under the
 * old bounds and under the new ones (two short ranges of the node_seen_env_health index), and not
 * at all while no node is near either cutoff (unmoved).
 */
export function derivedTotal(deps: Deps, env: EnvironmentRow, p: Filters, gens: Generations, ctx: ShapeContext): Promise<number> {
  const b1 = p.bounds!;
  const { bounds: _b, sort: _s, order: _o, ...filters } = p;
  void _b;
  void _s;
  void _o;
  const at = (b: HealthBounds, ranged = false) => matching(deps, env, { ...p, bounds: b }, b.inactiveBefore, ranged);
  // Besides its filters, the settings health is derived with: a change of one counts it afresh.
  const key = JSON.stringify([
    'derived total',
    env.id,
    env.name,
    filters,
    ctx.inactiveHours,
    env.config_interval,
    ctx.newestOsqueryVersion,
    b1.outdatedBelow ?? '',
  ]);
  return cachedCount(
    deps.db,
    key,
    gens.counts,
    boundsCutoff(b1),
    () => countOf(at(b1)),
    async (total, from, to) => {
      const b0 = boundsAt(from, b1);
      const bt = boundsAt(to, b1);
      if (await unmoved(deps, env, p, gens.counts, b0, bt)) return total;
      const ranges = movedRanges([b0.inactiveBefore, bt.inactiveBefore], [b0.staleBefore, bt.staleBefore]);
      const inRanges = (q: NodeQuery) =>
        q.where((eb) => eb.or(ranges.map(([lo, hi]) => eb.and([eb('node_seen.last_seen', '>=', lo), eb('node_seen.last_seen', '<', hi)]))));
      const [was, is] = await Promise.all([countOf(inRanges(at(b0, true))), countOf(inRanges(at(bt, true)))]);
      return total + is - was;
    },
    COUNTS,
    gens.seen,
  );
}

/**
 * Whether no node of the environment was last seen between the cutoffs of two bounds, so none
 * changed health or risk class between them: mostly answered from what QUIET already knows of
 * each cutoff, without a query (a probe per request cost more than the page: issue 31).
 */
async function unmoved(
  deps: Deps,
  env: EnvironmentRow,
  p: Filters,
  generation: number,
  b0: HealthBounds,
  b1: HealthBounds,
): Promise<boolean> {
  const all: Filters = { sort: p.sort, order: p.order };
  const moves: [string, string, string][] = [
    [b0.inactiveBefore, b1.inactiveBefore, ''],
    [b0.staleBefore, b1.staleBefore, 'stale'],
  ];
  for (const [from, to, lane] of moves) {
    if (from === to) continue;
    const { lo, hi } = between(from, to);
    if (!(await quietIn(deps, env, all, generation, lo, hi, lane))) return false;
  }
  return true;
}

/** [lo, hi) ranges of last_seen covered by two moved cutoffs, merged when they overlap. */
export function movedRanges(...moves: [string, string][]): [string, string][] {
  const ranges = moves
    .map(([a, b]) => (a < b ? [a, b] : [b, a]) as [string, string])
    .filter(([lo, hi]) => lo < hi)
    .sort((x, y) => (x[0] < y[0] ? -1 : 1));
  const out: [string, string][] = [];
  for (const r of ranges) {
    const last = out[out.length - 1];
    if (last && r[0] <= last[1]) last[1] = r[1] > last[1] ? r[1] : last[1];
    else out.push([...r]);
  }
  return out;
}

/**
 * A page of a health- or risk-filtered list (issue 21: read per request, it cost 20-40 ms at
 * 100,000 nodes), cached as every other page is (pageRows), on the two cutoffs' clock: when the
 * clock has moved them, it is still the page while no node of the environment was last seen
 * between the old and the new cutoffs (unmoved, else one probe of the (environment, last_seen)
 * index), since a node changes health or risk class only by crossing one.
 */
export function derivedPage(deps: Deps, env: EnvironmentRow, p: Filters, pageReq: PageRequest, gens: Generations): Promise<PageRows> {
  const b1 = p.bounds!;
  const crossed = async (from: string, to: string) => {
    const b0 = boundsAt(from, b1);
    const bt = boundsAt(to, b1);
    if (await unmoved(deps, env, p, gens.counts, b0, bt)) return false;
    const ranges = movedRanges([b0.inactiveBefore, bt.inactiveBefore], [b0.staleBefore, bt.staleBefore]);
    const node = await deps.db
      .selectFrom('node_seen')
      .select('node_id')
      .where('environment_id', '=', env.id)
      .where((eb) => eb.or(ranges.map(([lo, hi]) => eb.and([eb('last_seen', '>=', lo), eb('last_seen', '<', hi)]))))
      .limit(1)
      .executeTakeFirst();
    return node !== undefined;
  };
  return pageRows(deps, env, p, pageReq, b1.inactiveBefore, gens, { cutoff: boundsCutoff(b1), crossed, soft: gens.seen }, false);
}
