import type { Static } from '@sinclair/typebox';
import { Type } from './type.js';
import { CarveQuery } from './carve.js';
import { QueryListStatuses } from './constants.js';
export { QueryListStatuses };

/**
 * A distributed (live) query: the carve query object (api-spec.md 2.7) with type `query`, plus
 * `status` (ACTIVE, COMPLETED, EXPIRED, DELETED; derived like `carve_status`).
 */
export const DistributedQuery = Type.Object({
  ...CarveQuery.properties,
  status: Type.Optional(Type.String()),
  /** Issue 20 (fleetctl's server): targeted nodes online now, and those of them that have not answered yet. */
  online: Type.Optional(Type.Integer()),
  online_pending: Type.Optional(Type.Integer()),
});
export type DistributedQuery = Static<typeof DistributedQuery>;

/**
 * POST /api/v1/queries/{env} and POST /api/v1/carves/{env} (osctrl's ApiDistributedQueryRequest):
 * no target lists = every node of the environment.
 */
export const QueryRunRequest = Type.Object({
  query: Type.Optional(Type.String()),
  path: Type.Optional(Type.String()),
  uuid_list: Type.Optional(Type.Array(Type.String())),
  host_list: Type.Optional(Type.Array(Type.String())),
  platform_list: Type.Optional(Type.Array(Type.String())),
  environment_list: Type.Optional(Type.Array(Type.String())),
  tag_list: Type.Optional(Type.Array(Type.String())),
  /** Issue 20 (fleetctl's server): by activity, derived health and risk, as the nodes list filters. */
  status_list: Type.Optional(Type.Array(Type.String())),
  health_list: Type.Optional(Type.Array(Type.String())),
  risk_list: Type.Optional(Type.Array(Type.String())),
  hidden: Type.Optional(Type.Boolean()),
  exp_hours: Type.Optional(Type.Integer()),
  /** Issue 20 (fleetctl's server): expiry in seconds, wins over exp_hours. */
  expire_seconds: Type.Optional(Type.Integer()),
});
export type QueryRunRequest = Static<typeof QueryRunRequest>;

/** `expected`: how many nodes the targets matched (fleetctl's server adds it to osctrl's answer). */
export const QueryRunResponse = Type.Object({ query_name: Type.String(), expected: Type.Optional(Type.Integer()) });
export type QueryRunResponse = Static<typeof QueryRunResponse>;

/** One node's answer to a distributed query: its result set (`rows`), or `error` when `status` is not 0. */
export const QueryResult = Type.Object({
  id: Type.Integer(),
  created_at: Type.String(),
  uuid: Type.String(),
  hostname: Type.Optional(Type.String()),
  /** Issue 26 (fleetctl's server): how to name the node beside its rows: its hostname, with its UUID's first 8 characters when another target of the query has the same hostname (clones). */
  node: Type.Optional(Type.String()),
  status: Type.Integer(),
  error: Type.Optional(Type.String()),
  rows: Type.Array(Type.Record(Type.String(), Type.Unknown())),
});
export type QueryResult = Static<typeof QueryResult>;

/** GET /api/v1/queries/{env}/results/{name}: a page of answers, oldest first, and the progress. */
export const QueryResultsPage = Type.Object({
  items: Type.Array(QueryResult),
  page: Type.Integer(),
  page_size: Type.Integer(),
  total_items: Type.Integer(),
  total_pages: Type.Integer(),
  expected: Type.Optional(Type.Integer()),
  answered: Type.Optional(Type.Integer()),
  query_status: Type.Optional(Type.String()),
  /** Issue 20 (fleetctl's server): targets online now; of those, not answered yet; the longest targeted hostname. */
  online: Type.Optional(Type.Integer()),
  online_pending: Type.Optional(Type.Integer()),
  hostname_width: Type.Optional(Type.Integer()),
});
export type QueryResultsPage = Static<typeof QueryResultsPage>;

export const QueryActions = ['delete', 'expire', 'complete', 'cancel'] as const;
export type QueryAction = (typeof QueryActions)[number];

/** GET /api/v1/queries/{env}?status=: the list filter (no filter: every query). */
export type QueryListStatus = (typeof QueryListStatuses)[number];
