// An environment's osquery configuration (issue 22; docs/api.md "osquery configuration").
import type { HttpClient } from '../http.js';
import * as S from '../../api/index.js';
import type { AgentConfigView, ConfigPart, OsqueryConfigParts, OsqueryConfigView } from '../../api/index.js';

const seg = encodeURIComponent;

export interface WriteOptions {
  /** Validate and answer what would be stored, storing nothing. */
  dryRun?: boolean;
  /** The hash read before: the server refuses (409) when the configuration moved since. */
  ifMatch?: string;
}

const writeOpts = (o: WriteOptions) => ({
  query: o.dryRun ? { dry_run: 'true' } : undefined,
  headers: o.ifMatch ? { 'if-match': `"${o.ifMatch}"` } : undefined,
});

const patch = (http: HttpClient, env: string, parts: Partial<OsqueryConfigParts>, o: WriteOptions) =>
  http.request<OsqueryConfigView>('PATCH', `api/v1/environments/${seg(env)}/config`, {
    body: parts,
    schema: S.OsqueryConfigView,
    ...writeOpts(o),
  });

export const osqueryConfigApi = (http: HttpClient) => ({
  /** The whole configuration, or one part, with the hash agents get. */
  get: (env: string, part?: ConfigPart) =>
    http.request<OsqueryConfigView>('GET', `api/v1/environments/${seg(env)}/config${part ? `/${seg(part)}` : ''}`, {
      schema: S.OsqueryConfigView,
    }),
  /** Replaces one part whole. */
  put: <P extends ConfigPart>(env: string, part: P, value: OsqueryConfigParts[P], o: WriteOptions = {}) =>
    http.request<OsqueryConfigView>('PUT', `api/v1/environments/${seg(env)}/config/${seg(part)}`, {
      body: value,
      schema: S.OsqueryConfigView,
      ...writeOpts(o),
    }),
  /** Replaces each part given, in one change. */
  patch: (env: string, parts: Partial<OsqueryConfigParts>, o: WriteOptions = {}) => patch(http, env, parts, o),
  /**
   * The server's own check of a change, storing nothing (apply asks it for every environment
   * before it writes any): the hash the configuration would have.
   */
  check: async (env: string, parts: Partial<OsqueryConfigParts>, o: Omit<WriteOptions, 'dryRun'> = {}) =>
    (await patch(http, env, parts, { ...o, dryRun: true })).hash,
  /** What an agent of the environment receives, and its hash. */
  agent: (env: string) =>
    http.request<AgentConfigView>('GET', `api/v1/environments/${seg(env)}/agent-config`, { schema: S.AgentConfigView }),
});
