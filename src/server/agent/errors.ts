// What each error of the agent door tells osquery (issue 18, docs/api.md "Failure semantics"):
// 4xx for a request the agent got wrong, 503 with Retry-After for the server's own trouble, 500
// for a bug; never node_invalid.
import type { FastifyError, FastifyRequest } from 'fastify';
import type { Deps } from '../context.js';
import { HttpError } from '../errors.js';
import { SpoolBusy } from '../services/delivery/spool.js';
import { AGENT_BODY_LIMIT, RETRY_AFTER_SECONDS } from './limits.js';

/** A request the agent got wrong: 4xx with `{code, error}`, never node_invalid. */
export const agentError = (status: number, message: string) => new HttpError(status, status === 404 ? 'not_found' : 'bad_request', message);

/** The 503 of a request the door has no room for now (osquery retries). */
export const busy = (message: string, extra: Record<string, unknown> = {}) =>
  new HttpError(503, 'unavailable', message, extra, { 'retry-after': String(RETRY_AFTER_SECONDS) });

export interface AgentAnswer {
  status: number;
  body: object;
  headers?: Record<string, string>;
}

/**
 * The answer to an error of the agent door. Fastify's own client errors (body too large, bad
 * content length, wrong media type) and ours (HttpError 4xx) are the agent's fault: 4xx. Anything
 * else is the server's: reported to Faults (logged, counted) and answered 503 when the database is
 * down, busy or full (osquery retries), 500 otherwise. Never node_invalid.
 */
export function answerForError(deps: Deps, err: FastifyError | HttpError, req: FastifyRequest): AgentAnswer {
  if (err instanceof SpoolBusy) {
    // Not a fault: agents send faster than the spool commits. osquery keeps the batch and resends.
    return {
      status: 503,
      body: { code: 'unavailable', error: `the log spool is busy (${err.message}); retry later` },
      headers: { 'retry-after': String(RETRY_AFTER_SECONDS) },
    };
  }
  if (err instanceof HttpError && (err.status < 500 || err.code === 'unavailable')) {
    return {
      status: err.status,
      body: { code: err.code, error: err.message, ...(err.status < 500 ? err.extra : {}) },
      headers: Object.keys(err.headers).length ? err.headers : undefined,
    };
  }
  const fastifyStatus = err instanceof HttpError ? err.status : err.statusCode;
  if (!(err instanceof HttpError) && err.code?.startsWith('FST_') && fastifyStatus !== undefined && fastifyStatus < 500) {
    const tooLarge = err.code === 'FST_ERR_CTP_BODY_TOO_LARGE';
    return {
      status: tooLarge ? 413 : 400,
      body: { code: 'bad_request', error: tooLarge ? `the body is larger than ${AGENT_BODY_LIMIT} bytes` : err.message },
    };
  }
  const kind = deps.faults.report(`agent ${endpointName(req)}`, err);
  if (kind) {
    return {
      status: 503,
      body: {
        code: 'unavailable',
        error:
          kind === 'no_space'
            ? 'the server cannot store this now (out of space); retry later'
            : 'the server cannot reach its database; retry later',
      },
      headers: { 'retry-after': String(RETRY_AFTER_SECONDS) },
    };
  }
  return { status: 500, body: { code: 'internal', error: 'internal server error' } };
}

/** A short label of the request for logs and metrics: the endpoint's kind, never the secret paths. */
export function endpointName(req: FastifyRequest): string {
  return req.agentEndpoint ?? (req.method === 'GET' ? 'script' : 'request');
}
