// The agent door (issue 13): osquery's remote TLS API on its own listener. Bodies and answers
// follow osquery's documentation of its tls plugins; the URL layout follows osctrl's cmd/tls:
// POST /{env uuid or name}/{the environment's stored path}. Calls the same services and store
// as the admin API; never imports the admin routes.
//
// What each answer tells osquery (issue 18, docs/api.md "Failure semantics"):
// - 200 {"node_invalid": true} only when the server does not know the node key (unknown,
//   deleted, another environment's), or refuses an enroll: osquery then drops its key and enrolls.
// - 5xx for the server's own trouble (database down or full: 503 with Retry-After; anything
//   else 500), logged and counted: osquery keeps its key and its buffered logs and retries.
// - 4xx for a request the agent got wrong (not JSON, too large, unknown path): never node_invalid,
//   so a hostile or broken request cannot make the server look like it forgot the node.
//
// The parts: admission.ts (in-flight bound, drain, endpoint resolution, request log), body.ts
// (bytes, gzip, JSON), dispatch.ts (what each endpoint does), scripts.ts (the one-liners),
// errors.ts (what each error tells osquery), limits.ts (the bounds).
import Fastify, { type FastifyError, type FastifyInstance } from 'fastify';
import type { Deps } from '../context.js';
import { HttpError } from '../errors.js';
import { SpoolBusy } from '../services/delivery/spool.js';
import { installAdmission, refusalPause } from './admission.js';
import { readBodiesAsBytes } from './body.js';
import { makeDispatcher } from './dispatch.js';
import { answerForError } from './errors.js';
import { CARVE_BLOCK_BODY_LIMIT } from './limits.js';
import { registerScriptRoute } from './scripts.js';
import type { AgentDoorOptions, AgentServices } from './types.js';

export type { AgentDoorOptions, AgentServices } from './types.js';

export async function buildAgentApp(deps: Deps, services: AgentServices, o: AgentDoorOptions): Promise<FastifyInstance> {
  const { lifecycle } = o;
  const app = Fastify({
    logger: false,
    https: { ...o.https, ...lifecycle.serverOptions() },
    requestTimeout: lifecycle.timeouts.requestMs,
    keepAliveTimeout: lifecycle.timeouts.agentKeepAliveMs,
    forceCloseConnections: false,
    bodyLimit: CARVE_BLOCK_BODY_LIMIT,
    return503OnClosing: false,
    clientErrorHandler: lifecycle.clientError,
  });
  lifecycle.attach(app.server);
  const dispatcher = makeDispatcher(deps, services, o);
  app.addHook('onClose', async () => dispatcher.close());

  installAdmission(app, services, o);
  readBodiesAsBytes(app);
  app.setErrorHandler((err: FastifyError | HttpError, req, reply) => {
    const a = answerForError(deps, err, req);
    if (a.headers) void reply.headers(a.headers);
    return reply.status(a.status).send(a.body);
  });
  app.setNotFoundHandler((req, reply) =>
    reply.status(404).send({ code: 'not_found', error: `no agent endpoint ${req.method} ${req.url.split('?')[0]}` }),
  );

  registerScriptRoute(app, deps);
  app.post('/:env/*', async (req, reply) => {
    try {
      return await dispatcher.answer(req, reply);
    } catch (e) {
      // A log batch refused for room (the spool busy, the big-body slots) is answered after a
      // pause that holds no in-flight slot: a flooding agent is paced to a batch a second per
      // connection; osquery, which resends at its next period, never notices.
      if (e instanceof SpoolBusy || (e instanceof HttpError && e.extra.bigBody)) {
        req.agentRelease?.();
        await refusalPause();
      }
      throw e;
    }
  });
  return app;
}
