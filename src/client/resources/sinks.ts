import { Type } from '../../api/type.js';
import type { HttpClient } from '../http.js';
import * as S from '../../api/index.js';
import { needs } from '../validate.js';
import type { LogSink, MessageResponse, SinkCloneBody, SinkCreateBody, SinkEditBody, SinkTestResult } from '../../api/index.js';

const SINK = needs(S.LogSink, 'id', 'name');
const SINKS = Type.Array(SINK);

export const sinksApi = (http: HttpClient) => ({
  /** GET /api/v1/log-sinks?environment_id=N (0 = global), ordered by `order`. */
  list: (environmentId: number) =>
    http.request<LogSink[]>('GET', 'api/v1/log-sinks', { query: { environment_id: environmentId }, schema: SINKS, answerName: 'sinks' }),
  /** 4.18: 409 when the target has sinks and overwrite is false. */
  clone: (body: SinkCloneBody) => http.request<LogSink[]>('POST', 'api/v1/log-sinks/clone', { body, schema: SINKS }),
  create: (body: SinkCreateBody) => http.request<LogSink>('POST', 'api/v1/log-sinks', { body, schema: SINK }),
  delete: (id: number) => http.request<MessageResponse>('DELETE', `api/v1/log-sinks/${id}`, { schema: S.MessageResponse }),
  /** PATCH: the fields given change; `config` replaces the whole config ("<redacted>" keeps a stored secret). */
  edit: (id: number, body: SinkEditBody) => http.request<LogSink>('PATCH', `api/v1/log-sinks/${id}`, { body, schema: SINK }),
  /** One test entry through the sink's destination; what it answered. */
  test: (id: number) => http.request<SinkTestResult>('POST', `api/v1/log-sinks/${id}/test`, { body: {}, schema: S.SinkTestResult }),
});
