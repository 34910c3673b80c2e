import { Type } from '@sinclair/typebox';
import { callerOf, envOf, type App } from './request.js';
import type { Deps } from '../context.js';
import { Setting, SettingUpdateBody } from '../../api/index.js';
import { RULES } from '../permissions.js';
import { readSettings, updateSetting } from '../services/environments/settings.js';

export function settingsRoutes(app: App, deps: Deps): void {
  app.get(
    '/api/v1/settings/:service/:env',
    {
      config: { rule: RULES.settingsRead },
      schema: { params: Type.Object({ service: Type.String(), env: Type.String() }), response: { 200: Type.Array(Setting) } },
    },
    async (req) => readSettings(deps, req.params.service, envOf(req)),
  );
  app.patch(
    '/api/v1/settings/:service/:name',
    {
      config: { rule: RULES.settingsUpdate },
      schema: {
        params: Type.Object({ service: Type.String(), name: Type.String() }),
        querystring: Type.Object({ env: Type.Optional(Type.String()) }),
        body: SettingUpdateBody,
        response: { 200: Setting },
      },
    },
    async (req) => updateSetting(deps, callerOf(req), req.params.service, req.params.name, req.query.env, req.body, req.ip),
  );
}
