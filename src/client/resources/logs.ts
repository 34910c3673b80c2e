// Issue 30: log lines and query reports (docs/api.md "Logs and query reports").
import { Type } from '../../api/type.js';
import type { HttpClient } from '../http.js';
import * as S from '../../api/index.js';
import { needs } from '../validate.js';
import type { LogLineType, LogOrder, LogPage, ReportPage, ReportSummary, StatusSeverity } from '../../api/index.js';

const seg = encodeURIComponent;

export interface LogListQuery {
  type?: LogLineType;
  query?: string;
  pack?: string;
  /** UUID, hostname or local name. */
  node?: string;
  /** RFC 3339. */
  since?: string;
  until?: string;
  severity?: StatusSeverity;
  q?: string;
  order?: LogOrder;
  limit?: number;
  cursor?: string;
  /** Long poll (order asc): hold the request up to this many seconds until a line arrives. */
  wait?: number;
}

/** A line is printed by its id order and time: both needed. */
export const LOG_LINE = needs(S.LogLine, 'id', 'received_at');
const LOG_PAGE = needs(Type.Object({ ...S.LogPage.properties, items: Type.Array(LOG_LINE) }), 'items', 'follow_cursor');
const REPORT_PAGE = needs(S.ReportPage, 'items');
const REPORTS = Type.Array(needs(S.ReportSummary, 'name'));

export const logsApi = (http: HttpClient) => ({
  /** GET /api/v1/logs/{env}: a page of lines, newest first unless `order: 'asc'`. */
  list: (env: string, query: LogListQuery = {}) =>
    http.request<LogPage>('GET', `api/v1/logs/${seg(env)}`, { query: { ...query }, schema: LOG_PAGE }),
  /** GET /api/v1/reports/{env}/{name}: a scheduled query's current rows per node. */
  report: (env: string, name: string, query: { node?: string; limit?: number; cursor?: string } = {}) =>
    http.request<ReportPage>('GET', `api/v1/reports/${seg(env)}/${seg(name)}`, { query: { ...query }, schema: REPORT_PAGE }),
  /** GET /api/v1/reports/{env}: the queries that have a report. */
  reports: (env: string) => http.request<ReportSummary[]>('GET', `api/v1/reports/${seg(env)}`, { schema: REPORTS, answerName: 'reports' }),
});
