import type { HttpClient } from '../http.js';
import * as S from '../../api/index.js';
import { needs } from '../validate.js';
import type { MessageResponse, Node, NodeSort, NodeStatus, Page, Platform, SortOrder } from '../../api/index.js';

const seg = encodeURIComponent;

export interface NodeListQuery {
  page?: number;
  page_size?: number;
  q?: string;
  /** Only nodes carrying this tag. */
  tag?: string;
  /** Issue 22: `stale` (not on the environment's current osquery configuration) or `current`. */
  config?: 'stale' | 'current';
  status?: NodeStatus;
  platform?: Platform;
  /** Issue 20: posture.risk_level / health.status, derived by the server. */
  risk?: string;
  health?: string;
  sort?: NodeSort;
  order?: SortOrder;
}

/** Commands act on nodes by UUID (delete, tag): an item without one is not a node. */
export const NODE = needs(S.Node, 'uuid');
const NODE_PAGE = needs(S.Paginated(NODE), 'items');

export const nodesApi = (http: HttpClient) => ({
  /** 4.11 */
  list: (env: string, query: NodeListQuery = {}) =>
    http.request<Page<Node>>('GET', `api/v1/nodes/${seg(env)}`, { query: { ...query }, schema: NODE_PAGE }),
  /** 4.12; this server's read carries the node's last status problems (issue 30) whether asked or not. */
  get: (env: string, node: string, _o: { statusProblems?: boolean } = {}) =>
    http.request<Node>('GET', `api/v1/nodes/${seg(env)}/node/${seg(node)}`, { schema: NODE }),
  /** 4.13 */
  delete: (env: string, uuid: string) =>
    http.request<MessageResponse>('POST', `api/v1/nodes/${seg(env)}/delete`, { body: { uuid }, schema: S.MessageResponse }),
});
