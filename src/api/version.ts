import type { Static } from '@sinclair/typebox';
import { Type } from './type.js';

/** GET /api/v1/version (issue 27): what the server runs, for `fleetctl version` and `auth status`. */
export const ServerVersion = Type.Object({
  /** The fleetctl release the server runs (its package version). */
  version: Type.String(),
  /** The last schema migration applied to its database, e.g. 015_production. */
  schema: Type.String(),
  /** sqlite or postgres. */
  database: Type.String(),
  /** The Node.js version it runs on. */
  node: Type.String(),
});
export type ServerVersion = Static<typeof ServerVersion>;
