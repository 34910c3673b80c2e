// The Fastify application: JSON in and out, one error handler producing `{code, error}`, and
// the auth hook that applies each route's permission rule (permissions.ts).
import Fastify, { type FastifyReply, type FastifyRequest, type FastifyError } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Deps, Caller } from './context.js';
import { HttpError, forbidden, notFound, rateLimited } from './errors.js';
import { hasLevel } from './permissions.js';
import { authenticate } from './services/auth/auth.js';
import { findEnv } from './services/environments/environments.js';
import { RateLimiter } from './lib/rate-limit.js';
import { HttpLifecycle } from './lib/http-lifecycle.js';
import { MAX_JSON_DEPTH, duplicateKey, nestsDeeperThan } from './lib/json-depth.js';
import { storeClosed } from './lib/db-errors.js';
import type { DenialAudit } from './services/auth/denial-audit.js';
import { registerRoutes } from './routes/index.js';
import type { App } from './routes/request.js';

export type { App };

export interface AppOptions {
  https?: { cert: Buffer; key: Buffer };
  /** Connections, timeouts and shutdown (started and ended by start.ts). */
  lifecycle: HttpLifecycle;
  /** Where denied requests are audited, in aggregate. */
  denials: DenialAudit;
  /** Proxies (addresses or CIDRs) whose X-Forwarded-For names the client: limits and audit key on it. */
  trustProxy?: string[];
  /** Admin requests in progress at once before 503 (the admin door's own budget, apart from the agents'). */
  maxInFlight?: number;
}

/** Longest path parameter (Fastify's default, 100, cut real hostnames): Node's 16 KiB header cap binds first. */
const MAX_PARAM_LENGTH = 8192;

function errorBody(err: FastifyError | HttpError): { status: number; body: Record<string, unknown>; headers?: Record<string, string> } {
  if (err instanceof HttpError)
    return { status: err.status, body: { code: err.code, error: err.message, ...err.extra }, headers: err.headers };
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
  if (err instanceof SyntaxError && err.statusCode === 400)
    return { status: 400, body: { code: 'invalid_json', error: `request body is not valid JSON: ${err.message}` } };
  const status = err.statusCode ?? 500;
  if (status >= 400 && status < 500) return { status: 400, body: { code: 'bad_request', error: err.message } };
  return { status: 500, body: { code: 'internal', error: 'internal server error' } };
}

/** Errors Fastify's router raises before any route or hook runs. */
function frameworkError(err: FastifyError): { status: number; code: 'bad_request' | 'internal'; error: string } {
  switch (err.code) {
    case 'FST_ERR_BAD_URL':
      return { status: 400, code: 'bad_request', error: 'the path is not valid %-encoding' };
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return { status: 400, code: 'bad_request', error: `a path parameter is longer than ${MAX_PARAM_LENGTH} characters` };
  }
  return (err.statusCode ?? 500) < 500
    ? { status: 400, code: 'bad_request', error: err.message }
    : { status: 500, code: 'internal', error: 'internal server error' };
}

/** The 503 of a request met by the shutdown (lib/http-lifecycle.ts says what it is). */
function shutdownError(): HttpError {
  const e = HttpLifecycle.shutdownError();
  return new HttpError(e.status, e.code, e.message, {}, e.headers);
}

export async function buildApp(deps: Deps, opts: AppOptions): Promise<App> {
  const { lifecycle, denials } = opts;
  const app = Fastify({
    // Request lines go through the server's one log (deps.log, lib/server-log.ts), not Fastify's.
    logger: false,
    // Timeouts: Node's http server options, given to https too (it takes the same ones).
    ...(opts.https ? { https: { ...opts.https, ...lifecycle.serverOptions() } } : { http: lifecycle.serverOptions() }),
    requestTimeout: lifecycle.timeouts.requestMs,
    keepAliveTimeout: lifecycle.timeouts.keepAliveMs,
    // Shutdown closes connections itself (lifecycle.drain), after the in-flight requests.
    forceCloseConnections: false,
    bodyLimit: deps.config.bodyLimit,
    ...(opts.trustProxy?.length ? { trustProxy: opts.trustProxy } : {}),
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // Wrong JSON types are errors, not coerced (contract.md 1); unknown body fields are dropped.
    ajv: { customOptions: { coerceTypes: false, removeAdditional: true, allErrors: false } },
    // Shutdown, malformed HTTP and router errors get `{code, error}` bodies too.
    return503OnClosing: false,
    clientErrorHandler: lifecycle.clientError,
    frameworkErrors: (err, _req, reply) => {
      const { status, code, error } = frameworkError(err);
      void (reply as FastifyReply).status(status).type('application/json').send({ code, error });
    },
  }).withTypeProvider<TypeBoxTypeProvider>();
  lifecycle.attach(app.server);

  // JSON bodies: Fastify's parser (prototype-poisoning checks) after a nesting-depth check.
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    const text = body.toString();
    if (nestsDeeperThan(text, MAX_JSON_DEPTH)) {
      return done(new HttpError(400, 'invalid_json', `request body nests deeper than ${MAX_JSON_DEPTH} levels`), undefined);
    }
    // Where a route asks, a key given twice is kept for the handler to refuse with its path.
    if (req.routeOptions.config.uniqueKeys) req.duplicateKey = duplicateKey(text);
    return parseJson(req, text, done);
  });

  // Counted in the database, so the limits hold across replicas (lib/rate-limit.ts); the API
  // limit, checked on every request, syncs its counts once a second instead of per request.
  const clock = () => deps.now().getTime();
  const loginLimiter = new RateLimiter(deps.db, 'login', deps.config.loginRateLimit, 60_000, clock);
  const apiLimiter = new RateLimiter(deps.db, 'api', deps.config.apiRateLimit, 60_000, clock, {
    syncMs: 1_000,
    onError: (e) => void deps.faults.report('api rate-limit sync', e),
  });
  const deniedLimiter = new RateLimiter(deps.db, 'denied', deps.config.deniedRateLimit, 60_000, clock);
  apiLimiter.start();
  app.addHook('onClose', async () => apiLimiter.stop());

  app.setErrorHandler((err: FastifyError, req, reply) => {
    let { status, body, headers } = errorBody(err);
    if (lifecycle.closing) {
      // Past the shutdown grace the drain has answered this request 503 already (lib/http-lifecycle.ts)
      // and the store closes under its handler: that failure is the shutdown, not a fault to report.
      if (reply.raw.headersSent) return reply;
      // A request whose client left is not waited for by the drain, so the store can close while
      // its handler still reads (a bench's last audit list at SIGTERM): the shutdown's 503, one line.
      if (storeClosed(err)) {
        const route = `${req.method} ${req.routeOptions.url ?? 'request'}`;
        deps.log.event('warn', 'shutdown', `api ${route}: the store closed during shutdown (${err.message}); answered 503`);
        ({ status, body, headers } = errorBody(shutdownError()));
      }
    }
    if (status === 500) {
      // The server's own trouble: logged and counted (lib/faults.ts); a database that is down,
      // busy or full is 503 with Retry-After (clients retry), anything else a 500 without internals.
      const kind = deps.faults.report(`api ${req.method} ${req.routeOptions.url ?? 'request'}`, err);
      if (kind) {
        status = 503;
        body = {
          code: 'unavailable',
          error:
            kind === 'no_space'
              ? 'the database is out of space: changes cannot be stored now; reads still work'
              : 'the database is unavailable; retry shortly',
        };
        headers = { 'retry-after': '5' };
      }
    }
    if (headers) void reply.headers(headers);
    return reply.status(status).type('application/json').send(body);
  });
  app.setNotFoundHandler((req, reply) =>
    reply.status(404).send({ code: 'not_found', error: `no such endpoint: ${req.method} ${req.url.split('?')[0]}` }),
  );

  addBudgetAndLog(app, deps, opts.maxInFlight ?? 256, lifecycle);

  /** Every refusal of the hook is audited in aggregate: one row per client address, username and minute. */
  const audited = async (req: FastifyRequest, err: HttpError, username = '') => {
    await denials.record({
      ip: req.ip,
      line: `denied ${req.method} ${req.url.split('?')[0]}: ${err.message}`,
      username,
      env: req.fleetEnv ?? null,
    });
    return err;
  };

  /** 401/403: also counted per client address; past the limit the answer is 429. */
  const deny = async (req: FastifyRequest, err: HttpError, username = '') => {
    const wait = await deniedLimiter.hit(req.ip);
    return audited(req, wait > 0 ? rateLimited(wait, 'too many denied requests from this address; try again later') : err, username);
  };

  const limit = async (req: FastifyRequest, limiter: RateLimiter, key: string, message?: string, username = '') => {
    const wait = await limiter.hit(key);
    if (wait > 0) throw await audited(req, rateLimited(wait, message), username);
  };

  // onRequest: authentication and permissions are decided before the body is parsed or
  // validated, so an unauthenticated or forbidden caller learns nothing about the body rules.
  app.addHook('onRequest', async (req) => {
    if (lifecycle.closing) throw shutdownError();
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
    if (csrf !== undefined && csrf !== caller.csrfToken)
      throw await deny(req, forbidden('CSRF token does not match this session', 'csrf'), caller.user.username);
    await limit(req, apiLimiter, caller.user.username, undefined, caller.user.username);
    if (rule.superAdmin && !caller.isSuperAdmin) throw await deny(req, forbidden('this needs a super-admin'), caller.user.username);
    if (rule.env) {
      const params = (rule.env.fromQuery ? req.query : req.params) as Record<string, string | undefined>;
      const ref = params[rule.env.param];
      if (ref === undefined) return;
      const env = await findEnv(deps, ref, caller.generations?.config);
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

/**
 * The admin door's own budget (issue 18): agents are bounded by theirs on the agent door, so an
 * agent flood cannot take these slots; past maxInFlight admin requests at once the answer is 503.
 * Every answer is counted (metrics) and logged (--log); while shutting down, answers end their
 * connection.
 */
function addBudgetAndLog(app: App, deps: Deps, maxInFlight: number, lifecycle: HttpLifecycle): void {
  // The admin door's own budget (issue 18): agents are bounded by theirs on the agent door, so an
  // agent flood cannot take these slots; past this many admin requests at once the answer is 503.
  let inFlight = 0;
  app.addHook('onRequest', async (req, reply) => {
    (req as FastifyRequest & { t0?: number }).t0 = performance.now();
    if (req.url === '/healthz') return;
    if (inFlight >= maxInFlight) {
      deps.metrics?.adminShed();
      throw new HttpError(503, 'unavailable', 'the server is busy; retry shortly', {}, { 'retry-after': '1' });
    }
    inFlight++;
    let done = false;
    const leave = () => {
      if (!done) {
        done = true;
        inFlight--;
      }
    };
    req.leaveBudget = leave;
    reply.raw.once('close', leave);
  });
  app.addHook('onResponse', async (req, reply) => {
    const t0 = (req as FastifyRequest & { t0?: number }).t0;
    const ms = t0 === undefined ? 0 : performance.now() - t0;
    deps.metrics?.request('admin', req.routeOptions.url ?? 'unmatched', reply.statusCode, ms / 1000);
    // --log: the route pattern and the path without its query (no token or secret is in either).
    deps.log.request({
      door: 'admin',
      method: req.method,
      route: req.routeOptions.url ?? 'unmatched',
      path: req.url.split('?')[0],
      status: reply.statusCode,
      ms,
      user: req.caller?.user.username,
      ip: req.ip,
    });
  });

  // While shutting down, answers in progress end their connection (no more requests on it).
  app.addHook('onSend', async (_req, reply) => {
    if (lifecycle.closing) void reply.header('connection', 'close');
  });
}
