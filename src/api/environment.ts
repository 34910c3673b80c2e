import type { Static } from '@sinclair/typebox';
import { Type } from './type.js';
import { Timestamp } from './common.js';
import { MapTargets, EnrollTargets } from './constants.js';
export { MapTargets, EnrollTargets };

/** api-spec.md 2.1 */
export const Environment = Type.Object({
  id: Type.Integer(),
  uuid: Type.String(),
  name: Type.String(),
  type: Type.String(),
  hostname: Type.String(),
  icon: Type.String(),
  user_id: Type.Integer(),
  secret: Type.String(),
  certificate: Type.String(),
  flags: Type.String(),
  options: Type.String(),
  schedule: Type.String(),
  packs: Type.String(),
  decorators: Type.String(),
  atc: Type.String(),
  configuration: Type.String(),
  accept_enrolls: Type.Boolean(),
  config_tls: Type.Boolean(),
  logging_tls: Type.Boolean(),
  query_tls: Type.Boolean(),
  carves_tls: Type.Boolean(),
  debug_http: Type.Boolean(),
  config_interval: Type.Integer(),
  log_interval: Type.Integer(),
  query_interval: Type.Integer(),
  enroll_path: Type.String(),
  enroll_secret_path: Type.String(),
  remove_secret_path: Type.String(),
  config_path: Type.String(),
  log_path: Type.String(),
  query_read_path: Type.String(),
  query_write_path: Type.String(),
  carver_init_path: Type.String(),
  carver_block_path: Type.String(),
  enroll_expire: Timestamp,
  remove_expire: Timestamp,
  deb_package: Type.String(),
  msi_package: Type.String(),
  pkg_package: Type.String(),
  rpm_package: Type.String(),
  created_at: Timestamp,
  updated_at: Timestamp,
  /**
   * Issue 27 (fleetctl's server only; zero values elsewhere): whether `hostname` and `certificate`
   * were set for this environment (true) or follow the server's agent URL and trust anchor (false),
   * and the seconds between detail refreshes of its nodes (0: the server's --detail-refresh).
   */
  hostname_pinned: Type.Boolean(),
  certificate_pinned: Type.Boolean(),
  detail_refresh: Type.Integer(),
});
export type Environment = Static<typeof Environment>;

/** Intervals and switches both create and edit take (issue 27). */
const EnvironmentSettable = {
  /** The agent host (osquery's --tls_hostname, NAME[:PORT]); '' (edit): follow the server's --agent-url again. */
  hostname: Type.Optional(Type.String()),
  icon: Type.Optional(Type.String()),
  type: Type.Optional(Type.String()),
  accept_enrolls: Type.Optional(Type.Boolean()),
  debug_http: Type.Optional(Type.Boolean()),
  config_interval: Type.Optional(Type.Integer()),
  log_interval: Type.Optional(Type.Integer()),
  query_interval: Type.Optional(Type.Integer()),
  /** Seconds between detail refreshes of its nodes; 0: the server's --detail-refresh. */
  detail_refresh: Type.Optional(Type.Integer()),
};

/** POST /api/v1/environments (issue 27; osctrl's path and fields, and ours). */
export const EnvironmentCreateBody = Type.Object({
  name: Type.String(),
  ...EnvironmentSettable,
  /** Seconds enrollment stays open; 0: until someone closes it; absent: the server's --enroll-window. */
  enroll_window: Type.Optional(Type.Integer()),
});
export type EnvironmentCreateBody = Static<typeof EnvironmentCreateBody>;

/** PATCH /api/v1/environments/{env} (issue 27): only the fields given change. */
export const EnvironmentEditBody = Type.Object({
  name: Type.Optional(Type.String()),
  ...EnvironmentSettable,
});
export type EnvironmentEditBody = Static<typeof EnvironmentEditBody>;

/** api-spec.md 2.2 */
export const EnvironmentMapEntry = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  uuid: Type.String(),
});
export type EnvironmentMapEntry = Static<typeof EnvironmentMapEntry>;

export type MapTarget = (typeof MapTargets)[number];
export const EnvironmentMap = Type.Record(Type.String(), EnvironmentMapEntry);
export type EnvironmentMap = Record<string, EnvironmentMapEntry>;

/** 4.6 body */
export const IntervalsBody = Type.Object({
  config_interval: Type.Optional(Type.Integer()),
  log_interval: Type.Optional(Type.Integer()),
  query_interval: Type.Optional(Type.Integer()),
});
export type IntervalsBody = Static<typeof IntervalsBody>;

/** 4.8 actions (plus the osctrl aliases) and body */
export const EnrollActions = ['extend', 'expire', 'rotate', 'notexpire', 'update'] as const;
export const EnrollActionAliases = ['set_pkg', 'set_msi', 'set_deb', 'set_rpm', 'cert'] as const;
export type EnrollAction = (typeof EnrollActions)[number] | (typeof EnrollActionAliases)[number];
export const EnrollBody = Type.Object({
  certificate: Type.Optional(Type.String()),
  url_deb_pkg: Type.Optional(Type.String()),
  url_mac_pkg: Type.Optional(Type.String()),
  url_msi_pkg: Type.Optional(Type.String()),
  url_rpm_pkg: Type.Optional(Type.String()),
});
export type EnrollBody = Static<typeof EnrollBody>;

export type EnrollTarget = (typeof EnrollTargets)[number];

/** Issue 27: where an environment's enrollment stands; `closing` when its window ends within a day. */
export const EnrollmentStates = ['open', 'closing', 'closed'] as const;
export type EnrollmentState = (typeof EnrollmentStates)[number];
export const ENROLLMENT_CLOSING_MS = 24 * 3600_000;

/** The one rule, for the server (stats) and the CLI (env list/show): "never" is the zero time. */
export function enrollmentStateOf(acceptEnrolls: boolean, enrollExpire: string, now: Date): EnrollmentState {
  if (!acceptEnrolls) return 'closed';
  const t = Date.parse(enrollExpire);
  if (!enrollExpire || enrollExpire.startsWith('0001-01-01') || Number.isNaN(t)) return 'open';
  if (t <= now.getTime()) return 'closed';
  return t - now.getTime() < ENROLLMENT_CLOSING_MS ? 'closing' : 'open';
}
