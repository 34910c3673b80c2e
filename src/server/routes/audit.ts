// Audit logs (4.19): authenticated; the service narrows non-super-admins to their own rows.
import { callerOf, type App } from './request.js';
import type { Deps } from '../context.js';
import { AuditLogEntry, AuditQuery, Paginated } from '../../api/index.js';
import { RULES } from '../permissions.js';
import { listAuditLogs, readAuditLog } from '../services/audit/audit-query.js';
import { Type } from '@sinclair/typebox';
import { sendPage } from './cached-body.js';

export function auditRoutes(app: App, deps: Deps): void {
  app.get(
    '/api/v1/audit-logs',
    { config: { rule: RULES.audit }, schema: { querystring: AuditQuery, response: { 200: Paginated(AuditLogEntry) } } },
    async (req, reply) => sendPage(reply, await listAuditLogs(deps, callerOf(req), req.query)),
  );
  app.get(
    '/api/v1/audit-logs/:id',
    {
      config: { rule: RULES.audit },
      schema: { params: Type.Object({ id: Type.String({ pattern: '^[1-9][0-9]{0,15}$' }) }), response: { 200: AuditLogEntry } },
    },
    async (req) => readAuditLog(deps, callerOf(req), Number(req.params.id)),
  );
}
