import type { HttpClient } from '../http.js';
import { AuditLogEntry as AuditSchema, Paginated } from '../../api/index.js';
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

const AUDIT_PAGE = Paginated(AuditSchema);

export const auditApi = (http: HttpClient) => ({
  /** 4.19: newest first. */
  list: (query: AuditListQuery = {}) => http.request<Page<AuditLogEntry>>('GET', 'api/v1/audit-logs', { query: { ...query }, schema: AUDIT_PAGE }),
  /** GET /api/v1/audit-logs/{id} (added): one entry; another user's is 404 for non-super-admins. */
  get: (id: number) => http.request<AuditLogEntry>('GET', `api/v1/audit-logs/${id}`, { schema: AuditSchema }),
});
