import { Type } from '../../api/type.js';
import type { HttpClient } from '../http.js';
import * as S from '../../api/index.js';
import type {
  DistributedQuery,
  MessageResponse,
  Page,
  QueryAction,
  QueryListStatus,
  QueryResultsPage,
  QueryRunRequest,
  QueryRunResponse,
} from '../../api/index.js';
import { needs } from '../validate.js';
import { RUN_ANSWER } from './carves.js';

const seg = encodeURIComponent;

export const QUERY = needs(S.DistributedQuery, 'name');
const QUERY_PAGE = needs(S.Paginated(QUERY), 'items');
/** Answers are streamed after the last id seen and counted by node: both are needed. */
export const RESULTS_PAGE = needs(
  Type.Object({ ...S.QueryResultsPage.properties, items: Type.Array(needs(S.QueryResult, 'id', 'uuid')) }),
  'items',
);

export const queriesApi = (http: HttpClient) => ({
  /** POST /api/v1/queries/{env}: start a distributed query. */
  run: (env: string, body: QueryRunRequest) =>
    http.request<QueryRunResponse>('POST', `api/v1/queries/${seg(env)}`, { body, schema: RUN_ANSWER }),
  /** GET /api/v1/queries/{env}: paged, newest first. */
  list: (env: string, query: { status?: QueryListStatus; page?: number; page_size?: number } = {}) =>
    http.request<Page<DistributedQuery>>('GET', `api/v1/queries/${seg(env)}`, { query: { ...query }, schema: QUERY_PAGE }),
  get: (env: string, name: string) => http.request<DistributedQuery>('GET', `api/v1/queries/${seg(env)}/${seg(name)}`, { schema: QUERY }),
  /** GET /api/v1/queries/{env}/results/{name}: one item per node answer, oldest first; `after_id` for what is new. */
  results: (env: string, name: string, query: { page?: number; page_size?: number; after_id?: number } = {}) =>
    http.request<QueryResultsPage>('GET', `api/v1/queries/${seg(env)}/results/${seg(name)}`, { query: { ...query }, schema: RESULTS_PAGE }),
  action: (env: string, action: QueryAction, name: string) =>
    http.request<MessageResponse>('POST', `api/v1/queries/${seg(env)}/${seg(action)}/${seg(name)}`, { schema: S.MessageResponse }),
});
