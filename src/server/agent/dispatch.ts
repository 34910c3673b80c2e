// What each agent endpoint does once a request is admitted and its body read: enroll, config,
// log, distributed read and write, carver start and continue. Calls the services; answers in
// osquery's shapes.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Deps } from '../context.js';
import { HttpError, rateLimited } from '../errors.js';
import { RateLimiter } from '../lib/rate-limit.js';
import { enrollNode, enrollRefusal } from '../services/agents/agent-nodes.js';
import { agentConfig } from '../services/environments/osquery-config.js';
import { pendingQueriesFor, recordAnswers } from '../services/agents/live-query-answers.js';
import { CarveNotYet, CarveRefusal, carveBlock, carveStart } from '../services/agents/carve-uploads.js';
import { recordDetails } from '../services/agents/node-details.js';
import type { EnvironmentRow } from '../store/schema.js';
import { BigBodyDecoder, DecodeError } from './big-body.js';
import { declaredSize, inflate, obj, parseObject } from './body.js';
import { agentError, busy } from './errors.js';
import { AGENT_INFLATED_LIMIT, BIG_BODIES_AT_ONCE, BIG_BODY } from './limits.js';
import { WRITE_LIMIT, WriteBody } from './write-body.js';
import type { AgentNode } from './state.js';
import type { AgentDoorOptions, AgentServices, Endpoint } from './types.js';

const INVALID = { node_invalid: true };
const OK = { node_invalid: false };

export interface Dispatcher {
  answer(req: FastifyRequest, reply: FastifyReply): Promise<object>;
  close(): Promise<void>;
}

export function makeDispatcher(deps: Deps, services: AgentServices, o: AgentDoorOptions): Dispatcher {
  let bigBodies = 0;
  const decoder = new BigBodyDecoder();
  // Failed enrolls per client address, counted in the database (every replica sees them): past
  // --denied-rate-limit a minute, that address's enrolls are answered 429 until the window ends.
  const enrollFailures = new RateLimiter(deps.db, 'enroll', deps.config.deniedRateLimit, 60_000, () => deps.now().getTime());

  const answer = async (req: FastifyRequest, reply: FastifyReply): Promise<object> => {
    const env = req.agentEnv!;
    const ep = req.agentEndpoint!;
    let big = false;
    let freeBig: (() => void) | undefined;
    const gz = String(req.headers['content-encoding'] ?? '').toLowerCase() === 'gzip';
    if (gz && Buffer.isBuffer(req.body) && declaredSize(req.body) > BIG_BODY) {
      // A big log batch: decoded only with one of the big-body slots (else 503 at once, before inflating).
      if (bigBodies >= BIG_BODIES_AT_ONCE) throw busy('the server is busy with large bodies; retry later', { bigBody: true });
      bigBodies++;
      // Held while the batch is decoded and committed (a log batch frees it as soon as it is
      // committed: the agent, answered, may send the next batch at once), or until the answer.
      let held = true;
      freeBig = () => {
        if (!held) return;
        held = false;
        bigBodies--;
      };
      reply.raw.once('close', freeBig);
      big = true;
    }
    if (req.body instanceof WriteBody) {
      // A distributed write, read whatever its size (write-body.ts).
      const w = req.body;
      const node = await services.state.node(env, w.node_key);
      if (!node) {
        req.agentInvalid = true;
        return INVALID;
      }
      req.agentNode = node.uuid;
      checkin(services, node, w.bytes, req.ip);
      return env.query_tls ? storeAnswers(deps, services, env, node, w) : OK;
    }
    const wire = Number(req.headers['content-length'] ?? (req.body as Buffer).length) || 0;
    if (big && ep === 'log') {
      // Inflated, parsed and serialised again in a worker thread (big-body.ts): other agents'
      // requests do not wait behind it.
      try {
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
        if (env.logging_tls && type) await services.logs.deliverTexts(env, node, type, decoded.entries);
        return OK;
      } finally {
        freeBig?.();
      }
    }
    // Without a slot, a body inflating past BIG_BODY lied in its trailer: refused.
    const body = parseObject(await inflate(req, big ? AGENT_INFLATED_LIMIT : BIG_BODY));

    if (ep === 'enroll') {
      const failed = await enrollFailures.count(req.ip);
      if (failed.count >= deps.config.deniedRateLimit) {
        deps.metrics?.enrollRefused(env.name, 'throttled');
        throw rateLimited(failed.retryAfter, 'too many failed enrolls from this address; try again later');
      }
      let refusal = enrollRefusal(env, body.enroll_secret, deps.now());
      const enrolled = refusal
        ? undefined
        : await enrollNode(deps, env, body.host_identifier, body.host_details, req.ip, (statements) => services.enrolls.run(statements));
      if (enrolled) {
        // Its next request (the config) finds the node without a query.
        services.state.remember(enrolled.key, enrolled.node);
        return { node_key: enrolled.key, node_invalid: false };
      }
      refusal ??= { reason: 'identifier', text: 'host identifier refused (not a valid identifier, or a node of another environment)' };
      // Refused enrolls are counted (issue 27: a closed window shows on a dashboard), audited (one
      // row per address and minute, with a count) and throttled.
      deps.metrics?.enrollRefused(env.name, refusal.reason);
      await enrollFailures.hit(req.ip);
      await o.denials?.record({ ip: req.ip, line: `enroll refused in environment ${env.name}: ${refusal.text}`, env });
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
    return handle(deps, services, env, node, ep, body);
  };
  return { answer, close: () => decoder.close() };
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

/**
 * tls/accelerated_seconds (issue 29): a node enrolled less than that many seconds ago is told
 * `accelerate` with what is left of them, and osquery then asks for live queries every 5 s until
 * then ("Accelerating distributed query checkins for N seconds"), as osctrl-tls answers. The
 * seconds left, not the setting: osquery restarts the window at each answer that carries it.
 */
async function acceleration(deps: Deps, services: AgentServices, node: AgentNode): Promise<{ accelerate?: number }> {
  const seconds = await services.state.acceleratedSeconds(node.environment_id);
  if (seconds <= 0) return {};
  const left = seconds - (deps.now().getTime() - Date.parse(node.created_at)) / 1000;
  return left >= 1 ? { accelerate: Math.floor(left) } : {};
}

/** A carve refusal is the agent's fault: 400 with the reason (and success false, as osquery reads it); a start too early, 503. */
async function refusedAs400<T>(p: Promise<T>): Promise<T> {
  try {
    return await p;
  } catch (e) {
    if (e instanceof CarveRefusal) throw new HttpError(400, 'bad_request', e.message, { success: false });
    // The start overtook the node's answer naming its ids: osquery retries a start that failed.
    if (e instanceof CarveNotYet) throw busy(e.message);
    throw e;
  }
}

/**
 * Stores a node's answers and hands them to the query sinks. An answer over WRITE_LIMIT is stored
 * as that query's error for this node, with the reason: osquery, answered 200, drops it, and
 * `query run` says why the node gave no rows.
 */
async function storeAnswers(deps: Deps, services: AgentServices, env: EnvironmentRow, node: AgentNode, w: WriteBody) {
  if (w.tooLarge) {
    const names = w.names();
    const why = `the answer was ${w.bytes} bytes, over this server's limit of ${WRITE_LIMIT} bytes (16 MiB); it was discarded: ask for fewer rows or columns`;
    await recordAnswers(
      deps,
      node,
      Object.fromEntries(names.map((n) => [n, []])),
      Object.fromEntries(names.map((n) => [n, 1])),
      Object.fromEntries(names.map((n) => [n, why])),
    );
    return OK;
  }
  // Issue 27: the detail answers update the node's row and are taken out before the live queries' turn.
  const refreshed = await recordDetails(deps, node, w.queries, w.statuses, async (q) => (await services.enrolls.run([q]))[0]);
  if (refreshed.answered) {
    services.details.answered(node.id);
    node.details_at = deps.now().toISOString();
    if (refreshed.hostname) node.hostname = refreshed.hostname;
  }
  const recorded = await recordAnswers(deps, node, w.queries, w.statuses, w.messages);
  // The answers are stored (the API serves them) before they go to the query sinks, so a
  // spool failure here cannot ask osquery to resend: those sink entries are dropped on
  // purpose, counted and audited (log-delivery.ts).
  for (const r of recorded) await services.logs.deliver(env, node, 'query', [{ name: r.name, rows: r.rows }]);
  return OK;
}

async function handle(
  deps: Deps,
  services: AgentServices,
  env: EnvironmentRow,
  node: AgentNode,
  ep: Endpoint,
  body: Record<string, unknown>,
) {
  switch (ep) {
    case 'config': {
      if (!env.config_tls) return OK;
      // The hash the node now has, and when it fetched it (nodes show, nodes list --config-stale).
      const { config, hash } = agentConfig(env);
      // osquery enrolls before it has a configuration (config_valid "0" at enroll): a node that
      // fetched the configuration we serve (validated when it was stored) has one, so health
      // follows the config fetch, not the enroll (issue 18).
      // Its distributed interval from now on is the one in these options (issue 26: "online" follows it).
      services.checkins.record(node.id, {
        bytes: 0,
        configHash: hash,
        configFetched: true,
        configValid: true,
        distributedInterval: env.query_interval,
      });
      return { ...config, ...OK };
    }
    case 'log': {
      if (!env.logging_tls) return OK;
      const type = body.log_type === 'status' || body.log_type === 'result' ? body.log_type : undefined;
      const data = Array.isArray(body.data) ? body.data : [];
      if (!type) return OK;
      // Answered once the entries are committed to the spool (a failure: 503, osquery resends).
      await services.logs.deliver(env, node, type, data);
      return OK;
    }
    case 'read': {
      // Issue 27: host details asked for again every detail refresh (no SQL to decide).
      const details = services.details.due(env, node);
      if (!env.query_tls) return { queries: details ?? {}, ...OK };
      const accelerate = await acceleration(deps, services, node);
      // A node that owes no live query or carve (the common case) is answered without a query.
      if (!(await services.state.mayOwe(node.id))) return { queries: details ?? {}, ...accelerate, ...OK };
      const queries = await pendingQueriesFor(deps, node.id);
      if (Object.keys(queries).length === 0) services.state.owesNothing(node.id);
      return { queries: { ...queries, ...details }, ...accelerate, ...OK };
    }
    case 'write': {
      // A gzipped write (osquery sends them plain; read by readWriteBody): within the body bounds.
      if (!env.query_tls) return OK;
      const w = new WriteBody();
      w.queries = Object.fromEntries(Object.entries(obj(body.queries)).map(([k, v]) => [k, Array.isArray(v) ? v : []]));
      w.statuses = obj(body.statuses);
      w.messages = obj(body.messages);
      return storeAnswers(deps, services, env, node, w);
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
