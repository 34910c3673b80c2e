// An environment's osquery configuration (issue 22; docs/api.md "osquery configuration").
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { callerOf, envOf, type App } from './request.js';
import type { Deps } from '../context.js';
import { AgentConfigView, OsqueryConfigPatch, OsqueryConfigQuery, OsqueryConfigView } from '../../api/index.js';
import { RULES } from '../permissions.js';
import { badRequest } from '../errors.js';
import { agentConfigView, patchConfig, readConfig, replacePart, type PatchOptions } from '../services/environments/osquery-config.js';

const EnvParam = Type.Object({ env: Type.String() });
const PartParams = Type.Object({ env: Type.String(), part: Type.String() });

function options(req: FastifyRequest): PatchOptions {
  const dry = (req.query as { dry_run?: string }).dry_run;
  if (dry !== undefined && !['true', 'false', '1', '0', ''].includes(dry))
    throw badRequest(`invalid dry_run "${dry}"; valid values: true, false`);
  // If-Match carries the hash the client read, quoted as an entity tag or bare.
  const ifMatch = req.headers['if-match'];
  const tag = typeof ifMatch === 'string' && ifMatch !== '*' ? ifMatch.trim().replace(/^W\//, '').replace(/^"|"$/g, '') : undefined;
  return { dryRun: dry === 'true' || dry === '1' || dry === '', ifMatch: tag || undefined, duplicateKey: req.duplicateKey };
}

/** A read answers its hash as the entity tag too: what If-Match takes back on a write. */
function tagged<T extends { hash: string }>(reply: FastifyReply, view: T): T {
  void reply.header('etag', `"${view.hash}"`);
  return view;
}

export function osqueryConfigRoutes(app: App, deps: Deps): void {
  const rule = { rule: RULES.osqueryConfig };
  app.get(
    '/api/v1/environments/:env/config',
    { config: rule, schema: { params: EnvParam, response: { 200: OsqueryConfigView } } },
    async (req, reply) => tagged(reply, readConfig(envOf(req))),
  );
  app.get(
    '/api/v1/environments/:env/config/:part',
    { config: rule, schema: { params: PartParams, response: { 200: OsqueryConfigView } } },
    async (req, reply) => tagged(reply, readConfig(envOf(req), req.params.part)),
  );
  app.patch(
    '/api/v1/environments/:env/config',
    {
      config: { ...rule, uniqueKeys: true },
      schema: { params: EnvParam, querystring: OsqueryConfigQuery, body: OsqueryConfigPatch, response: { 200: OsqueryConfigView } },
    },
    async (req) => patchConfig(deps, callerOf(req), envOf(req), req.body as Record<string, unknown>, options(req), req.ip),
  );
  app.put(
    '/api/v1/environments/:env/config/:part',
    {
      config: { ...rule, uniqueKeys: true },
      schema: { params: PartParams, querystring: OsqueryConfigQuery, response: { 200: OsqueryConfigView } },
    },
    async (req) => replacePart(deps, callerOf(req), envOf(req), req.params.part, req.body, options(req), req.ip),
  );
  app.get(
    '/api/v1/environments/:env/agent-config',
    { config: rule, schema: { params: EnvParam, response: { 200: AgentConfigView } } },
    async (req, reply) => tagged(reply, agentConfigView(envOf(req))),
  );
}
