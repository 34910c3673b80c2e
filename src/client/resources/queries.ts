import type { HttpClient } from '../http.js';
import type { DistributedQuery, MessageResponse, Page, QueryAction, QueryListStatus, QueryResultsPage, QueryRunRequest, QueryRunResponse } from '../../api/index.js';

const seg = encodeURIComponent;

export const queriesApi = (http: HttpClient) => ({
  /** POST /api/v1/queries/{env}: start a distributed query. */
  run: (env: string, body: QueryRunRequest) => http.request<QueryRunResponse>('POST', `api/v1/queries/${seg(env)}`, { body }),
  /** GET /api/v1/queries/{env}: paged, newest first. */
  list: (env: string, query: { status?: QueryListStatus; page?: number; page_size?: number } = {}) =>
    http.request<Page<DistributedQuery>>('GET', `api/v1/queries/${seg(env)}`, { query: { ...query } }),
  get: (env: string, name: string) => http.request<DistributedQuery>('GET', `api/v1/queries/${seg(env)}/${seg(name)}`),
  /** GET /api/v1/queries/{env}/results/{name}: one item per node answer, oldest first; `after_id` for what is new. */
  results: (env: string, name: string, query: { page?: number; page_size?: number; after_id?: number } = {}) =>
    http.request<QueryResultsPage>('GET', `api/v1/queries/${seg(env)}/results/${seg(name)}`, { query: { ...query } }),
  action: (env: string, action: QueryAction, name: string) => http.request<MessageResponse>('POST', `api/v1/queries/${seg(env)}/${seg(action)}/${seg(name)}`),
});
