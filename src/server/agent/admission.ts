// Admission, before any body is read: a request beyond the in-flight bound, or one arriving while
// the server drains, is answered 503 at once, so the requests admitted keep their latency and the
// server recovers as soon as the load falls (issue 18). The environment and endpoint are resolved
// here too, so an unknown path costs no body and each endpoint gets its own limit.
import type { FastifyInstance } from 'fastify';
import { HttpError } from '../errors.js';
import { HttpLifecycle } from '../lib/http-lifecycle.js';
import type { EnvironmentRow } from '../store/schema.js';
import { agentError, busy } from './errors.js';
import { CARVE_BLOCKS_AT_ONCE, REFUSAL_PAUSE_MS } from './limits.js';
import type { AgentDoorOptions, AgentServices, Endpoint } from './types.js';

/** Waits out a refusal's pause (the flooder's pace) without holding an in-flight slot. */
export const refusalPause = () => new Promise((r) => setTimeout(r, REFUSAL_PAUSE_MS));

const clean = (p: string) => p.replace(/^\/+|\/+$/g, '');

/**
 * The endpoints of an environment row by their cleaned paths, built once per row: the agent
 * door's cache (state.ts) hands out the same row until the configuration changes, and every
 * agent request looks its endpoint up.
 */
const endpointTables = new WeakMap<EnvironmentRow, Map<string, Endpoint>>();

export function endpointOf(env: EnvironmentRow, path: string): Endpoint | undefined {
  let table = endpointTables.get(env);
  if (!table) {
    table = new Map();
    // The first of two equal paths wins, as the order below.
    for (const [p, ep] of [
      [env.enroll_path, 'enroll'],
      [env.config_path, 'config'],
      [env.log_path, 'log'],
      [env.query_read_path, 'read'],
      [env.query_write_path, 'write'],
      [env.carver_init_path, 'carve_init'],
      [env.carver_block_path, 'carve_block'],
    ] as [string, Endpoint][])
      if (!table.has(clean(p))) table.set(clean(p), ep);
    endpointTables.set(env, table);
  }
  return table.get(clean(path));
}

/** The admission, request-log and drain hooks of the agent door. */
export function installAdmission(app: FastifyInstance, services: AgentServices, o: AgentDoorOptions): void {
  const { lifecycle } = o;
  let inFlight = 0;
  o.exposeInFlight?.(() => inFlight);
  const carveSlots = new Semaphore(CARVE_BLOCKS_AT_ONCE);

  app.addHook('onRequest', async (req, reply) => {
    req.agentT0 = performance.now();
    if (lifecycle.closing) {
      const e = HttpLifecycle.shutdownError();
      throw new HttpError(e.status, e.code, e.message, {}, e.headers);
    }
    if (inFlight >= o.maxInFlight) {
      req.agentShed = true;
      throw busy('the server is busy; retry later');
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
    if (ep === 'carve_block') {
      const free = await carveSlots.acquire();
      reply.raw.once('close', free);
    }
  });
  // The two hooks below run for every agent request and wait for nothing: callback hooks, not
  // async ones, so neither costs a promise and its turns.
  app.addHook('onResponse', (req, reply, done) => {
    o.onDone?.({
      endpoint: req.agentEndpoint ?? (req.method === 'GET' ? 'script' : 'unknown'),
      status: reply.statusCode,
      ms: performance.now() - (req.agentT0 ?? performance.now()),
      node: req.agentNode,
      shed: req.agentShed,
      invalid: req.agentInvalid,
    });
    done();
  });
  // While draining, answers end their connection.
  app.addHook('onSend', (_req, reply, payload, done) => {
    if (lifecycle.closing) void reply.header('connection', 'close');
    done(null, payload);
  });
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
