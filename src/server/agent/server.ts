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
import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { gunzip, gunzipSync } from 'node:zlib';
import { promisify } from 'node:util';

const gunzipAsync = promisify(gunzip);
import { timingSafeEqual } from 'node:crypto';
import type { Deps } from '../context.js';
import { HttpError, rateLimited } from '../errors.js';
import { RateLimiter } from '../lib/rate-limit.js';
import type { DenialAudit } from '../services/auth/denial-audit.js';
import type { EnvironmentRow } from '../store/schema.js';
import type { AgentNode, AgentState } from './state.js';
import type { CheckinBatcher } from '../services/agents/checkins.js';
import { LogBackpressure, type LogDelivery } from '../services/delivery/log-delivery.js';
import { enrollNode, enrollRefusal } from '../services/agents/agent-nodes.js';
import { agentConfig } from '../services/environments/osquery-config.js';
import { CarveRefusal, MAX_CARVE_BLOCK, carveBlock, carveStart, pendingQueriesFor, recordAnswers } from '../services/agents/live-queries.js';
import { HttpLifecycle } from '../lib/http-lifecycle.js';
import { BigBodyDecoder, DecodeError } from './big-body.js';
import { enrollRead } from '../services/environments/enroll.js';
import { NEVER } from '../../api/index.js';

/** On the wire (osquery sends small bodies; logs are batched by --logger_tls_period). */
export const AGENT_BODY_LIMIT = 1024 * 1024;
/** After gunzip: bounds what a small gzip body may inflate to. */
export const AGENT_INFLATED_LIMIT = 16 * 1024 * 1024;

export interface AgentServices {
  checkins: CheckinBatcher;
  logs: LogDelivery;
  /** Environments, node keys, live queries and sinks, cached per counter (agent/state.ts). */
  state: AgentState;
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

/** A gzip body that inflates past this is "big": decoding it takes one of BIG_BODIES_AT_ONCE. */
const BIG_BODY = 1024 * 1024;
/** Log bodies from a refused node's address at least this large are refused before they are read. */
const EARLY_REFUSAL_BYTES = 8 * 1024;
/** How long such a refusal waits before it is answered (the flooder's pace). */
const REFUSAL_PAUSE_MS = 1000;
/** Big bodies decoded at once; one more is answered 503 before it is inflated (memory and CPU bound). */
const BIG_BODIES_AT_ONCE = 1;

/** Gzip bodies declaring at most this many inflated bytes are inflated on the event loop (tens of microseconds). */
const SMALL_INFLATED = 64 * 1024;

/** The inflated size a gzip member declares in its trailer (ISIZE, mod 2^32); a liar is caught by the limits below. */
function declaredSize(raw: Buffer): number {
  return raw.length >= 18 ? raw.readUInt32LE(raw.length - 4) : raw.length;
}

/** The bytes of the body, gunzipped when sent so, at most `limit` of them; a 4xx HttpError otherwise. */
async function inflate(req: FastifyRequest, limit: number): Promise<Buffer> {
  const raw = req.body as Buffer | undefined;
  if (!Buffer.isBuffer(raw)) throw agentError(400, 'the body must be a JSON object');
  const enc = String(req.headers['content-encoding'] ?? '').toLowerCase();
  if (enc === 'gzip') {
    try {
      // A small body (osquery's usual batch of a few KB) inflates here at once: handing it to the
      // thread pool costs more than inflating it. Bounded by SMALL_INFLATED, whatever its
      // trailer says; a bigger one goes to the pool, off the event loop.
      if (declaredSize(raw) <= SMALL_INFLATED && limit >= SMALL_INFLATED) {
        try {
          return gunzipSync(raw, { maxOutputLength: SMALL_INFLATED });
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== 'ERR_BUFFER_TOO_LARGE') throw e;
        }
      }
      // In libuv's thread pool, not on the event loop: a 16 MB batch does not stall other agents.
      return await gunzipAsync(raw, { maxOutputLength: limit });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') throw agentError(413, `the body inflates to more than ${limit} bytes`);
      throw agentError(400, 'the body is not valid gzip');
    }
  }
  if (enc !== '' && enc !== 'identity') throw agentError(415, `unsupported Content-Encoding "${enc}" (gzip or none)`);
  return raw;
}

/** The JSON object of the (inflated) body; a 400 HttpError for anything else. */
function parseObject(raw: Buffer): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(raw.toString('utf8'));
  } catch {
    throw agentError(400, 'the body is not valid JSON');
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw agentError(400, 'the body must be a JSON object');
  return v as Record<string, unknown>;
}

/** Constant-time equality of two texts; compares their bytes (a non-ASCII text of the right length in characters threw). */
const sameText = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

const obj = (v: unknown): Record<string, unknown> => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {});

declare module 'fastify' {
  interface FastifyRequest {
    /** The agent door's view of a POST: its environment, endpoint and (once known) node. */
    agentEnv?: EnvironmentRow;
    agentEndpoint?: Endpoint;
    agentNode?: string;
    /** Gives back the request's in-flight slot early (a refusal that pauses before it answers). */
    agentRelease?: () => void;
    /** Answered node_invalid for an unknown node key (counted: agents told to re-enroll). */
    agentInvalid?: boolean;
  }
}

/** What the agent door is given besides deps and services (start.ts / listener.ts). */
export interface AgentDoorOptions {
  https: { cert: Buffer; key: Buffer };
  /** Timeouts and the bounded drain on SIGTERM (the same rules as the admin door). */
  lifecycle: HttpLifecycle;
  /** Agent requests handled at once; more are answered 503 at once (osquery retries). */
  maxInFlight: number;
  /** Called when a request ends: request log and metrics. */
  onDone?: (r: { endpoint: string; status: number; ms: number; node?: string; shed?: boolean; invalid?: boolean }) => void;
  /** Failed enrolls are audited here, aggregated per address and minute (as denied admin requests). */
  denials?: DenialAudit;
  /** Tells the owner how to read the number of requests in progress (metrics). */
  exposeInFlight?: (read: () => number) => void;
}

/** Carve blocks (up to MAX_CARVE_BLOCK, ~11 MB as base64) received at once; others wait their turn. */
const CARVE_BLOCKS_AT_ONCE = 4;
/** The body limit of a carve block: the largest block in base64 plus the JSON around it. */
export const CARVE_BLOCK_BODY_LIMIT = Math.ceil(MAX_CARVE_BLOCK / 3) * 4 + 64 * 1024;

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
  let inFlight = 0;
  let bigBodies = 0;
  const decoder = new BigBodyDecoder();
  app.addHook('onClose', async () => decoder.close());
  o.exposeInFlight?.(() => inFlight);
  // Failed enrolls per client address, counted in the database (every replica sees them): past
  // --denied-rate-limit a minute, that address's enrolls are answered 429 until the window ends.
  const enrollFailures = new RateLimiter(deps.db, 'enroll', deps.config.deniedRateLimit, 60_000, () => deps.now().getTime());
  const carveSlots = new Semaphore(CARVE_BLOCKS_AT_ONCE);

  // Admission, before any body is read: a request beyond the in-flight bound, or one arriving
  // while the server drains, is answered 503 at once, so the requests admitted keep their latency
  // and the server recovers as soon as the load falls (issue 18). The environment and endpoint
  // are resolved here too, so an unknown path costs no body and each endpoint gets its own limit.
  app.addHook('onRequest', async (req, reply) => {
    (req as FastifyRequest & { t0?: number }).t0 = performance.now();
    if (lifecycle.closing) {
      const e = HttpLifecycle.shutdownError();
      throw new HttpError(e.status, e.code, e.message, {}, e.headers);
    }
    if (inFlight >= o.maxInFlight) {
      (req as FastifyRequest & { shed?: boolean }).shed = true;
      throw new HttpError(503, 'unavailable', 'the server is busy; retry later', {}, { 'retry-after': String(RETRY_AFTER_SECONDS) });
    }
    inFlight++;
    let released = false;
    const release = () => {
      if (!released) {
        released = true;
        inFlight--;
      }
    };
    reply.raw.once('close', release);
    req.agentRelease = release;
    if (req.method !== 'POST') return;
    const [, envRef = '', ...rest] = (req.url.split('?')[0] ?? '').split('/');
    let ref: string;
    try {
      ref = decodeURIComponent(envRef);
    } catch {
      throw agentError(400, 'the path is not valid %-encoding');
    }
    const env = await services.state.env(ref);
    const ep = env && endpointOf(env, rest.join('/'));
    if (!env || !ep) throw agentError(404, 'no such environment or agent endpoint');
    req.agentEnv = env;
    req.agentEndpoint = ep;
    if (ep === 'log' && Number(req.headers['content-length'] ?? 0) >= EARLY_REFUSAL_BYTES && services.logs.refusing({ ip: req.ip })) {
      // A node over its log share sending another sizeable batch: answered 503 before its body is
      // read, after a pause that holds no in-flight slot, so a flooding agent costs neither
      // memory nor much CPU, and cannot send faster than a batch a second per connection.
      release();
      await new Promise((r) => setTimeout(r, REFUSAL_PAUSE_MS));
      throw new LogBackpressure('the node sending from this address has more logs queued than its share');
    }
    if (ep === 'carve_block') {
      const free = await carveSlots.acquire();
      reply.raw.once('close', free);
    }
  });
  app.addHook('onResponse', async (req, reply) => {
    o.onDone?.({
      endpoint: req.agentEndpoint ?? (req.method === 'GET' ? 'script' : 'unknown'),
      status: reply.statusCode,
      ms: performance.now() - ((req as FastifyRequest & { t0?: number }).t0 ?? performance.now()),
      node: req.agentNode,
      shed: (req as FastifyRequest & { shed?: boolean }).shed,
      invalid: req.agentInvalid,
    });
  });
  // While draining, answers end their connection.
  app.addHook('onSend', async (_req, reply) => {
    if (lifecycle.closing) void reply.header('connection', 'close');
  });

  // Every body is taken as bytes (osquery's content type varies; gzip is decoded later), read
  // with the endpoint's own limit: 1 MiB, or a carve block's size.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (req, payload, done) => {
    const limit = req.agentEndpoint === 'carve_block' ? CARVE_BLOCK_BODY_LIMIT : AGENT_BODY_LIMIT;
    const declared = Number(req.headers['content-length']);
    if (declared > limit) return done(agentError(413, `the body is larger than ${limit} bytes`), undefined);
    const chunks: Buffer[] = [];
    let size = 0;
    let finished = false;
    const finish = (err: Error | null, body?: Buffer) => {
      if (finished) return;
      finished = true;
      done(err, body);
    };
    payload.on('data', (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        payload.removeAllListeners('data');
        payload.resume();
        return finish(agentError(413, `the body is larger than ${limit} bytes`));
      }
      chunks.push(c);
    });
    payload.on('end', () => finish(null, Buffer.concat(chunks, size)));
    // The agent went away before its body arrived (it timed out, or was stopped): its own doing,
    // answered 400 (to nobody) and not reported as a server fault. Node's "aborted" carries
    // ECONNRESET, which would otherwise read as a database connection lost.
    payload.on('error', (e: NodeJS.ErrnoException) => finish(e.code === 'ECONNRESET' || e.message === 'aborted' ? agentError(400, 'the agent aborted the request') : e));
  });
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

  app.post('/:env/*', async (req, reply) => {
    try {
      return await answer(req, reply);
    } catch (e) {
      // A log batch refused for room (the node's share, the sink's queue, the big-body slots)
      // is answered after a pause that holds no in-flight slot: a flooding agent is paced to a
      // batch a second per connection; osquery, which resends at its next period, never notices.
      if (e instanceof LogBackpressure || (e instanceof HttpError && e.extra.bigBody)) {
        req.agentRelease?.();
        await new Promise((r) => setTimeout(r, REFUSAL_PAUSE_MS));
      }
      throw e;
    }
  });

  const answer = async (req: FastifyRequest, reply: FastifyReply) => {
    const env = req.agentEnv!;
    const ep = req.agentEndpoint!;
    let big = false;
    const gz = String(req.headers['content-encoding'] ?? '').toLowerCase() === 'gzip';
    if (gz && Buffer.isBuffer(req.body) && declaredSize(req.body) > BIG_BODY) {
      // A big log batch: decoded only with one of the big-body slots (else 503 at once, before
      // inflating), and only for a node whose log queue has room (else 503 before parsing).
      if (ep === 'log' && services.logs.refusing({ ip: req.ip })) throw new LogBackpressure('the node sending from this address has more logs queued than its share');
      if (bigBodies >= BIG_BODIES_AT_ONCE) throw new HttpError(503, 'unavailable', 'the server is busy with large bodies; retry later', { bigBody: true }, { 'retry-after': String(RETRY_AFTER_SECONDS) });
      bigBodies++;
      // Held until the answer is sent: the parsed batch lives until it is queued.
      reply.raw.once('close', () => bigBodies--);
      big = true;
    }
    const wire = Number(req.headers['content-length'] ?? (req.body as Buffer).length) || 0;
    if (big && ep === 'log') {
      // Inflated, parsed and serialised again in a worker thread (big-body.ts): other agents'
      // requests do not wait behind it.
      const decoded = await decoder.decode(req.body as Buffer, AGENT_INFLATED_LIMIT).catch((e: unknown) => {
        throw e instanceof DecodeError ? agentError(e.status, e.message) : e;
      });
      const node = await services.state.node(env, decoded.head.node_key);
      if (!node) {
        req.agentInvalid = true;
        return INVALID;
      }
      req.agentNode = node.uuid;
      checkin(services, node, wire, req.ip);
      const type = decoded.head.log_type === 'status' || decoded.head.log_type === 'result' ? decoded.head.log_type : undefined;
      if (env.logging_tls && type) await services.logs.deliverTexts(env, node, type, decoded.entries, { ip: req.ip });
      return OK;
    }
    // Without a slot, a body inflating past BIG_BODY lied in its trailer: refused.
    const body = parseObject(await inflate(req, big ? AGENT_INFLATED_LIMIT : BIG_BODY));

    if (ep === 'enroll') {
      const failed = await enrollFailures.count(req.ip);
      if (failed.count >= deps.config.deniedRateLimit) throw rateLimited(failed.retryAfter, 'too many failed enrolls from this address; try again later');
      let refusal = enrollRefusal(env, body.enroll_secret, deps.now());
      const key = refusal ? undefined : await enrollNode(deps, env, body.host_identifier, body.host_details, req.ip);
      if (key) return { node_key: key, node_invalid: false };
      refusal ??= 'host identifier refused (not a valid identifier, or a node of another environment)';
      // Refused enrolls are audited (one row per address and minute, with a count) and throttled.
      await enrollFailures.hit(req.ip);
      await o.denials?.record({ ip: req.ip, line: `enroll refused in environment ${env.name}: ${refusal}`, env });
      return INVALID;
    }
    // carver continue carries no node key in osquery's protocol: the session id is the credential.
    if (ep === 'carve_block') {
      if (!env.carves_tls) return { success: false };
      await refusedAs400(carveBlock(deps, body));
      return { success: true };
    }
    const node = await services.state.node(env, body.node_key);
    if (!node) {
      req.agentInvalid = true;
      return INVALID;
    }
    req.agentNode = node.uuid;
    checkin(services, node, wire, req.ip);
    return handle(deps, services, env, node, ep, body, req.ip);
  };
  return app;
}

/**
 * Every agent request is a check-in (last_seen, bytes). The address is written only when it
 * changed: it is a searched and indexed column, and rewriting the same value on every check-in
 * would re-index the node each time.
 */
function checkin(services: AgentServices, node: AgentNode, bytes: number, ip: string): void {
  const moved = node.ip_address !== ip;
  if (moved) node.ip_address = ip;
  services.checkins.record(node.id, { bytes, ...(moved ? { ip } : {}) });
}

/** A carve refusal is the agent's fault: 400 with the reason (and success false, as osquery reads it). */
async function refusedAs400<T>(p: Promise<T>): Promise<T> {
  try {
    return await p;
  } catch (e) {
    if (e instanceof CarveRefusal) throw new HttpError(400, 'bad_request', e.message, { success: false });
    throw e;
  }
}

/** At most n holders; acquire() waits for a free slot and returns its release. */
class Semaphore {
  private held = 0;
  private readonly waiting: (() => void)[] = [];
  constructor(private readonly n: number) {}
  async acquire(): Promise<() => void> {
    if (this.held >= this.n) await new Promise<void>((r) => this.waiting.push(r));
    else this.held++;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const next = this.waiting.shift();
      if (next) next();
      else this.held--;
    };
  }
}

async function handle(deps: Deps, services: AgentServices, env: EnvironmentRow, node: AgentNode, ep: Endpoint, body: Record<string, unknown>, ip: string) {
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
      await services.logs.deliver(env, node, type, data, { ip });
      return OK;
    }
    case 'read': {
      // A node that owes no live query or carve (the common case) is answered without a query.
      if (!env.query_tls || !(await services.state.mayOwe(node.id))) return { queries: {}, ...OK };
      const queries = await pendingQueriesFor(deps, node.id);
      if (Object.keys(queries).length === 0) services.state.owesNothing(node.id);
      return { queries, ...OK };
    }
    case 'write': {
      if (!env.query_tls) return OK;
      const recorded = await recordAnswers(deps, node, obj(body.queries), obj(body.statuses), obj(body.messages));
      // The answers are stored (the API serves them) before they go to the query sinks, so a
      // full queue here cannot ask osquery to resend: those sink entries are dropped on purpose,
      // counted and audited.
      for (const r of recorded) await services.logs.deliver(env, node, 'query', [{ name: r.name, rows: r.rows }], { dropWhenFull: true });
      return OK;
    }
    case 'carve_init': {
      if (!env.carves_tls) return { success: false, ...OK };
      const session = await refusedAs400(carveStart(deps, node, body));
      return { session_id: session, success: true };
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
  if (err instanceof LogBackpressure) {
    // Not a fault: the agent sends faster than the sinks take. osquery keeps the batch and resends.
    return { status: 503, body: { code: 'unavailable', error: `log queue full (${err.message}); retry later` }, headers: { 'retry-after': String(RETRY_AFTER_SECONDS) } };
  }
  if (err instanceof HttpError && (err.status < 500 || err.code === 'unavailable')) {
    return { status: err.status, body: { code: err.code, error: err.message, ...(err.status < 500 ? err.extra : {}) }, headers: Object.keys(err.headers).length ? err.headers : undefined };
  }
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
  return req.agentEndpoint ?? (req.method === 'GET' ? 'script' : 'request');
}
