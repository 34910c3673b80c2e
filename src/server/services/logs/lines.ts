// GET /api/v1/logs/{env} (issue 30): the spool's lines with filters, a page at a time, by id (the
// spool's commit order) newest or oldest first, with a cursor. Each filter reads one index and
// pages on it: a node's lines (node, type, id), a query's (environment, name, id), or a type's
// (environment, type, id, the spool's own), one range per type merged by id. Time bounds become
// id bounds (time-bounds.ts). Filters the index cannot answer (a pack, a severity, a text match, a
// query of one node) are checked on the rows of a window of at most SCAN_WINDOW index entries per
// request: a page may then hold fewer lines than asked, with a `next_cursor` to read on, so no
// request reads more than a bounded part of a large store whatever it asks.
import { sql, type Kysely, type SelectQueryBuilder } from 'kysely';
import type { Deps } from '../../context.js';
import type { DB, EnvironmentRow } from '../../store/schema.js';
import { LOG_PAGE_DEFAULT, LOG_PAGE_MAX, LOG_WAIT_MAX_SECONDS, LogLineTypes, LogOrders, StatusSeverities } from '../../../api/constants.js';
import type { LogsQuery } from '../../../api/index.js';
import { badRequest } from '../../errors.js';
import { headId, idBounds } from './time-bounds.js';
import { resolveNode } from './nodes.js';
import { envelope, type SinkEntry } from '../delivery/sink.js';

/** Index entries a request may walk for filters its index does not answer. */
export const SCAN_WINDOW = 20_000;

export interface LogFilter {
  types: string[];
  name?: string;
  /** Lines of a pack's queries: names starting `pack_<pack>_` (osquery's default delimiter). */
  packPrefix?: string;
  nodeId?: number;
  since?: string;
  until?: string;
  minSeverity?: number;
  q?: string;
  order: 'asc' | 'desc';
  limit: number;
  /** Exclusive: lines after it (asc) or before it (desc). */
  cursor?: number;
  /** Long poll, milliseconds (asc only). */
  waitMs: number;
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

function time(v: string | undefined, name: string): string | undefined {
  if (v === undefined || v === '') return undefined;
  if (!RFC3339.test(v) || Number.isNaN(Date.parse(v))) throw badRequest(`${name} must be an RFC 3339 time, e.g. 2026-11-25T10:00:00Z`);
  return new Date(Date.parse(v)).toISOString();
}

function oneOf<T extends string>(v: string | undefined, name: string, allowed: readonly T[]): T | undefined {
  if (v === undefined || v === '') return undefined;
  if (!(allowed as readonly string[]).includes(v)) throw badRequest(`${name} must be one of ${allowed.join(', ')}`);
  return v as T;
}

function positive(v: string | undefined, name: string): number | undefined {
  if (v === undefined || v === '') return undefined;
  if (!/^\d{1,15}$/.test(v)) throw badRequest(`${name} must be a whole number`);
  return Number(v);
}

const likeEscape = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

/** The request's filters, checked (400 naming the parameter); `node` resolved in the environment. */
export async function parseLogQuery(deps: Deps, env: EnvironmentRow, q: LogsQuery): Promise<LogFilter> {
  const type = oneOf(q.type, 'type', LogLineTypes);
  const severity = oneOf(q.severity, 'severity', StatusSeverities);
  const order = oneOf(q.order, 'order', LogOrders) ?? 'desc';
  if (severity && type === 'result') throw badRequest('severity is about status lines: it cannot go with type=result');
  if ((q.query || q.pack) && (type === 'status' || severity))
    throw badRequest('query and pack are about results: they cannot go with status lines');
  const limit = Math.min(positive(q.limit, 'limit') ?? LOG_PAGE_DEFAULT, LOG_PAGE_MAX);
  if (limit < 1) throw badRequest('limit must be at least 1');
  const cursor = positive(q.cursor, 'cursor');
  if (q.cursor !== undefined && q.cursor !== '' && cursor === undefined) throw badRequest('cursor is not one this endpoint gave');
  const wait = positive(q.wait, 'wait') ?? 0;
  if (wait > LOG_WAIT_MAX_SECONDS) throw badRequest(`wait is at most ${LOG_WAIT_MAX_SECONDS} seconds`);
  if (wait > 0 && order !== 'asc') throw badRequest('wait (following) reads oldest first: give order=asc');
  const since = time(q.since, 'since');
  const until = time(q.until, 'until');
  if (since && until && since >= until) throw badRequest('since must be before until');
  const nodeId = q.node !== undefined && q.node !== '' ? (await resolveNode(deps, env, q.node)).id : undefined;
  const results = Boolean(q.query || q.pack);
  return {
    types: severity || type === 'status' ? ['status'] : results || type === 'result' ? ['result'] : ['result', 'status'],
    // A pack's query by its name as osquery gives it; a whole pack by the prefix of those names.
    name: q.query ? (q.pack ? `pack_${q.pack}_${q.query}` : q.query) : undefined,
    packPrefix: q.pack && !q.query ? `pack_${q.pack}_` : undefined,
    nodeId,
    since,
    until,
    minSeverity: severity ? StatusSeverities.indexOf(severity) : undefined,
    q: q.q === undefined || q.q === '' ? undefined : q.q.slice(0, 1024),
    order,
    limit,
    cursor,
    waitMs: wait * 1000,
  };
}

interface Source {
  where: (b: SelectQueryBuilder<DB, 'log_spool', object>) => SelectQueryBuilder<DB, 'log_spool', object>;
}

/** The index each part of the read walks, one per type unless the query name picks the index. */
function sources(env: EnvironmentRow, f: LogFilter): Source[] {
  if (f.nodeId !== undefined) return f.types.map((t) => ({ where: (b) => b.where('node_id', '=', f.nodeId!).where('log_type', '=', t) }));
  if (f.name !== undefined)
    return [{ where: (b) => b.where('environment_id', '=', env.id).where('name', '=', f.name!).where('log_type', '=', 'result') }];
  return f.types.map((t) => ({ where: (b) => b.where('environment_id', '=', env.id).where('log_type', '=', t) }));
}

/** Conditions the index does not answer (checked on each row read). */
function residual(f: LogFilter, b: SelectQueryBuilder<DB, 'log_spool', object>): SelectQueryBuilder<DB, 'log_spool', object> {
  if (f.nodeId !== undefined && f.name !== undefined) b = b.where('name', '=', f.name);
  // Exact and case-sensitive, on both databases (SQLite's LIKE ignores ASCII case).
  if (f.packPrefix !== undefined) b = b.where(sql<boolean>`substr(name, 1, ${f.packPrefix.length}) = ${f.packPrefix}`);
  if (f.minSeverity !== undefined) b = b.where('severity', '>=', f.minSeverity);
  if (f.q !== undefined) b = b.where(sql<boolean>`lower(line) like ${`%${likeEscape(f.q.toLowerCase())}%`} escape '\\'`);
  if (f.since !== undefined) b = b.where('received_at', '>=', f.since);
  if (f.until !== undefined) b = b.where('received_at', '<', f.until);
  return b;
}

/** Filters that make the read check rows it then leaves out, so a window bounds it. */
const windowed = (f: LogFilter) =>
  f.packPrefix !== undefined || f.minSeverity !== undefined || f.q !== undefined || (f.nodeId !== undefined && f.name !== undefined);

export interface LinesPage {
  /** The page as JSON text (LogPage): lines are never parsed, only wrapped. */
  text: string;
  count: number;
  nextCursor: number | null;
  followCursor: number;
}

type LineRow = {
  id: number;
  host_identifier: string;
  hostname: string;
  log_type: string;
  name: string | null;
  received_at: string;
  line: string;
};

/**
 * One line as the API gives it: `id`, then exactly the envelope a file, http or stdout sink
 * writes (services/delivery/sink.ts builds both), `entry` the agent's JSON text as it is stored.
 */
export function lineJson(r: LineRow, environment: string): string {
  const e = {
    environment,
    hostIdentifier: r.host_identifier,
    hostname: r.hostname,
    logType: r.log_type,
    name: r.name ?? undefined,
    receivedAt: r.received_at,
    line: r.line,
  } as SinkEntry;
  return `{"id":${Number(r.id)},${envelope(e).slice(1)}`;
}

/** One page of lines for the filter, read on `db` (the admin door's connections). */
export async function readLines(db: Kysely<DB>, env: EnvironmentRow, f: LogFilter): Promise<LinesPage> {
  const desc = f.order === 'desc';
  // The head is read first: a line committed after it is left for the follower, never skipped.
  const head = await headId(db);
  const b = await idBounds(db, f.since, f.until);
  let low = b.low;
  let high = Math.min(b.high, head);
  if (f.cursor !== undefined) {
    if (desc) high = Math.min(high, f.cursor - 1);
    else low = Math.max(low, f.cursor + 1);
  }
  const srcs = sources(env, f);
  const base = () => db.selectFrom('log_spool');
  // The window: how far this request reads along each index before it stops and hands a cursor.
  let cut: number | undefined;
  if (windowed(f) && low <= high) {
    for (const s of srcs) {
      const edge = await s
        .where(base())
        .select('id')
        .where('id', '>=', low)
        .where('id', '<=', high)
        .orderBy('id', desc ? 'desc' : 'asc')
        .offset(SCAN_WINDOW - 1)
        .limit(1)
        .executeTakeFirst();
      if (edge) cut = cut === undefined ? Number(edge.id) : desc ? Math.max(cut, Number(edge.id)) : Math.min(cut, Number(edge.id));
    }
    if (cut !== undefined) {
      if (desc) low = cut;
      else high = cut;
    }
  }
  let rows: LineRow[] = [];
  if (low <= high) {
    for (const s of srcs) {
      const got = await residual(f, s.where(base()))
        .select(['id', 'host_identifier', 'hostname', 'log_type', 'name', 'received_at', 'line'])
        .where('id', '>=', low)
        .where('id', '<=', high)
        .orderBy('id', desc ? 'desc' : 'asc')
        .limit(f.limit)
        .execute();
      rows.push(...(got as LineRow[]));
    }
  }
  if (srcs.length > 1) rows.sort((a, c) => (desc ? Number(c.id) - Number(a.id) : Number(a.id) - Number(c.id)));
  const full = rows.length >= f.limit;
  rows = rows.slice(0, f.limit);
  const last = rows.length ? Number(rows[rows.length - 1].id) : undefined;
  // Read on from the last line (a full page), from the window's edge (a cut), or not (the end).
  const nextCursor = full ? last! : (cut ?? null);
  const followCursor = desc ? head : (nextCursor ?? Math.max(high, f.cursor ?? 0));
  const items = rows.map((r) => lineJson(r, env.name)).join(',');
  const text = `{"items":[${items}],"next_cursor":${nextCursor === null ? 'null' : JSON.stringify(String(nextCursor))},"follow_cursor":${JSON.stringify(String(followCursor))}}`;
  return { text, count: rows.length, nextCursor, followCursor };
}

/** After a follower is woken, a moment more gathers the rest of a burst into the same answer. */
const LINGER_MS = 200;

/**
 * A follow request (order asc with `wait`) that found nothing: held until a line of the
 * environment is committed (LogWatch) or the wait is over, then read again from where the first
 * read stopped. An answer with lines, or a window to read on, is returned at once.
 */
export async function waitForLines(
  deps: Deps,
  env: EnvironmentRow,
  f: LogFilter,
  first: LinesPage,
  signal: AbortSignal,
): Promise<LinesPage> {
  const watch = deps.logWatch;
  if (!watch) return first;
  const deadline = Date.now() + f.waitMs;
  let page = first;
  while (page.count === 0 && page.nextCursor === null && !signal.aborted) {
    const left = deadline - Date.now();
    if (left <= 0) break;
    await watch.wait(env.id, page.followCursor, left, signal);
    if (signal.aborted || watch.closed) break;
    await new Promise((r) => setTimeout(r, Math.max(0, Math.min(LINGER_MS, deadline - Date.now()))));
    page = await readLines(deps.db, env, { ...f, cursor: page.followCursor });
  }
  return page;
}
