import { Type } from '@sinclair/typebox';
import { callerOf, type App } from '../app.js';
import type { Deps } from '../context.js';
import { RULES } from '../permissions.js';
import { environmentMap } from '../services/environments.js';

export function environmentRoutes(app: App, deps: Deps): void {
  app.get(
    '/api/v1/environments/map/:target',
    { config: { rule: RULES.envMap }, schema: { params: Type.Object({ target: Type.String() }) } },
    async (req) => environmentMap(deps, callerOf(req), req.params.target),
  );
}
