// The API's plain constants (enums, limits), apart from the TypeBox schemas: the CLI's command
// tree needs them to declare choices, and importing them must not load TypeBox at start-up.

export const Severities = { info: 1, warning: 2, error: 3 } as const;
/** contract.md 4.19 */
export const LogTypes = {
  login: 1,
  logout: 2,
  node: 3,
  query: 4,
  carve: 5,
  tag: 6,
  environment: 7,
  setting: 8,
  visit: 9,
  user: 10,
} as const;
export const PASSWORD_MIN_LENGTH = 8;
export const MfaMethods = ['totp', 'recovery'] as const;
/** Values of the carves list `status` filter: the carve_status values, lower-case. */
export const CarveListStatuses = ['active', 'pending', 'completed', 'expired', 'deleted'] as const;
export const PAGE_SIZE_MAX = 500;
export const MapTargets = ['id', 'name', 'uuid'] as const;
/** 4.9 targets */
export const EnrollTargets = [
  'secret',
  'cert',
  'flags',
  'flagsLinux',
  'flagsMac',
  'flagsWindows',
  'flagsFreeBSD',
  'enroll.sh',
  'enroll.ps1',
  'remove.sh',
  'remove.ps1',
] as const;
export const Platforms = ['linux', 'darwin', 'windows', 'other'] as const;
/** 4.11 query values (contract.md 4.11) */
export const NodeStatuses = ['all', 'active', 'inactive'] as const;
/** Derived node health and posture (docs/api.md, Nodes), also list filters (`?health=`, `?risk=`). */
export const HealthStatuses = ['healthy', 'degraded', 'unhealthy', 'unknown'] as const;
export const RiskLevels = ['low', 'medium', 'high', 'unknown'] as const;
export const SortOrders = ['asc', 'desc'] as const;
export const NodeSorts = ['hostname', 'localname', 'uuid', 'ip', 'platform', 'version', 'osquery', 'lastseen', 'firstseen'] as const;
export const SettingServices = ['tls', 'admin', 'api'] as const;
export const SinkTypes = [
  'file',
  'stdout',
  'syslog',
  'http',
  'kafka',
  'kinesis',
  'firehose',
  's3',
  'splunk',
  'elastic',
  'graylog',
  'logstash',
] as const;
export const SinkSources = ['status', 'result', 'query'] as const;
/** Tag types (contract.md 4.10) */
export const TagTypes = { env: 0, platform: 2, custom: 4, unknown: 5, tag: 6 } as const;
export const AccessLevels = ['user', 'query', 'carve', 'admin'] as const;
/** Values of the query list `status` filter. */
export const QueryListStatuses = ['active', 'completed', 'expired', 'deleted'] as const;
/** Issue 30: the kinds of log line `GET /api/v1/logs/{env}?type=` filters on. */
export const LogLineTypes = ['result', 'status'] as const;
/**
 * Issue 30: osquery's status severities (its glog levels: 0 info, 1 warning, 2 error, 3 fatal), as
 * the `severity` filter names them; a filter keeps lines of that severity and above.
 */
export const StatusSeverities = ['info', 'warning', 'error', 'fatal'] as const;
export const LogOrders = ['desc', 'asc'] as const;
/** Issue 30: lines per page of `GET /api/v1/logs/{env}` (default, maximum), and the longest follow wait (s). */
export const LOG_PAGE_DEFAULT = 100;
export const LOG_PAGE_MAX = 1000;
export const LOG_WAIT_MAX_SECONDS = 60;
/** Issue 30: nodes per page of a query report (default, maximum). */
export const REPORT_PAGE_DEFAULT = 100;
export const REPORT_PAGE_MAX = 1000;
