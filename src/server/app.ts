// The Fastify application: JSON in and out, one error handler producing `{code, error}`, and
// the auth hook that applies each route's permission rule (permissions.ts).
import Fastify, { type FastifyInstance, type FastifyRequest, type FastifyError } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Deps, Caller } from './context.js';
import type { EnvironmentRow } from './store/schema.js';
import { HttpError, forbidden, notFound, rateLimited } from './errors.js';
import { hasLevel, type Rule } from './permissions.js';
import { authenticate } from './services/auth.js';
import { findEnv } from './services/environments.js';
import { writeAudit, LogTypes, Severities } from './services/audit.js';
import { RateLimiter } from './lib/rate-limit.js';
import { registerRoutes } from './routes/index.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    rule?: Rule;
    /** 'login' routes are limited per client IP instead of per user. */
    limit?: 'login';
  }
  interface FastifyRequest {
    caller?: Caller;
    fleetEnv?: EnvironmentRow;
  }
}

export type App = FastifyInstance<any, any, any, any, TypeBoxTypeProvider>;

export interface AppOptions {
  logger?: boolean | object;
  https?: { cert: Buffer; key: Buffer };
}

export function callerOf(req: FastifyRequest): Caller {
  if (!req.caller) throw new HttpError(500, 'internal', 'route has no authenticated caller');
  return req.caller;
}
export function envOf(req: FastifyRequest): EnvironmentRow {
  if (!req.fleetEnv) throw new HttpError(500, 'internal', 'route has no environment');
  return req.fleetEnv;
}

function errorBody(err: FastifyError | HttpError): { status: number; body: Record<string, unknown>; headers?: Record<string, string> } {
  if (err instanceof HttpError) return { status: err.status, body: { code: err.code, error: err.message, ...err.extra }, headers: err.headers };
  if (err.validation) return { status: 400, body: { code: 'bad_request', error: `invalid request: ${err.message}` } };
  switch (err.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return { status: 400, body: { code: 'invalid_json', error: `request body is not valid JSON: ${err.message}` } };
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { status: 400, body: { code: 'bad_request', error: 'request body too large' } };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { status: 400, body: { code: 'bad_request', error: 'request body must be JSON (Content-Type: application/json)' } };
  }
  // Only the body parser's SyntaxError is the client's fault; one thrown by our own code is a 500.
  if (err instanceof SyntaxError && err.statusCode === 400) return { status: 400, body: { code: 'invalid_json', error: `request body is not valid JSON: ${err.message}` } };
  const status = err.statusCode ?? 500;
  if (status >= 400 && status < 500) return { status: 400, body: { code: 'bad_request', error: err.message } };
  return { status: 500, body: { code: 'internal', error: 'internal server error' } };
}

export async function buildApp(deps: Deps, opts: AppOptions = {}): Promise<App> {
  const app = Fastify({
    logger: opts.logger ?? false,
    ...(opts.https ? { https: opts.https } : {}),
    bodyLimit: deps.config.bodyLimit,
    // Wrong JSON types are errors, not coerced (contract.md 1); unknown body fields are dropped.
    ajv: { customOptions: { coerceTypes: false, removeAdditional: true, allErrors: false } },
    // Shutdown and malformed HTTP get `{code, error}` bodies too (see the hooks below).
    return503OnClosing: false,
    clientErrorHandler: (err, socket) => {
      if ((err as NodeJS.ErrnoException).code === 'ECONNRESET' || !socket.writable) return void socket.destroy();
      const body = JSON.stringify({ code: 'bad_request', error: 'malformed HTTP request' });
      socket.end(`HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
    },
  }).withTypeProvider<TypeBoxTypeProvider>();

  const loginLimiter = new RateLimiter(deps.config.loginRateLimit, 60_000, () => deps.now().getTime());
  const apiLimiter = new RateLimiter(deps.config.apiRateLimit, 60_000, () => deps.now().getTime());

  app.setErrorHandler((err: FastifyError, req, reply) => {
    const { status, body, headers } = errorBody(err);
    if (status === 500) req.log.error({ err }, 'request failed');
    if (headers) void reply.headers(headers);
    return reply.status(status).type('application/json').send(body);
  });
  app.setNotFoundHandler((req, reply) =>
    reply.status(404).send({ code: 'not_found', error: `no such endpoint: ${req.method} ${req.url.split('?')[0]}` }),
  );

  // Requests that reach a closing server (keep-alive connections) are told to come back.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });

  /** Rate limiting is a denial too: audited once per window and key, so a flood writes one row. */
  const limit = async (req: FastifyRequest, limiter: RateLimiter, key: string, message?: string, username = '') => {
    const { wait, firstRejection } = limiter.hit(key);
    if (wait === 0) return;
    const err = rateLimited(wait, message);
    throw firstRejection ? await deny(req, err, username) : err;
  };

  const deny = async (req: FastifyRequest, err: HttpError, username = '') => {
    await writeAudit(deps, {
      line: `denied ${req.method} ${req.url.split('?')[0]}: ${err.message}`,
      logType: LogTypes.visit,
      severity: Severities.warning,
      username,
      sourceIp: req.ip,
      env: req.fleetEnv ?? null,
    });
    return err;
  };

  // onRequest: authentication and permissions are decided before the body is parsed or
  // validated, so an unauthenticated or forbidden caller learns nothing about the body rules.
  app.addHook('onRequest', async (req) => {
    if (closing) throw new HttpError(503, 'unavailable', 'the server is shutting down; retry shortly', {}, { 'retry-after': '5' });
    const rule = req.routeOptions.config.rule;
    if (req.routeOptions.config.limit === 'login') await limit(req, loginLimiter, req.ip, 'too many login attempts; try again later');
    if (!rule || !rule.auth) return;
    let caller: Caller;
    try {
      caller = await authenticate(deps, req.headers.authorization);
    } catch (e) {
      throw e instanceof HttpError ? await deny(req, e) : e;
    }
    req.caller = caller;
    const csrf = req.headers['x-csrf-token'];
    if (csrf !== undefined && csrf !== caller.csrfToken) throw await deny(req, forbidden('CSRF token does not match this session', 'csrf'), caller.user.username);
    await limit(req, apiLimiter, caller.user.username, undefined, caller.user.username);
    if (rule.superAdmin && !caller.isSuperAdmin) throw await deny(req, forbidden('this needs a super-admin'), caller.user.username);
    if (rule.env) {
      const params = (rule.env.fromQuery ? req.query : req.params) as Record<string, string | undefined>;
      const ref = params[rule.env.param];
      if (ref === undefined) return;
      const env = await findEnv(deps, ref);
      if (!env) throw notFound(`environment "${ref}" not found`);
      req.fleetEnv = env;
      if (!hasLevel(caller.isSuperAdmin, caller.access.get(env.id), rule.env.level)) {
        throw await deny(req, forbidden(`this needs ${rule.env.level} access to environment ${env.name}`), caller.user.username);
      }
    }
  });

  await registerRoutes(app, deps);
  return app;
}
