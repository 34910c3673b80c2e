import { AuditLogEntry, type Page } from '../../../api/index.js';
import { checkAnswer } from '../../validate.js';
import type { FleetResources } from '../../resources/index.js';
import type { OsctrlSession } from './session.js';
import { refuse, AUDIT_PAGE } from './shapes.js';

export function auditResource(s: OsctrlSession) {
  const { http, envUuid } = s;
  return {
    list: async (query: Parameters<FleetResources['audit']['list']>[0] = {}) => {
      const { q, env, ...rest } = query;
      if (q) refuse('audit-search');
      const env_uuid = env ? await envUuid(env) : undefined;
      const p = checkAnswer<Page<AuditLogEntry>>(
        AUDIT_PAGE,
        await http.request<unknown>('GET', 'api/v1/audit-logs', { query: { ...rest, env_uuid } }),
      );
      // osctrl matches `username` as a substring (bob finds bobby too): this API means that user.
      return rest.username === undefined ? p : { ...p, items: p.items.filter((e) => e.username === rest.username) };
    },
    get: () => refuse('audit-show'),
  };
}
