import { Type, type Static } from '@sinclair/typebox';
import { SinkTypes, SinkSources } from './constants.js';
export { SinkTypes, SinkSources };

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
