import { Type, type Static } from '@sinclair/typebox';
import { CarveQuery } from './carve.js';

/** A distributed (live) query: the same object as a carve query (api-spec.md 2.7), type `query`. */
export const DistributedQuery = CarveQuery;
export type DistributedQuery = CarveQuery;

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
  hidden: Type.Optional(Type.Boolean()),
  exp_hours: Type.Optional(Type.Integer()),
});
export type QueryRunRequest = Static<typeof QueryRunRequest>;

export const QueryRunResponse = Type.Object({ query_name: Type.String() });
export type QueryRunResponse = Static<typeof QueryRunResponse>;

/** One node's answer to a distributed query (osctrl's results item): `data` holds its rows. */
export const QueryResult = Type.Object({
  id: Type.Integer(),
  created_at: Type.String(),
  uuid: Type.String(),
  environment: Type.Optional(Type.String()),
  name: Type.String(),
  data: Type.Unknown(),
  status: Type.Integer(),
});
export type QueryResult = Static<typeof QueryResult>;

export const QueryResultsPage = Type.Object({
  items: Type.Array(QueryResult),
  page: Type.Integer(),
  page_size: Type.Integer(),
  total_items: Type.Integer(),
  total_pages: Type.Integer(),
  since: Type.Optional(Type.String()),
});
export type QueryResultsPage = Static<typeof QueryResultsPage>;

export const QueryActions = ['delete', 'expire', 'complete'] as const;
export type QueryAction = (typeof QueryActions)[number];

/** GET /api/v1/queries/{env}/list/{target}: osctrl's query list targets. */
export const QueryListTargets = ['all', 'active', 'completed', 'expired', 'deleted', 'hidden'] as const;
export type QueryListTarget = (typeof QueryListTargets)[number];
