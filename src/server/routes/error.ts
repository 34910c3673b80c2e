// 4.21: a generic error for clients to test their error handling (no auth).
import { Type } from '@sinclair/typebox';
import type { App } from './request.js';
import type { Deps } from '../context.js';
import { RULES } from '../permissions.js';
import type { ErrorCode } from '../../api/index.js';

const STATUS_CODES: Record<number, ErrorCode> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  409: 'conflict',
  429: 'rate_limited',
  503: 'unavailable',
};

export function errorRoutes(app: App, _deps: Deps): void {
  app.get(
    '/error',
    { config: { rule: RULES.error }, schema: { querystring: Type.Object({ status: Type.Optional(Type.String()) }) } },
    async (req, reply) => {
      const status = Number(req.query.status ?? 500);
      const code = STATUS_CODES[status];
      if (!code) return reply.status(500).type('application/json').send(JSON.stringify('internal error'));
      if (status === 429 || status === 503) void reply.header('retry-after', '1');
      return reply.status(status).send({ code, error: `generic ${status} error` });
    },
  );
}
