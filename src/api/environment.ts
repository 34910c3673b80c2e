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
});
export type Environment = Static<typeof Environment>;

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
