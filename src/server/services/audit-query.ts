// Reading the audit trail (4.19). Newest first by id: every row is written with the server's
// clock at insertion, so id order is time order. Every combination of the equality filters
// (username, service, environment) has an index ending in id (migration 010), so a page is the
// start of one index range; `q` goes through a trigram index (FTS5 on SQLite, pg_trgm on
// PostgreSQL). Totals are cached per audit counter (moved by every audit write, on any replica),
// so paging through a million rows counts them once, not per page.
import { sql, type Expression, type SqlBool } from 'kysely';
import type { Caller, Deps } from '../context.js';
import type { AuditLogEntry, AuditQuery, Page } from '../../api/index.js';
import { likeContains, pageOf, parsePage } from '../lib/pagination.js';
import { requireEnv } from './environments.js';
import { toAuditEntry } from './audit.js';
import { notFound } from '../errors.js';
import { MIN_INDEXED_QUERY, readGenerations } from '../store/node-index.js';
import { cachedCount } from './node-counts.js';

/** `line` contains q, case-insensitive: through the trigram index when q is long enough for it. */
function lineMatch(deps: Deps, q: string): Expression<SqlBool> {
  if (deps.dialect === 'sqlite' && [...q].length >= MIN_INDEXED_QUERY) {
    return sql<SqlBool>`audit_logs.id in (select rowid from audit_search where audit_search match ${`"${q.replaceAll('"', '""')}"`})`;
  }
  // PostgreSQL: the expression of the audit_logs_line_trgm index (GIN, pg_trgm).
  return sql<SqlBool>`lower(line) like ${likeContains(q.toLowerCase())} escape '\\'`;
}

export async function listAuditLogs(deps: Deps, caller: Caller, query: AuditQuery): Promise<Page<AuditLogEntry>> {
  const pageReq = parsePage(query);
  let base = deps.db.selectFrom('audit_logs');
  // Non-super-admins see their own entries only; their username filter can only narrow that.
  if (!caller.isSuperAdmin) base = base.where('username', '=', caller.user.username);
  if (query.username) base = base.where('username', '=', query.username);
  if (query.service) base = base.where('service', '=', query.service);
  let envId: number | undefined;
  if (query.env) {
    envId = (await requireEnv(deps, query.env)).id;
    base = base.where('environment_id', '=', envId);
  }
  if (query.q) base = base.where(lineMatch(deps, query.q));
  const generation = (caller.generations ?? (await readGenerations(deps.db))).audit;
  const key = JSON.stringify(['audit', caller.isSuperAdmin ? '' : caller.user.username, query.username ?? '', query.service ?? '', envId ?? '', query.q ?? '']);
  const total = await cachedCount(deps.db, key, generation, '', async () => {
    const row = await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirst();
    return Number(row?.n ?? 0);
  });
  if (pageReq.offset >= total) return pageOf([], pageReq, total);
  const rows = await base.selectAll().orderBy('id', 'desc').limit(pageReq.pageSize).offset(pageReq.offset).execute();
  return pageOf(rows.map(toAuditEntry), pageReq, total);
}

/** One entry by id (added endpoint). Non-super-admins reach their own entries only: others are 404, as if absent. */
export async function readAuditLog(deps: Deps, caller: Caller, id: number): Promise<AuditLogEntry> {
  let q = deps.db.selectFrom('audit_logs').selectAll().where('id', '=', id);
  if (!caller.isSuperAdmin) q = q.where('username', '=', caller.user.username);
  const row = await q.executeTakeFirst();
  if (!row) throw notFound(`no audit entry ${id}`);
  return toAuditEntry(row);
}
