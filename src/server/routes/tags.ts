import { Type } from '@sinclair/typebox';
import { callerOf, envOf, type App } from './request.js';
import type { Deps } from '../context.js';
import { DataResponse, TagBody, TagWithCount } from '../../api/index.js';
import { RULES } from '../permissions.js';
import { listTags, tagAction } from '../services/fleet/tags.js';

export function tagsRoutes(app: App, deps: Deps): void {
  app.get(
    '/api/v1/tags/:env',
    {
      config: { rule: RULES.tagsList },
      schema: { params: Type.Object({ env: Type.String() }), response: { 200: Type.Array(TagWithCount) } },
    },
    async (req) => listTags(deps, envOf(req)),
  );
  app.post(
    '/api/v1/tags/:env/:action',
    {
      config: { rule: RULES.tagsChange },
      schema: { params: Type.Object({ env: Type.String(), action: Type.String() }), body: TagBody, response: { 200: DataResponse } },
    },
    async (req) => ({ data: await tagAction(deps, callerOf(req), envOf(req), req.params.action, req.body, req.ip) }),
  );
}
