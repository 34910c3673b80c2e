import type { Static } from '@sinclair/typebox';
import { Type } from './type.js';
import { Severities, LogTypes } from './constants.js';
export { Severities, LogTypes };

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

export type LogType = (typeof LogTypes)[keyof typeof LogTypes];
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
