import type { HttpClient } from '../http.js';
import { AuditLogEntry as AuditSchema, Paginated } from '../../api/index.js';
import { needs } from '../validate.js';
import type { AuditLogEntry, Page } from '../../api/index.js';

export interface AuditListQuery {
  page?: number;
  page_size?: number;
  q?: string;
  service?: string;
  username?: string;
  /** name or UUID */
  env?: string;
}

/** `audit list --follow` goes on from the newest id it printed. */
const ENTRY = needs(AuditSchema, 'id');
const AUDIT_PAGE = needs(Paginated(ENTRY), 'items');

export const auditApi = (http: HttpClient) => ({
  /** 4.19: newest first. */
  list: (query: AuditListQuery = {}) =>
    http.request<Page<AuditLogEntry>>('GET', 'api/v1/audit-logs', { query: { ...query }, schema: AUDIT_PAGE }),
  /** GET /api/v1/audit-logs/{id} (added): one entry; another user's is 404 for non-super-admins. */
  get: (id: number) => http.request<AuditLogEntry>('GET', `api/v1/audit-logs/${id}`, { schema: ENTRY }),
});
