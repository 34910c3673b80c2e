// Reading the audit trail (4.19). Newest first by id: every row is written with the server's
// clock at insertion, so id order is time order. Every combination of the equality filters
// (username, service, environment) has an index ending in id (migration 010), so a page is the
// start of one index range; `q` goes through a trigram index (FTS5 on SQLite, pg_trgm on
// PostgreSQL). Totals are cached per audit counter (moved by every audit write, on any replica),
// so paging through a million rows counts them once, not per page; a search's total is counted
// only as far as the page asked for needs (boundedTotal).
/* eslint-disable @typescript-eslint/no-explicit-any -- the search joins SQLite's FTS5 table audit_search, which the schema type does not describe: the query is built over Kysely<any> */
import { sql, type ExpressionBuilder, type Kysely, type SelectQueryBuilder, type SqlBool } from 'kysely';
import type { AuditLogRow } from '../../store/schema.js';
import type { Caller, Deps } from '../../context.js';
import type { AuditLogEntry, AuditQuery, Page } from '../../../api/index.js';
import { likeContains, pageOf, parsePage } from '../../lib/pagination.js';
import { requireEnv } from '../environments/environments.js';
import { toAuditEntry } from './audit.js';
import { notFound } from '../../errors.js';
import { MIN_INDEXED_QUERY, readGenerations } from '../../store/node-index.js';
import { cachedCount, type CacheSpace } from '../fleet/node-counts.js';

/** A quoted FTS5 phrase: an exact substring match of the trigram-indexed line. */
const phrase = (q: string) => `"${q.replaceAll('"', '""')}"`;

export async function listAuditLogs(deps: Deps, caller: Caller, query: AuditQuery): Promise<Page<AuditLogEntry>> {
  const pageReq = parsePage(query);
  let envId: number | undefined;
  // Read once per environment change (the config counter), as the routes' own {env} is.
  if (query.env) envId = (await requireEnv(deps, query.env, caller.generations?.config)).id;
  // SQLite, q long enough for trigrams: the line index drives, newest first (FTS5 reads its
  // matches in rowid order and stops at the page), each match checked against the other filters.
  const fts = deps.dialect === 'sqlite' && !!query.q && [...query.q].length >= MIN_INDEXED_QUERY;
  // PostgreSQL, a line search within one user's entries: the user as a range [u, u], the page
  // ordered by (username, id). With `username = u` the planner drops username from the order (a
  // constant), then prefers walking the primary key newest first and testing every user's lines
  // (10,000 rows for page 5 of analyst's "denied", 3.5 ms) to the (username, id) index, whose
  // heap reads it costs as random; with the range only that index gives the order (1,250 rows, 0.5 ms).
  const userRange = deps.dialect === 'postgres' && !!query.q && (!caller.isSuperAdmin || !!query.username);
  const byUser = <Q extends SelectQueryBuilder<any, any, any>>(q: Q, username: string): Q =>
    (userRange
      ? q.where('audit_logs.username', '>=', username).where('audit_logs.username', '<=', username)
      : q.where('audit_logs.username', '=', username)) as Q;
  const filtered = <Q extends SelectQueryBuilder<any, any, any>>(q: Q): Q => {
    // Non-super-admins see their own entries only; their username filter can only narrow that.
    if (!caller.isSuperAdmin) q = byUser(q, caller.user.username);
    if (query.username) q = byUser(q, query.username);
    if (query.service) q = q.where('audit_logs.service', '=', query.service) as Q;
    if (envId !== undefined) q = q.where('audit_logs.environment_id', '=', envId) as Q;
    // PostgreSQL (and a q too short for trigrams): the expression of audit_logs_line_trgm (GIN, pg_trgm).
    if (query.q && !fts) q = q.where(sql<SqlBool>`lower(audit_logs.line) like ${likeContains(query.q.toLowerCase())} escape '\\'`) as Q;
    return q;
  };
  const db = deps.db as unknown as Kysely<any>;
  const base = fts
    ? filtered(
        db
          .selectFrom('audit_search')
          .crossJoin('audit_logs')
          .whereRef('audit_logs.id', '=', 'audit_search.rowid')
          .where(sql<SqlBool>`audit_search match ${phrase(query.q!)}`),
      )
    : filtered(db.selectFrom('audit_logs'));
  const onlyQ = fts && caller.isSuperAdmin && !query.username && !query.service && envId === undefined;
  const generation = (caller.generations ?? (await readGenerations(deps.db, deps.readNow))).audit;
  const key = JSON.stringify([
    'audit',
    caller.isSuperAdmin ? '' : caller.user.username,
    query.username ?? '',
    query.service ?? '',
    envId ?? '',
    query.q ?? '',
  ]);
  // q alone on SQLite: counted in the line index itself, without visiting the rows.
  const counted = onlyQ ? db.selectFrom('audit_search').where(sql<SqlBool>`audit_search match ${phrase(query.q!)}`) : base;
  const countUpTo = async (limit?: number): Promise<number> => {
    const from: SelectQueryBuilder<any, any, any> =
      limit === undefined
        ? counted
        : db.selectFrom(
            counted
              .select(sql`1`.as('one'))
              .limit(limit)
              .as('m'),
          );
    const row = (await from.select((eb: ExpressionBuilder<any, any>) => eb.fn.countAll<number>().as('n')).executeTakeFirst()) as
      { n: number | string } | undefined;
    return Number(row?.n ?? 0);
  };
  const readPage = async (): Promise<Page<AuditLogEntry>> => {
    const { total, exact } = query.q
      ? await boundedTotal(deps.db, key, generation, pageReq.offset + pageReq.pageSize + 1, countUpTo)
      : { total: await cachedCount(deps.db, key, generation, '', () => countUpTo()), exact: true };
    const answer = <T>(items: T[]): Page<T> =>
      exact ? pageOf(items, pageReq, total) : { ...pageOf(items, pageReq, total), total_items_exact: false };
    if (pageReq.offset >= total) return answer([]);
    // The page's ids first, then their rows: the entries before a deep page are skipped on an
    // index (PostgreSQL reads no row of them; it read every skipped row's tuple, 200 ms at page
    // 2000 of a million), and the page's rows are read by id. From the nearest page read before at
    // this audit counter (pageAnchor): page 2001 after 2000 skips one entry, not 100,050.
    const order = fts ? 'audit_search.rowid' : 'audit_logs.id';
    const anchor = pageAnchor(deps.db, key, generation, pageReq.offset);
    const from = anchor ? base.where(order, '<=', anchor.id) : base;
    const ids = (
      await from
        .select(fts ? 'audit_search.rowid as id' : 'audit_logs.id')
        .$if(userRange, (q) => q.orderBy('audit_logs.username', 'desc'))
        .orderBy(order, 'desc')
        .limit(pageReq.pageSize)
        .offset(pageReq.offset - (anchor?.offset ?? 0))
        .execute()
    ).map((r: { id: number }) => Number(r.id));
    if (ids.length) {
      anchorAt(deps.db, key, generation, pageReq.offset, ids[0]!);
      anchorAt(deps.db, key, generation, pageReq.offset + ids.length - 1, ids.at(-1)!);
    }
    const rows = ids.length
      ? ((await deps.db.selectFrom('audit_logs').selectAll().where('id', 'in', ids).orderBy('id', 'desc').execute()) as AuditLogRow[])
      : [];
    return answer(rows.map(toAuditEntry));
  };
  // A page stays what it is until an audit write moves the counter: kept (the same object, so the
  // route sends the body it serialised before), a dashboard polling the trail, or 20 readers of
  // its first pages, cost a lookup each instead of two statements over a million rows.
  if (pageReq.pageSize > CACHED_AUDIT_PAGE_SIZE) return readPage();
  const pageKey = JSON.stringify([key, pageReq.offset, pageReq.pageSize]);
  return cachedCount(deps.db, pageKey, generation, '', readPage, undefined, AUDIT_PAGES);
}

/** Pages of up to this many entries are cached (the console's and the CLI's); an export's are not. */
const CACHED_AUDIT_PAGE_SIZE = 100;
/** At most 64 pages of 100 entries (about 2 MiB) are kept. */
const AUDIT_PAGES: CacheSpace = { name: 'audit pages', entries: 64 };

/** A search's total is counted up to this many matches (then up to twice as many, as deeper pages need). */
export const SEARCH_COUNT_STEP = 1000;

/**
 * The total of a search (q): matches counted up to SEARCH_COUNT_STEP, or the smallest step of
 * SEARCH_COUNT_STEP * 2^k reaching `need` (one past the page asked for), each step cached per
 * audit counter. Counting every match of a substring reads every row of the filtered range
 * (PostgreSQL: a user's 125,000 rows over every heap page of a million, 60-140 ms, at each audit
 * write); up to a step it stops there (5 ms). A total that reaches its step is a lower bound
 * (`exact` false): at least one page past the one asked for exists, so clients paging by
 * total_pages go on; the page that reaches the end counts it exactly.
 */
async function boundedTotal(
  db: object,
  key: string,
  generation: number,
  need: number,
  countUpTo: (limit: number) => Promise<number>,
): Promise<{ total: number; exact: boolean }> {
  for (let limit = SEARCH_COUNT_STEP; ; limit *= 2) {
    const n = await cachedCount(db, `${key}<${limit}`, generation, '', () => countUpTo(limit));
    if (n < limit) return { total: n, exact: true };
    if (limit >= need) return { total: n, exact: false };
  }
}

/**
 * Where pages of an audit list start: per list (its filters) and audit counter, the id found at
 * each offset a page was read at (its first and last entries). Newest first by id, the entry at
 * offset o is the (o - a)th at or below the id at offset a, so a page near one read before skips
 * only the entries between them on the index. Exact: any audit write moves the counter, and an
 * anchor of another counter is never used.
 */
interface Anchors {
  generation: number;
  /** Offset -> id, at most ANCHORS_PER_LIST (the oldest dropped). */
  at: Map<number, number>;
}
const ANCHORS = new WeakMap<object, Map<string, Anchors>>();
const ANCHORS_PER_LIST = 64;
const ANCHORED_LISTS = 256;

function anchorsOf(db: object, key: string, generation: number): Anchors {
  let lists = ANCHORS.get(db);
  if (!lists) ANCHORS.set(db, (lists = new Map<string, Anchors>()));
  let a = lists.get(key);
  if (!a || a.generation !== generation) {
    if (!a && lists.size >= ANCHORED_LISTS) lists.delete(lists.keys().next().value!);
    lists.set(key, (a = { generation, at: new Map<number, number>() }));
  }
  return a;
}

/** The anchor at or before `offset` nearest to it, if any. */
function pageAnchor(db: object, key: string, generation: number, offset: number): { offset: number; id: number } | undefined {
  let best: { offset: number; id: number } | undefined;
  for (const [o, id] of anchorsOf(db, key, generation).at) if (o <= offset && (!best || o > best.offset)) best = { offset: o, id };
  return best;
}

function anchorAt(db: object, key: string, generation: number, offset: number, id: number): void {
  const { at } = anchorsOf(db, key, generation);
  if (!at.has(offset) && at.size >= ANCHORS_PER_LIST) at.delete(at.keys().next().value!);
  at.set(offset, id);
}

/** One entry by id (added endpoint). Non-super-admins reach their own entries only: others are 404, as if absent. */
export async function readAuditLog(deps: Deps, caller: Caller, id: number): Promise<AuditLogEntry> {
  let q = deps.db.selectFrom('audit_logs').selectAll().where('id', '=', id);
  if (!caller.isSuperAdmin) q = q.where('username', '=', caller.user.username);
  const row = await q.executeTakeFirst();
  if (!row) throw notFound(`no audit entry ${id}`);
  return toAuditEntry(row);
}
