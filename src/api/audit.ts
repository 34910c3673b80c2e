import { Type, type Static } from '@sinclair/typebox';

/** api-spec.md 2.9 */
export const AuditLogEntry = Type.Object({
  id: Type.Integer(),
  created_at: Type.String(),
  env_uuid: Type.String(),
  environment_id: Type.Integer(),
  line: Type.String(),
  log_type: Type.Integer(),
  severity: Type.Integer(),
  service: Type.String(),
  source_ip: Type.String(),
  username: Type.String(),
});
export type AuditLogEntry = Static<typeof AuditLogEntry>;

/** contract.md 4.19 */
export const LogTypes = {
  login: 1, logout: 2, node: 3, query: 4, carve: 5, tag: 6, environment: 7, setting: 8, visit: 9, user: 10,
} as const;
export type LogType = (typeof LogTypes)[keyof typeof LogTypes];
export const Severities = { info: 1, warning: 2, error: 3 } as const;
export type Severity = (typeof Severities)[keyof typeof Severities];

export const AuditQuery = Type.Object({
  page: Type.Optional(Type.String()),
  page_size: Type.Optional(Type.String()),
  q: Type.Optional(Type.String()),
  service: Type.Optional(Type.String()),
  username: Type.Optional(Type.String()),
  env: Type.Optional(Type.String()),
});
export type AuditQuery = Static<typeof AuditQuery>;
