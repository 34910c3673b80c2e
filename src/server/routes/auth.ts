import { Type } from '@sinclair/typebox';
import type { App } from '../app.js';
import type { Deps } from '../context.js';
import { LoginBody, TokenResponse } from '../../api/index.js';
import { RULES } from '../permissions.js';
import { login } from '../services/auth.js';

export function authRoutes(app: App, deps: Deps): void {
  app.post(
    '/api/v1/login/:env',
    {
      config: { rule: RULES.login, limit: 'login' },
      schema: { params: Type.Object({ env: Type.String() }), body: LoginBody, response: { 200: TokenResponse } },
    },
    async (req) => login(deps, req.params.env, req.body, req.ip),
  );
}
