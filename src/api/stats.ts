import type { Static } from '@sinclair/typebox';
import { Type } from './type.js';

export const PlatformCounts = Type.Object({
  darwin: Type.Integer(),
  linux: Type.Integer(),
  windows: Type.Integer(),
  other: Type.Integer(),
});
export type PlatformCounts = Static<typeof PlatformCounts>;

export const EnvironmentStats = Type.Object({
  uuid: Type.String(),
  name: Type.String(),
  active: Type.Integer(),
  inactive: Type.Integer(),
  total: Type.Integer(),
  active_queries: Type.Integer(),
  active_carves: Type.Integer(),
  platform_counts: PlatformCounts,
  /** Issue 27 (fleetctl's server; '' elsewhere): open, closing (its window ends within a day) or closed, and when. */
  enrollment: Type.String(),
  enroll_expire: Type.String(),
});
export type EnvironmentStats = Static<typeof EnvironmentStats>;

/** api-spec.md 2.10 */
export const DashboardStats = Type.Object({
  total_nodes: Type.Integer(),
  active_nodes: Type.Integer(),
  inactive_nodes: Type.Integer(),
  inactive_hours: Type.Integer(),
  total_active_queries: Type.Integer(),
  total_active_carves: Type.Integer(),
  platform_counts: PlatformCounts,
  environments: Type.Array(EnvironmentStats),
});
export type DashboardStats = Static<typeof DashboardStats>;
