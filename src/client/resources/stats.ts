import type { HttpClient } from '../http.js';
import * as S from '../../api/index.js';
import type { DashboardStats } from '../../api/index.js';

export const statsApi = (http: HttpClient) => ({
  /** 4.20: only the environments the caller may access are counted. */
  get: () => http.request<DashboardStats>('GET', 'api/v1/stats', { schema: S.DashboardStats }),
});
