// Row types of the database, as Kysely sees them. Booleans are 0/1 integers and timestamps
// RFC 3339 strings, so the same rows work on SQLite and PostgreSQL.
import type { Generated, Insertable, Selectable, Updateable } from 'kysely';

type Bool = number;

export interface EnvironmentsTable {
  id: Generated<number>;
  uuid: string;
  name: string;
  type: string;
  hostname: string;
  icon: string;
  user_id: number;
  secret: string;
  certificate: string;
  flags: string;
  options: string;
  schedule: string;
  packs: string;
  decorators: string;
  atc: string;
  configuration: string;
  accept_enrolls: Bool;
  config_tls: Bool;
  logging_tls: Bool;
  query_tls: Bool;
  carves_tls: Bool;
  debug_http: Bool;
  config_interval: number;
  log_interval: number;
  query_interval: number;
  enroll_path: string;
  enroll_secret_path: string;
  remove_secret_path: string;
  config_path: string;
  log_path: string;
  query_read_path: string;
  query_write_path: string;
  carver_init_path: string;
  carver_block_path: string;
  enroll_expire: string;
  remove_expire: string;
  deb_package: string;
  msi_package: string;
  pkg_package: string;
  rpm_package: string;
  created_at: string;
  updated_at: string;
  /** 015_production: 1 when set for this environment, 0 when it follows the server's agent URL / trust anchor. */
  hostname_pinned: Generated<Bool>;
  certificate_pinned: Generated<Bool>;
  /** Seconds between detail refreshes of its nodes; 0 = the server's --detail-refresh. */
  detail_refresh: Generated<number>;
}

export interface UsersTable {
  id: Generated<number>;
  username: string;
  fullname: string;
  email: string;
  password_hash: string;
  admin: Bool;
  service: Bool;
  api: Bool;
  /** TOTP secret (base32) once confirmed; null when TOTP is off. */
  totp_secret: string | null;
  /** Secret handed out by "begin" and not yet confirmed. */
  totp_pending_secret: string | null;
  /** Highest TOTP time step accepted so far: a code is never accepted twice. */
  totp_last_step: number;
  created_at: string;
  updated_at: string;
  last_login_at: string | null;
}

export interface UserEnvAccessTable {
  user_id: number;
  environment_id: number;
  user_level: Bool;
  query_level: Bool;
  carve_level: Bool;
  admin_level: Bool;
}

/** One row per issued token: revoking a session is deleting its row. */
export interface SessionsTable {
  jti: string;
  user_id: number;
  csrf_token: string;
  created_at: string;
  expires_at: string;
}

export interface RecoveryCodesTable {
  id: Generated<number>;
  user_id: number;
  code_hash: string;
  used_at: string | null;
}

export interface WebauthnCredentialsTable {
  id: string;
  user_id: number;
  name: string;
  created_at: string;
  last_used_at: string | null;
}

export interface MfaChallengesTable {
  id: string;
  user_id: number;
  environment_id: number;
  exp_hours: number;
  created_at: string;
  expires_at: string;
  failures: number;
  used: Bool;
}

export interface NodesTable {
  id: Generated<number>;
  uuid: string;
  node_key: string;
  hostname: string;
  localname: string;
  ip_address: string;
  country_code: string;
  platform: string;
  /** linux | darwin | windows | other, derived from platform at write time (indexed filter). */
  platform_bucket: string;
  platform_version: string;
  osquery_user: string;
  osquery_version: string;
  /** osquery_version with zero-padded parts, so versions sort numerically. */
  osquery_version_key: string;
  cpu: string;
  memory: string;
  hardware_serial: string;
  config_hash: string;
  daemon_hash: string;
  extra_data: string;
  environment_id: number;
  user_id: number;
  username: string;
  uptime_seconds: number;
  config_valid: Bool;
  /** 013_agent_cadence: seconds between the node's distributed reads as far as the server knows (0: unknown, the environment's). */
  distributed_interval: Generated<number>;
  /** 013_agent_cadence: the distributed interval its last configuration told it (a lower one counts from the second telling). */
  distributed_interval_told: Generated<number>;
  /** JSON of api-spec 2.6 system_info. */
  system_info: string;
  created_at: string;
  updated_at: string;
  /** 015_production: when the node last reported its details (enroll or detail refresh); null = never since the upgrade. */
  details_at: Generated<string | null>;
}

export interface TagsTable {
  id: Generated<number>;
  name: string;
  description: string;
  color: string;
  icon: string;
  environment_id: number;
  tag_type: number;
  custom_tag: string;
  auto_tag: Bool;
  cohort: Bool;
  created_by: string;
  created_at: string;
  updated_at: string;
}

export interface NodeTagsTable {
  node_id: number;
  tag_id: number;
}

export interface SettingsTable {
  id: Generated<number>;
  name: string;
  service: string;
  type: string;
  info: string;
  environment_id: number;
  boolean_value: Bool;
  integer_value: number;
  string_value: string;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
}

export interface LogSinksTable {
  id: Generated<number>;
  name: string;
  type: string;
  source: string;
  info: string;
  enabled: Bool;
  environment_id: number;
  sort_order: number;
  /** The sink's JSON configuration text (sent as UTF-8 bytes in the API). */
  config: string;
  bytes_sent: number;
  exports_count: number;
  created_at: string;
  updated_at: string;
}

/** The durable log spool (issue 28, migration 012): one row per log entry, in commit order. */
export interface LogSpoolTable {
  id: Generated<number>;
  environment_id: number;
  node_id: number;
  /** The node's uuid (osquery's host identifier at enroll). */
  host_identifier: string;
  hostname: string;
  /** result, status or query. */
  log_type: string;
  name: string | null;
  /** Status entries: osquery's severity (0 info, 1 warning, 2 error, 3 fatal). */
  severity: number | null;
  /** Seconds since the epoch: the entry's unixTime, else when it was received. */
  time: number;
  received_at: string;
  /** The entry's JSON text as the agent sent it. */
  line: string;
  /** Entries and bytes before this row in its type stream (all environments) and environment stream. */
  tseq: number;
  tpos: number;
  eseq: number;
  epos: number;
}

/** The head of each spool stream; (0, '*') counts every entry and orders the commits. */
export interface LogStreamsTable {
  environment_id: number;
  log_type: string;
  entries: number;
  bytes: number;
  /** The newest spool id: kept on the (0, '*') row only (0 on the others). */
  last_id: number;
}

/** Per sink: its cursor in its stream, the lease of the process delivering it, counters, last error. */
export interface SinkStateTable {
  sink_id: number;
  cursor_id: Generated<number>;
  cursor_seq: Generated<number>;
  cursor_pos: Generated<number>;
  lease_owner: Generated<string>;
  /** Milliseconds since the epoch. */
  lease_until: Generated<number>;
  delivered: Generated<number>;
  failed: Generated<number>;
  dropped: Generated<number>;
  rejected: Generated<number>;
  last_success_at: Generated<string>;
  last_error: Generated<string>;
  last_error_at: Generated<string>;
  retrying_since: Generated<string>;
}

/** Issue 30 (migration 016_logs): a scheduled query's current rows on one node. */
export interface QueryReportsTable {
  environment_id: number;
  name: string;
  node_id: number;
  /** snapshot or differential */
  kind: string;
  epoch: number;
  counter: number;
  /** JSON array of the rows. */
  rows: string;
  row_count: number;
  truncated: number;
  reported_at: string;
}

/** Distributed queries; carves are the rows with type 'carve'. */
export interface QueriesTable {
  id: Generated<number>;
  name: string;
  query: string;
  path: string;
  type: string;
  target: string;
  /** JSON array of {type, value}. */
  targets: string;
  creator: string;
  environment_id: number;
  active: Bool;
  completed: Bool;
  deleted: Bool;
  expired: Bool;
  hidden: Bool;
  protected: Bool;
  errors: number;
  executions: number;
  expected: number;
  expiration: string;
  extra_data: string;
  created_at: string;
  updated_at: string;
}

export interface CarveFilesTable {
  /** 008_carve_sessions: a node may have any number of carve files. */
  id: Generated<number>;
  uuid: string;
  query_id: number;
  carve_id: string;
  session_id: string;
  path: string;
  status: string;
  archived: Bool;
  block_size: number;
  carve_size: number;
  total_blocks: number;
  completed_blocks: number;
  created_at: string;
  completed_at: string;
  /** Hex SHA-256 of the reassembled archive, computed at the first download ('' until then). */
  sha256: Generated<string>;
  /** 012_carve_ids: 'zstd' when the node compressed the archive (--carver_compression), '' for a plain tar. */
  compression: Generated<string>;
  /** 012_carve_ids: '' or why the completed archive holds no file (a directory, no match). */
  note: Generated<string>;
}

/** A live query owed by a node (0004_agents): pending until its answer arrives. */
export interface NodeQueriesTable {
  query_id: number;
  node_id: number;
  status: string;
  /** 012_carve_ids: the ids in the node's answer to a carve query (osquery 4.7+), '' before it. */
  carve_guid: Generated<string>;
  carve_request_id: Generated<string>;
  /** 012_carve_ids: why the node's last carver start for this carve was refused, and when ('' when none). */
  carve_error: Generated<string>;
  carve_error_at: Generated<string>;
}

/** One node's answer (result set) to a live query. */
export interface QueryResultsTable {
  id: Generated<number>;
  query_id: number;
  node_id: number;
  node_uuid: string;
  hostname: string;
  status: number;
  error: string;
  /** JSON array of row objects. */
  rows: string;
  created_at: string;
}

/** One carve block, base64 as the agent sent it. */
export interface CarveBlocksTable {
  session_id: string;
  block_id: number;
  data: string;
}

export interface AuditLogsTable {
  id: Generated<number>;
  created_at: string;
  env_uuid: string;
  environment_id: number;
  line: string;
  log_type: number;
  severity: number;
  service: string;
  source_ip: string;
  username: string;
  /** Events the row stands for: 1, or the denied requests of one address in one minute (0002_trust). */
  count: Generated<number>;
}

/** Server-wide values kept across restarts (the JWT secret). */
export interface ServerMetaTable {
  key: string;
  value: string;
}

/** Addresses a user logged in from (0002_trust): exempt from the per-account login limit. */
export interface LoginAddressesTable {
  user_id: number;
  source_ip: string;
  last_login_at: string;
}

/** Rate-limit counters shared by every replica (005_shared_state): one row per scope and key, its current window. */
export interface RateWindowsTable {
  scope: string;
  key: string;
  /** Start of the current window (the first hit after the previous one ended), ms since the epoch. */
  window_start: number;
  count: number;
}

/** The one audit row of a denial window (005_shared_state), whichever replica saw the first denial. */
export interface DenialWindowsTable {
  source_ip: string;
  username: string;
  window_start: number;
  audit_id: number;
}

/**
 * What every check-in changes, apart from the node (issue 31): one narrow row per node, so the
 * check-in flush rewrites neither the node's wide row nor its two dozen indexes and trigram
 * index. environment_id, platform_bucket, config_valid and osquery_version_key are copies of the
 * node's (kept by triggers), so status, health and platform counts are read from this table's
 * indexes alone.
 */
export interface NodeSeenTable {
  node_id: number;
  environment_id: number;
  platform_bucket: string;
  config_valid: Bool;
  osquery_version_key: string;
  /** '' when the node never checked in (it sorts before every time); read as null (fleet/nodes.ts). */
  last_seen: string;
  bytes_received: number;
  /** When the node last fetched its configuration (issue 22); null: never. */
  config_fetched_at: string | null;
}

export interface DB {
  environments: EnvironmentsTable;
  users: UsersTable;
  user_env_access: UserEnvAccessTable;
  sessions: SessionsTable;
  recovery_codes: RecoveryCodesTable;
  webauthn_credentials: WebauthnCredentialsTable;
  mfa_challenges: MfaChallengesTable;
  nodes: NodesTable;
  node_seen: NodeSeenTable;
  tags: TagsTable;
  node_tags: NodeTagsTable;
  settings: SettingsTable;
  log_sinks: LogSinksTable;
  log_spool: LogSpoolTable;
  log_streams: LogStreamsTable;
  sink_state: SinkStateTable;
  query_reports: QueryReportsTable;
  queries: QueriesTable;
  carve_files: CarveFilesTable;
  audit_logs: AuditLogsTable;
  node_queries: NodeQueriesTable;
  query_results: QueryResultsTable;
  carve_blocks: CarveBlocksTable;
  server_meta: ServerMetaTable;
  login_addresses: LoginAddressesTable;
  rate_windows: RateWindowsTable;
  denial_windows: DenialWindowsTable;
}

export type EnvironmentRow = Selectable<EnvironmentsTable>;
export type UserRow = Selectable<UsersTable>;
/** A node with what its check-ins keep in node_seen (services read both: fleet/node-columns.ts). */
export type NodeRow = Selectable<NodesTable> &
  Pick<Selectable<NodeSeenTable>, 'bytes_received' | 'config_fetched_at'> & { last_seen: string | null };
export type NewNode = Insertable<NodesTable>;
export type TagRow = Selectable<TagsTable>;
export type SettingRow = Selectable<SettingsTable>;
export type LogSinkRow = Selectable<LogSinksTable>;
export type LogSpoolRow = Selectable<LogSpoolTable>;
export type SinkStateRow = Selectable<SinkStateTable>;
export type LogStreamRow = Selectable<LogStreamsTable>;
export type QueryRow = Selectable<QueriesTable>;
export type CarveFileRow = Selectable<CarveFilesTable>;
export type AuditLogRow = Selectable<AuditLogsTable>;
export type NewAuditLog = Insertable<AuditLogsTable>;
export type UserUpdate = Updateable<UsersTable>;
