import type { Static } from '@sinclair/typebox';
import { Type } from './type.js';
import { CarveListStatuses } from './constants.js';
export { CarveListStatuses };

/** api-spec.md 2.7 */
export const CarveQuery = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  query: Type.String(),
  path: Type.String(),
  type: Type.String(),
  target: Type.String(),
  targets: Type.Array(Type.Object({ type: Type.String(), value: Type.String() })),
  creator: Type.String(),
  environment_id: Type.Integer(),
  active: Type.Boolean(),
  completed: Type.Boolean(),
  deleted: Type.Boolean(),
  expired: Type.Boolean(),
  hidden: Type.Boolean(),
  protected: Type.Boolean(),
  carve_status: Type.String(),
  errors: Type.Integer(),
  executions: Type.Integer(),
  expected: Type.Integer(),
  expiration: Type.String(),
  extra_data: Type.String(),
  created_at: Type.String(),
  updated_at: Type.String(),
});
export type CarveQuery = Static<typeof CarveQuery>;

/** api-spec.md 2.8 */
export const CarveFile = Type.Object({
  uuid: Type.String(),
  /** Issue 20: the hostname of the node the file came from ('' when the node is gone); fleetctl's server adds it. */
  hostname: Type.Optional(Type.String()),
  carve_id: Type.String(),
  session_id: Type.String(),
  path: Type.String(),
  status: Type.String(),
  archived: Type.Boolean(),
  block_size: Type.Integer(),
  carve_size: Type.Integer(),
  total_blocks: Type.Integer(),
  completed_blocks: Type.Integer(),
  created_at: Type.String(),
  completed_at: Type.String(),
  /** Issue 26 (fleetctl's server): the archive's compression, 'zstd' (osquery's --carver_compression) or 'none' ('' until complete). */
  compression: Type.Optional(Type.String()),
  /** Issue 26: '' or why a completed archive holds no file (a directory, a pattern matching none). */
  note: Type.Optional(Type.String()),
});
export type CarveFile = Static<typeof CarveFile>;

/** Issue 26 (fleetctl's server): why a node's last carver start for this carve was refused. */
export const CarveRefusalView = Type.Object({ uuid: Type.String(), hostname: Type.String(), error: Type.String(), at: Type.String() });
export type CarveRefusalView = Static<typeof CarveRefusalView>;

/**
 * POST /api/v1/carves/{env}/targets (fleetctl's server, issue 26): what a carve of these targets
 * would wait for, without starting one: how many nodes they match, and the longest distributed
 * interval (seconds) among those online, as the server knows it (what each node's configuration
 * last told it), else the environment's. The body is a run's target lists.
 */
export const CarveTargets = Type.Object({ expected: Type.Integer(), query_interval: Type.Integer() });
export type CarveTargets = Static<typeof CarveTargets>;

export const CarveDetail = Type.Object({
  files: Type.Array(CarveFile),
  query: CarveQuery,
  refusals: Type.Optional(Type.Array(CarveRefusalView)),
});
export type CarveDetail = Static<typeof CarveDetail>;

export const CarveActions = ['delete', 'expire', 'complete', 'archive'] as const;
export type CarveAction = (typeof CarveActions)[number];
export const CarveStatuses = ['ACTIVE', 'PENDING', 'COMPLETED', 'EXPIRED', 'DELETED'] as const;
export const CarveFileStatuses = ['QUERIED', 'SCHEDULED', 'IN PROGRESS', 'COMPLETED'] as const;

/** GET /api/v1/carves/{env} query (contract.md 5): `status` is a carve_status, lower-case. */
export const CarvesListQuery = Type.Object({
  page: Type.Optional(Type.String()),
  page_size: Type.Optional(Type.String()),
  status: Type.Optional(Type.String()),
  q: Type.Optional(Type.String()),
});
export type CarvesListQuery = Static<typeof CarvesListQuery>;
export type CarveListStatus = (typeof CarveListStatuses)[number];
