import { Type } from '../../api/type.js';
import type { HttpClient } from '../http.js';
import { needs } from '../validate.js';
import * as S from '../../api/index.js';
import type {
  CarveAction,
  CarveDetail,
  CarveListStatus,
  CarveQuery,
  CarveTargets,
  MessageResponse,
  Page,
  QueryRunRequest,
  QueryRunResponse,
} from '../../api/index.js';

const seg = encodeURIComponent;

export interface CarveListQuery {
  page?: number;
  page_size?: number;
  status?: CarveListStatus;
  q?: string;
}

export const CARVE = needs(S.CarveQuery, 'name');
const CARVE_PAGE = needs(S.Paginated(CARVE), 'items');
/** A download checks size and blocks against the file's record: those are needed. */
const CARVE_DETAIL = needs(
  Type.Object({ files: Type.Array(needs(S.CarveFile, 'session_id', 'carve_size', 'total_blocks')), query: CARVE }),
  'query',
);
export const RUN_ANSWER = needs(S.QueryRunResponse, 'query_name');

export const carvesApi = (http: HttpClient) => ({
  /** GET /api/v1/carves/{env} (contract.md 5): newest first. */
  list: (env: string, query: CarveListQuery = {}) =>
    http.request<Page<CarveQuery>>('GET', `api/v1/carves/${seg(env)}`, { query: { ...query }, schema: CARVE_PAGE }),
  /** 4.16 */
  get: (env: string, name: string) => http.request<CarveDetail>('GET', `api/v1/carves/${seg(env)}/${seg(name)}`, { schema: CARVE_DETAIL }),
  /** 4.17: no body. */
  /** POST /api/v1/carves/{env}/targets (issue 26): how many nodes the target lists match and their cadence, nothing started. */
  targets: (env: string, body: QueryRunRequest): Promise<Partial<CarveTargets>> =>
    http.request<CarveTargets>('POST', `api/v1/carves/${seg(env)}/targets`, { body, schema: S.CarveTargets }),
  /** POST /api/v1/carves/{env}: start a carve of `path` on the targets. */
  run: (env: string, body: QueryRunRequest) =>
    http.request<QueryRunResponse>('POST', `api/v1/carves/${seg(env)}`, { body, schema: RUN_ANSWER }),
  /** GET /api/v1/carves/{env}/archive/{name}[?session=]: the reassembled archive, streamed. */
  archive: (env: string, name: string, session?: string) => http.download(`api/v1/carves/${seg(env)}/archive/${seg(name)}`, { session }),
  action: (env: string, action: CarveAction, name: string) =>
    http.request<MessageResponse>('POST', `api/v1/carves/${seg(env)}/${seg(action)}/${seg(name)}`, { schema: S.MessageResponse }),
});
