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
import Fastify, { type FastifyError, type FastifyInstance, type FastifyRequest } from 'fastify';
import { gunzipSync } from 'node:zlib';
import { timingSafeEqual } from 'node:crypto';
import type { Deps } from '../context.js';
import { HttpError } from '../errors.js';
import type { EnvironmentRow, NodeRow } from '../store/schema.js';
import type { CheckinBatcher } from '../services/checkins.js';
import type { LogDelivery } from '../services/log-delivery.js';
import { enrollNode, enrollRefusal, nodeByKey } from '../services/agent-nodes.js';
import { agentConfig } from '../services/osquery-config.js';
import { carveBlock, carveStart, pendingQueriesFor, recordAnswers } from '../services/live-queries.js';
import { enrollRead } from '../services/enroll.js';
import { NEVER } from '../../api/index.js';

/** On the wire (osquery sends small bodies; logs are batched by --logger_tls_period). */
export const AGENT_BODY_LIMIT = 1024 * 1024;
/** After gunzip: bounds what a small gzip body may inflate to. */
export const AGENT_INFLATED_LIMIT = 16 * 1024 * 1024;

export interface AgentServices {
  checkins: CheckinBatcher;
  logs: LogDelivery;
}

const INVALID = { node_invalid: true };
const OK = { node_invalid: false };

/** A request the agent got wrong: 4xx with `{code, error}`, never node_invalid. */
const agentError = (status: number, message: string) => new HttpError(status, status === 404 ? 'not_found' : 'bad_request', message);

/** Seconds a 503 asks the agent to wait (osquery retries at its own interval anyway). */
const RETRY_AFTER_SECONDS = 5;

type Endpoint = 'enroll' | 'config' | 'log' | 'read' | 'write' | 'carve_init' | 'carve_block';

function endpointOf(env: EnvironmentRow, path: string): Endpoint | undefined {
  const clean = (p: string) => p.replace(/^\/+|\/+$/g, '');
  const rest = clean(path);
  const table: [string, Endpoint][] = [
    [env.enroll_path, 'enroll'],
    [env.config_path, 'config'],
    [env.log_path, 'log'],
    [env.query_read_path, 'read'],
    [env.query_write_path, 'write'],
    [env.carver_init_path, 'carve_init'],
    [env.carver_block_path, 'carve_block'],
  ];
  return table.find(([p]) => clean(p) === rest)?.[1];
}

async function findEnv(deps: Deps, ref: string): Promise<EnvironmentRow | undefined> {
  const byUuid = await deps.db.selectFrom('environments').selectAll().where('uuid', '=', ref.toLowerCase()).executeTakeFirst();
  return byUuid ?? (await deps.db.selectFrom('environments').selectAll().where('name', '=', ref).executeTakeFirst());
}

/** The JSON object of the body (gunzipped when sent so); a 4xx HttpError for anything else. */
function bodyOf(req: FastifyRequest): Record<string, unknown> {
  let raw = req.body as Buffer | undefined;
  if (!Buffer.isBuffer(raw)) throw agentError(400, 'the body must be a JSON object');
  const enc = String(req.headers['content-encoding'] ?? '').toLowerCase();
  if (enc === 'gzip') {
    try {
      raw = gunzipSync(raw, { maxOutputLength: AGENT_INFLATED_LIMIT });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') throw agentError(413, `the body inflates to more than ${AGENT_INFLATED_LIMIT} bytes`);
      throw agentError(400, 'the body is not valid gzip');
    }
  } else if (enc !== '' && enc !== 'identity') {
    throw agentError(415, `unsupported Content-Encoding "${enc}" (gzip or none)`);
  }
  let v: unknown;
  try {
    v = JSON.parse(raw.toString('utf8'));
  } catch {
    throw agentError(400, 'the body is not valid JSON');
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw agentError(400, 'the body must be a JSON object');
  return v as Record<string, unknown>;
}

const sameText = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

const obj = (v: unknown): Record<string, unknown> => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {});

export async function buildAgentApp(deps: Deps, services: AgentServices, https: { cert: Buffer; key: Buffer }): Promise<FastifyInstance> {
  const app = Fastify({ logger: false, https, bodyLimit: AGENT_BODY_LIMIT, return503OnClosing: false });
  // Every body is taken as bytes: osquery's content type varies, and gzip is decoded here.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
  app.setErrorHandler((err: FastifyError | HttpError, req, reply) => {
    const a = answerForError(deps, err, req);
    if (a.headers) void reply.headers(a.headers);
    return reply.status(a.status).send(a.body);
  });
  app.setNotFoundHandler((req, reply) => reply.status(404).send({ code: 'not_found', error: `no agent endpoint ${req.method} ${req.url.split('?')[0]}` }));

  // osctrl's one-liners: GET /{env}/{enroll_secret_path}/enroll.sh (or .ps1) and
  // /{env}/{remove_secret_path}/remove.sh, each while its secret path has not expired
  // (the same expiry the scripts print). Anything else is a plain 404.
  app.get<{ Params: { env: string; secret: string; script: string } }>('/:env/:secret/:script', async (req, reply) => {
    const env = await findEnv(deps, req.params.env);
    const { secret, script } = req.params;
    const kind = /^(enroll|remove)\.(sh|ps1)$/.exec(script)?.[1];
    const path = kind === 'enroll' ? env?.enroll_secret_path : env?.remove_secret_path;
    const expire = kind === 'enroll' ? env?.enroll_expire : env?.remove_expire;
    const expired = !!expire && expire !== NEVER && new Date(expire) <= deps.now();
    if (!env || !kind || !path || !sameText(secret, path) || expired) return reply.status(404).type('text/plain').send('not found\n');
    return reply.type('text/plain; charset=utf-8').send(await enrollRead(deps, env, script));
  });

  app.post<{ Params: { env: string; '*': string } }>('/:env/*', async (req) => {
    const env = await findEnv(deps, req.params.env);
    const ep = env && endpointOf(env, req.params['*']);
    if (!env || !ep) throw agentError(404, 'no such environment or agent endpoint');
    (req as FastifyRequest & { agentEndpoint?: string }).agentEndpoint = ep;
    const body = bodyOf(req);
    const wire = Number(req.headers['content-length'] ?? (req.body as Buffer).length) || 0;

    if (ep === 'enroll') {
      const refusal = enrollRefusal(env, body.enroll_secret, deps.now());
      if (refusal) return INVALID;
      const key = await enrollNode(deps, env, body.host_identifier, body.host_details, req.ip);
      return key ? { node_key: key, node_invalid: false } : INVALID;
    }
    // carver continue carries no node key in osquery's protocol: the session id is the credential.
    if (ep === 'carve_block') {
      if (!env.carves_tls) return { success: false };
      return { success: await carveBlock(deps, body) };
    }
    const node = await nodeByKey(deps, env, body.node_key);
    if (!node) return INVALID;
    services.checkins.record(node.id, { bytes: wire, ip: req.ip });
    return handle(deps, services, env, node, ep, body);
  });
  return app;
}

async function handle(deps: Deps, services: AgentServices, env: EnvironmentRow, node: NodeRow, ep: Endpoint, body: Record<string, unknown>) {
  switch (ep) {
    case 'config': {
      if (!env.config_tls) return OK;
      // The hash the node now has, and when it fetched it (nodes show, nodes list --config-stale).
      const { config, hash } = agentConfig(env);
      // osquery enrolls before it has a configuration (config_valid "0" at enroll): a node that
      // fetched the configuration we serve (validated when it was stored) has one, so health
      // follows the config fetch, not the enroll (issue 18).
      services.checkins.record(node.id, { bytes: 0, configHash: hash, configFetched: true, configValid: true });
      return { ...config, ...OK };
    }
    case 'log': {
      if (!env.logging_tls) return OK;
      const type = body.log_type === 'status' || body.log_type === 'result' ? body.log_type : undefined;
      const data = Array.isArray(body.data) ? body.data : [];
      if (!type) return OK;
      await services.logs.deliver(env, node, type, data);
      return OK;
    }
    case 'read':
      return env.query_tls ? { queries: await pendingQueriesFor(deps, node.id), ...OK } : { queries: {}, ...OK };
    case 'write': {
      if (!env.query_tls) return OK;
      const recorded = await recordAnswers(deps, node, obj(body.queries), obj(body.statuses), obj(body.messages));
      for (const r of recorded) await services.logs.deliver(env, node, 'query', [{ name: r.name, rows: r.rows }]);
      return OK;
    }
    case 'carve_init': {
      if (!env.carves_tls) return { success: false, ...OK };
      const session = await carveStart(deps, node, body);
      return session ? { session_id: session, success: true } : { success: false };
    }
    default:
      return INVALID;
  }
}

/**
 * The answer to an error of the agent door. Fastify's own client errors (body too large, bad
 * content length, wrong media type) and ours (HttpError 4xx) are the agent's fault: 4xx. Anything
 * else is the server's: reported to Faults (logged, counted) and answered 503 when the database is
 * down, busy or full (osquery retries), 500 otherwise. Never node_invalid.
 */
function answerForError(deps: Deps, err: FastifyError | HttpError, req: FastifyRequest): { status: number; body: object; headers?: Record<string, string> } {
  if (err instanceof HttpError && err.status < 500) return { status: err.status, body: { code: err.code, error: err.message } };
  const fastifyStatus = err instanceof HttpError ? err.status : err.statusCode;
  if (!(err instanceof HttpError) && err.code?.startsWith('FST_') && fastifyStatus !== undefined && fastifyStatus < 500) {
    const tooLarge = err.code === 'FST_ERR_CTP_BODY_TOO_LARGE';
    return { status: tooLarge ? 413 : 400, body: { code: 'bad_request', error: tooLarge ? `the body is larger than ${AGENT_BODY_LIMIT} bytes` : err.message } };
  }
  const kind = deps.faults.report(`agent ${endpointName(req)}`, err);
  if (kind) {
    return {
      status: 503,
      body: { code: 'unavailable', error: kind === 'no_space' ? 'the server cannot store this now (out of space); retry later' : 'the server cannot reach its database; retry later' },
      headers: { 'retry-after': String(RETRY_AFTER_SECONDS) },
    };
  }
  return { status: 500, body: { code: 'internal', error: 'internal server error' } };
}

/** A short label of the request for logs and metrics: the endpoint's kind, never the secret paths. */
function endpointName(req: FastifyRequest): string {
  return (req as FastifyRequest & { agentEndpoint?: string }).agentEndpoint ?? (req.method === 'GET' ? 'script' : 'request');
}
