import type { Static } from '@sinclair/typebox';
import { Type } from './type.js';
import { Timestamp } from './common.js';
import { Tag } from './tag.js';
import { LogLine } from './logs.js';
import { Platforms, NodeStatuses, SortOrders, NodeSorts, HealthStatuses, RiskLevels } from './constants.js';
export { Platforms, NodeStatuses, SortOrders, NodeSorts, HealthStatuses, RiskLevels };

const Str = Type.String();
const strings = <K extends string>(keys: readonly K[]) =>
  Type.Object(Object.fromEntries(keys.map((k) => [k, Str])) as Record<K, typeof Str>);

export const SystemInfo = Type.Object({
  bios: strings(['address', 'date', 'revision', 'size', 'vendor', 'version', 'volume_size'] as const),
  os: strings(['codename', 'major', 'minor', 'name', 'patch', 'platform', 'platform_like', 'version'] as const),
  osquery: strings(['build_distro', 'build_platform', 'config_valid', 'extensions', 'start_time', 'version'] as const),
  system: strings([
    'computer_name',
    'cpu_brand',
    'cpu_logical_cores',
    'cpu_physical_cores',
    'cpu_subtype',
    'cpu_type',
    'hardware_model',
    'hardware_serial',
    'hardware_vendor',
    'hardware_version',
    'local_hostname',
    'physical_memory',
  ] as const),
});
export type SystemInfo = Static<typeof SystemInfo>;

export const Health = Type.Object({
  status: Type.String(),
  reason: Type.String(),
  signals: Type.Array(Type.String()),
});
export type Health = Static<typeof Health>;

export const Uptime = Type.Object({
  days: Type.Integer(),
  hours: Type.Integer(),
  minutes: Type.Integer(),
  seconds: Type.Integer(),
  total_seconds: Type.Integer(),
  last_seen: Timestamp,
});
export type Uptime = Static<typeof Uptime>;

/** api-spec.md 2.6. `node_key` is admin-only: absent from list items, present in a read by env admins. */
export const Node = Type.Object({
  id: Type.Integer(),
  uuid: Type.String(),
  node_key: Type.Optional(Type.String()),
  hostname: Type.String(),
  localname: Type.String(),
  ip_address: Type.String(),
  country_code: Type.String(),
  platform: Type.String(),
  platform_version: Type.String(),
  osquery_user: Type.String(),
  osquery_version: Type.String(),
  cpu: Type.String(),
  memory: Type.String(),
  hardware_serial: Type.String(),
  config_hash: Type.String(),
  /** Issue 22: when the node last fetched the configuration whose hash is config_hash ("never": 0001-01-01). */
  config_fetched_at: Type.Optional(Timestamp),
  daemon_hash: Type.String(),
  extra_data: Type.String(),
  bytes_received: Type.Integer(),
  environment: Type.String(),
  environment_id: Type.Integer(),
  user_id: Type.Integer(),
  username: Type.String(),
  last_seen: Timestamp,
  created_at: Timestamp,
  updated_at: Timestamp,
  health: Health,
  posture: Type.Object({ risk_level: Type.String() }),
  tags: Type.Array(Tag),
  uptime: Uptime,
  system_info: SystemInfo,
  /**
   * Issue 30, the single-node read only: the node's last status lines of severity warning or
   * above (osquery's own complaints), newest first, as `GET /api/v1/logs/{env}` returns them.
   */
  status_problems: Type.Optional(Type.Array(LogLine)),
});
export type Node = Static<typeof Node>;

export type NodeStatus = (typeof NodeStatuses)[number];
export type Platform = (typeof Platforms)[number];
export type NodeSort = (typeof NodeSorts)[number];
export type SortOrder = (typeof SortOrders)[number];

export const NodesQuery = Type.Object({
  page: Type.Optional(Type.String()),
  page_size: Type.Optional(Type.String()),
  q: Type.Optional(Type.String()),
  tag: Type.Optional(Type.String()),
  /** Issue 22: `stale` (not on the environment's current configuration) or `current`. */
  config: Type.Optional(Type.String()),
  /** Issue 20: derived health.status (healthy|degraded|unhealthy|unknown) and posture.risk_level (low|medium|high|unknown). */
  health: Type.Optional(Type.String()),
  risk: Type.Optional(Type.String()),
  status: Type.Optional(Type.String()),
  platform: Type.Optional(Type.String()),
  sort: Type.Optional(Type.String()),
  order: Type.Optional(Type.String()),
  dir: Type.Optional(Type.String()),
});
export type NodesQuery = Static<typeof NodesQuery>;

export const NodeDeleteBody = Type.Object({ uuid: Type.String() });
export type NodeDeleteBody = Static<typeof NodeDeleteBody>;
