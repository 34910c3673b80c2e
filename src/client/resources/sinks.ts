import type { HttpClient } from '../http.js';
import type { LogSink, MessageResponse, SinkCloneBody, SinkCreateBody } from '../../api/index.js';

export const sinksApi = (http: HttpClient) => ({
  /** GET /api/v1/log-sinks?environment_id=N (0 = global), ordered by `order`. */
  list: (environmentId: number) => http.request<LogSink[]>('GET', 'api/v1/log-sinks', { query: { environment_id: environmentId } }),
  /** 4.18: 409 when the target has sinks and overwrite is false. */
  clone: (body: SinkCloneBody) => http.request<LogSink[]>('POST', 'api/v1/log-sinks/clone', { body }),
  create: (body: SinkCreateBody) => http.request<LogSink>('POST', 'api/v1/log-sinks', { body }),
  delete: (id: number) => http.request<MessageResponse>('DELETE', `api/v1/log-sinks/${id}`),
});
