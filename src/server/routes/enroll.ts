import { Type } from '@sinclair/typebox';
import { callerOf, envOf, type App } from '../app.js';
import type { Deps } from '../context.js';
import { DataResponse, EnrollBody, MessageResponse } from '../../api/index.js';
import { RULES } from '../permissions.js';
import { enrollAction, enrollRead } from '../services/enroll.js';

export function enrollRoutes(app: App, deps: Deps): void {
  app.post(
    '/api/v1/environments/:env/enroll/:action',
    {
      config: { rule: RULES.enrollAction },
      schema: { params: Type.Object({ env: Type.String(), action: Type.String() }), body: EnrollBody, response: { 200: MessageResponse } },
      // The body may be left out entirely (extend, expire, rotate, notexpire need none).
      preValidation: async (req) => {
        if (req.body === undefined) req.body = {};
      },
    },
    async (req) => ({ message: await enrollAction(deps, callerOf(req), envOf(req), req.params.action, req.body, req.ip) }),
  );
  app.get(
    '/api/v1/environments/:env/enroll/:target',
    { config: { rule: RULES.enrollRead }, schema: { params: Type.Object({ env: Type.String(), target: Type.String() }), response: { 200: DataResponse } } },
    async (req) => ({ data: await enrollRead(deps, envOf(req), req.params.target) }),
  );
}
