import { Type } from '@sinclair/typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { callerOf, envOf, type App } from './request.js';
import type { Deps } from '../context.js';
import { DataResponse, EnrollBody, MessageResponse } from '../../api/index.js';
import { RULES } from '../permissions.js';
import { enrollAction, enrollRead } from '../services/environments/enroll.js';

export function enrollRoutes(app: App, deps: Deps): void {
  // The body of an enroll action may be left out (extend, expire, rotate, notexpire need none),
  // also by clients that always send Content-Type: application/json: in this scope an empty JSON
  // body is no body, everything else goes through Fastify's own JSON parser.
  void app.register(async (plain) => {
    const scope = plain.withTypeProvider<TypeBoxTypeProvider>();
    const json = scope.getDefaultJsonParser('error', 'error');
    scope.removeContentTypeParser('application/json');
    scope.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
      if (typeof body === 'string' && body.trim() === '') done(null, undefined);
      else void json(req, body as string, done);
    });
    scope.post(
      '/api/v1/environments/:env/enroll/:action',
      {
        config: { rule: RULES.enrollAction },
        schema: {
          params: Type.Object({ env: Type.String(), action: Type.String() }),
          body: EnrollBody,
          response: { 200: MessageResponse },
        },
        preValidation: async (req) => {
          if (req.body === undefined) req.body = {};
        },
      },
      async (req) => ({ message: await enrollAction(deps, callerOf(req), envOf(req), req.params.action, req.body, req.ip) }),
    );
  });
  app.get(
    '/api/v1/environments/:env/enroll/:target',
    {
      config: { rule: RULES.enrollRead },
      schema: { params: Type.Object({ env: Type.String(), target: Type.String() }), response: { 200: DataResponse } },
    },
    async (req) => ({ data: await enrollRead(deps, envOf(req), req.params.target) }),
  );
}
