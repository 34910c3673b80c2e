// Reading the audit trail (4.19). Newest first by id: every row is written with the server's
// clock at insertion, so id order is time order, and the id is indexed with every filter.
import { sql } from 'kysely';
import type { Caller, Deps } from '../context.js';
import type { AuditLogEntry, AuditQuery, Page } from '../../api/index.js';
import { likeContains, pageOf, parsePage } from '../lib/pagination.js';
import { requireEnv } from './environments.js';
import { toAuditEntry } from './audit.js';
import { notFound } from '../errors.js';

export async function listAuditLogs(deps: Deps, caller: Caller, query: AuditQuery): Promise<Page<AuditLogEntry>> {
  const pageReq = parsePage(query);
  let base = deps.db.selectFrom('audit_logs');
  // Non-super-admins see their own entries only; their username filter can only narrow that.
  if (!caller.isSuperAdmin) base = base.where('username', '=', caller.user.username);
  if (query.username) base = base.where('username', '=', query.username);
  if (query.service) base = base.where('service', '=', query.service);
  if (query.env) {
    const env = await requireEnv(deps, query.env);
    base = base.where('environment_id', '=', env.id);
  }
  if (query.q) base = base.where(sql<boolean>`lower(line) like ${likeContains(query.q.toLowerCase())} escape '\\'`);
  const totalRow = await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirst();
  const rows = await base.selectAll().orderBy('id', 'desc').limit(pageReq.pageSize).offset(pageReq.offset).execute();
  return pageOf(rows.map(toAuditEntry), pageReq, Number(totalRow?.n ?? 0));
}

/** One entry by id (added endpoint). Non-super-admins reach their own entries only: others are 404, as if absent. */
export async function readAuditLog(deps: Deps, caller: Caller, id: number): Promise<AuditLogEntry> {
  let q = deps.db.selectFrom('audit_logs').selectAll().where('id', '=', id);
  if (!caller.isSuperAdmin) q = q.where('username', '=', caller.user.username);
  const row = await q.executeTakeFirst();
  if (!row) throw notFound(`no audit entry ${id}`);
  return toAuditEntry(row);
}
