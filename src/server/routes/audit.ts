// Audit logs (4.19): authenticated; the service narrows non-super-admins to their own rows.
import { callerOf, type App } from '../app.js';
import type { Deps } from '../context.js';
import { AuditLogEntry, AuditQuery, Paginated } from '../../api/index.js';
import { RULES } from '../permissions.js';
import { listAuditLogs } from '../services/audit-query.js';

export function auditRoutes(app: App, deps: Deps): void {
  app.get(
    '/api/v1/audit-logs',
    { config: { rule: RULES.audit }, schema: { querystring: AuditQuery, response: { 200: Paginated(AuditLogEntry) } } },
    async (req) => listAuditLogs(deps, callerOf(req), req.query),
  );
}
