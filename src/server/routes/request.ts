// What routes take from a request: the App type, and the caller and environment the auth hook of
// app.ts attached. A small module of its own, so that routes never import the app that registers
// them (no import circle app -> routes -> app).
import type {
  FastifyBaseLogger,
  FastifyInstance,
  FastifyRequest,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Caller } from '../context.js';
import type { EnvironmentRow } from '../store/schema.js';
import type { Rule } from '../permissions.js';
import { HttpError } from '../errors.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    rule?: Rule;
    /** 'login' routes are limited per client IP instead of per user. */
    limit?: 'login';
    /** A body whose objects repeat a key is refused (osquery configurations: docs/api.md). */
    uniqueKeys?: boolean;
  }
  interface FastifyRequest {
    caller?: Caller;
    fleetEnv?: EnvironmentRow;
    /** The path of a key the JSON body gives twice in one object (routes with uniqueKeys). */
    duplicateKey?: string;
    /**
     * Gives this request's place in the admin door's in-flight budget back (a follower waiting
     * for log lines, issue 30: it holds no work, only a connection, and must not crowd out requests).
     */
    leaveBudget?: () => void;
  }
}

export type App = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

export function callerOf(req: FastifyRequest): Caller {
  if (!req.caller) throw new HttpError(500, 'internal', 'route has no authenticated caller');
  return req.caller;
}
export function envOf(req: FastifyRequest): EnvironmentRow {
  if (!req.fleetEnv) throw new HttpError(500, 'internal', 'route has no environment');
  return req.fleetEnv;
}
