// Live queries (issue 13) and the carve start/archive endpoints; rules in services/live-queries.ts.
// Paths follow osctrl-api: /api/v1/queries/{env}..., POST /api/v1/carves/{env}, .../archive/{name}.
import { Type } from '@sinclair/typebox';
import { callerOf, envOf, type App } from './request.js';
import type { Deps } from '../context.js';
import { RULES } from '../permissions.js';
import contentDisposition from 'content-disposition';
import { carveArchive } from '../services/agents/carve-download.js';
import {
  liveQueryAction,
  liveQueryResults,
  listLiveQueries,
  readLiveQuery,
  startLiveQuery,
  type LiveQueryRequest,
} from '../services/agents/live-queries.js';
import { targetCadence } from '../services/agents/target-cadence.js';
import { CarveTargets } from '../../api/index.js';

const Env = Type.Object({ env: Type.String() });
const EnvName = Type.Object({ env: Type.String(), name: Type.String() });
const Body = Type.Object({}, { additionalProperties: true });

export function queriesRoutes(app: App, deps: Deps): void {
  app.post('/api/v1/queries/:env', { config: { rule: RULES.queryRun }, schema: { params: Env, body: Body } }, async (req) =>
    startLiveQuery(deps, callerOf(req), envOf(req), req.body as LiveQueryRequest, 'query', req.ip),
  );
  app.get(
    '/api/v1/queries/:env',
    {
      config: { rule: RULES.queryRun },
      schema: {
        params: Env,
        querystring: Type.Object({
          status: Type.Optional(Type.String()),
          page: Type.Optional(Type.String()),
          page_size: Type.Optional(Type.String()),
        }),
      },
    },
    async (req) => listLiveQueries(deps, envOf(req), req.query),
  );
  app.get('/api/v1/queries/:env/:name', { config: { rule: RULES.queryRun }, schema: { params: EnvName } }, async (req) =>
    readLiveQuery(deps, envOf(req), req.params.name),
  );
  app.get(
    '/api/v1/queries/:env/results/:name',
    {
      config: { rule: RULES.queryRun },
      schema: {
        params: EnvName,
        querystring: Type.Object({
          page: Type.Optional(Type.String()),
          page_size: Type.Optional(Type.String()),
          after_id: Type.Optional(Type.String()),
          since: Type.Optional(Type.String()),
        }),
      },
    },
    async (req) => liveQueryResults(deps, envOf(req), req.params.name, req.query),
  );
  app.post(
    '/api/v1/queries/:env/:action/:name',
    {
      config: { rule: RULES.queryRun },
      schema: { params: Type.Object({ env: Type.String(), action: Type.String(), name: Type.String() }) },
    },
    async (req) => ({ message: await liveQueryAction(deps, callerOf(req), envOf(req), req.params.action, req.params.name, req.ip) }),
  );

  // Issue 26: the targets' cadence, for carves run's default wait (nothing is started or stored).
  app.post(
    '/api/v1/carves/:env/targets',
    { config: { rule: RULES.carveAction }, schema: { params: Env, body: Body, response: { 200: CarveTargets } } },
    async (req) => targetCadence(deps, envOf(req), req.body as LiveQueryRequest),
  );
  app.post('/api/v1/carves/:env', { config: { rule: RULES.carveAction }, schema: { params: Env, body: Body } }, async (req, reply) => {
    reply.code(201);
    return startLiveQuery(deps, callerOf(req), envOf(req), req.body, 'carve', req.ip);
  });
  app.get(
    '/api/v1/carves/:env/archive/:name',
    { config: { rule: RULES.carveRead }, schema: { params: EnvName, querystring: Type.Object({ session: Type.Optional(Type.String()) }) } },
    async (req, reply) => {
      const a = await carveArchive(deps, callerOf(req), envOf(req), req.params.name, req.query.session, req.ip);
      return (
        reply
          .header('content-type', 'application/octet-stream')
          // RFC 6266: an ASCII fallback name plus filename* (RFC 5987, UTF-8) for any path, control
          // and bidi characters included, so no path can break the header (it was a 500).
          .header('content-disposition', contentDisposition(a.filename, { type: 'attachment', fallback: asciiFallback(a.filename) }))
          .header('content-length', String(a.size))
          .header('x-carve-size', String(a.size))
          .header('x-carve-blocks', String(a.blocks))
          .header('x-carve-sha256', a.sha256)
          .send(a.stream)
      );
    },
  );
}

/** The file name in printable ASCII, without quotes or backslashes ('_' for anything else). */
function asciiFallback(name: string): string {
  return name.replace(/[^\x20-\x7e]|["\\%]/g, '_');
}
