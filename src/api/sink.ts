import type { Static } from '@sinclair/typebox';
import { Type } from './type.js';
import { SinkTypes, SinkSources } from './constants.js';
export { SinkTypes, SinkSources };

/**
 * Config keys that hold secrets in every sink type (issue 28), wherever they sit (`sasl.password`
 * too); the http type's header values are secrets as well. Never returned by a read, never to
 * be typed on a command line: each may be given as `<key>_env` or `<key>_file` instead.
 */
export const SinkSecretKeys = ['password', 'token', 'api_key', 'secret_access_key'] as const;

/** What a read shows in place of a secret's value; sent back by an edit, it keeps the stored one. */
export const REDACTED_SECRET = '<redacted>';

/**
 * Where a sink stands in the log spool (issue 28): its backlog, counters and last error. Times
 * are RFC 3339, '' for never. Added to the spec's 2.4 object by this server.
 */
export const SinkState = Type.Object({
  /** Whether this server has a module for the sink's type (else it is refused when enabled). */
  supported: Type.Boolean(),
  /** A server process holds its lease and delivers it now. */
  delivering: Type.Boolean(),
  /** Which one: host:pid:random ('' when none). */
  delivered_by: Type.String(),
  backlog_entries: Type.Integer(),
  backlog_bytes: Type.Integer(),
  oldest_undelivered_at: Type.String(),
  delivered: Type.Integer(),
  dropped: Type.Integer(),
  rejected: Type.Integer(),
  failed: Type.Integer(),
  last_success_at: Type.String(),
  last_error: Type.String(),
  last_error_at: Type.String(),
  retrying_since: Type.String(),
});
export type SinkState = Static<typeof SinkState>;

/** api-spec.md 2.4 */
export const LogSink = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  type: Type.String(),
  source: Type.String(),
  info: Type.String(),
  enabled: Type.Boolean(),
  environment_id: Type.Integer(),
  order: Type.Integer(),
  config: Type.Array(Type.Integer()),
  bytes_sent: Type.Integer(),
  exports_count: Type.Integer(),
  created_at: Type.String(),
  updated_at: Type.String(),
  /** This server's addition (issue 28): secrets in `config` are shown as "<redacted>". */
  state: Type.Optional(SinkState),
});
export type LogSink = Static<typeof LogSink>;

/** 4.18 body */
export const SinkCloneBody = Type.Object({
  source_environment_id: Type.Integer(),
  target_environment_id: Type.Integer(),
  overwrite: Type.Optional(Type.Boolean()),
});
export type SinkCloneBody = Static<typeof SinkCloneBody>;

/** POST /api/v1/log-sinks body: `config` as a JSON object or the byte array. */
export const SinkCreateBody = Type.Object({
  name: Type.String(),
  type: Type.String(),
  source: Type.String(),
  info: Type.Optional(Type.String()),
  enabled: Type.Optional(Type.Boolean()),
  environment_id: Type.Integer(),
  order: Type.Optional(Type.Integer()),
  config: Type.Optional(Type.Union([Type.Array(Type.Integer()), Type.Record(Type.String(), Type.Unknown())])),
});
export type SinkCreateBody = Static<typeof SinkCreateBody>;

/** GET /api/v1/log-sinks query: without environment_id, every sink (global and per env). */
export const SinksListQuery = Type.Object({ environment_id: Type.Optional(Type.String()) });
export type SinksListQuery = Static<typeof SinksListQuery>;

/** PATCH /api/v1/log-sinks/{id}: the fields to change; `config` replaces the whole config ("<redacted>" keeps a stored secret). */
export const SinkEditBody = Type.Object({
  name: Type.Optional(Type.String()),
  info: Type.Optional(Type.String()),
  enabled: Type.Optional(Type.Boolean()),
  order: Type.Optional(Type.Integer()),
  source: Type.Optional(Type.String()),
  config: Type.Optional(Type.Union([Type.Array(Type.Integer()), Type.Record(Type.String(), Type.Unknown())])),
});
export type SinkEditBody = Static<typeof SinkEditBody>;

/** POST /api/v1/log-sinks/{id}/test: what the destination answered to one test entry. */
export const SinkTestResult = Type.Object({
  ok: Type.Boolean(),
  answer: Type.String(),
  ms: Type.Integer(),
});
export type SinkTestResult = Static<typeof SinkTestResult>;
