import type { HttpClient } from '../http.js';
import * as S from '../../api/index.js';
import type { CarveAction, CarveDetail, CarveListStatus, CarveQuery, MessageResponse, Page, QueryRunRequest, QueryRunResponse } from '../../api/index.js';

const seg = encodeURIComponent;

export interface CarveListQuery {
  page?: number;
  page_size?: number;
  status?: CarveListStatus;
  q?: string;
}

const CARVE_PAGE = S.Paginated(S.CarveQuery);

export const carvesApi = (http: HttpClient) => ({
  /** GET /api/v1/carves/{env} (contract.md 5): newest first. */
  list: (env: string, query: CarveListQuery = {}) => http.request<Page<CarveQuery>>('GET', `api/v1/carves/${seg(env)}`, { query: { ...query }, schema: CARVE_PAGE }),
  /** 4.16 */
  get: (env: string, name: string) => http.request<CarveDetail>('GET', `api/v1/carves/${seg(env)}/${seg(name)}`, { schema: S.CarveDetail }),
  /** 4.17: no body. */
  /** POST /api/v1/carves/{env}: start a carve of `path` on the targets. */
  run: (env: string, body: QueryRunRequest) => http.request<QueryRunResponse>('POST', `api/v1/carves/${seg(env)}`, { body }),
  /** GET /api/v1/carves/{env}/archive/{name}[?session=]: the reassembled archive, streamed. */
  archive: (env: string, name: string, session?: string) => http.download(`api/v1/carves/${seg(env)}/archive/${seg(name)}`, { session }),
  action: (env: string, action: CarveAction, name: string) => http.request<MessageResponse>('POST', `api/v1/carves/${seg(env)}/${seg(action)}/${seg(name)}`, { schema: S.MessageResponse }),
});
