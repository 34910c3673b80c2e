import { Type } from '@sinclair/typebox';
import { callerOf, type App } from './request.js';
import type { Deps } from '../context.js';
import { LoginBody, MessageResponse, MfaLoginBody, TokenResponse } from '../../api/index.js';
import { RULES } from '../permissions.js';
import { login, logout } from '../services/auth/auth.js';
import { loginMfa } from '../services/auth/mfa.js';

export function authRoutes(app: App, deps: Deps): void {
  app.post(
    '/api/v1/login/:env',
    {
      config: { rule: RULES.login, limit: 'login' },
      schema: { params: Type.Object({ env: Type.String() }), body: LoginBody, response: { 200: TokenResponse } },
    },
    async (req) => login(deps, req.params.env, req.body, req.ip),
  );
  // Shares the per-IP login limit, so the password and code steps together get 10 a minute.
  app.post(
    '/api/v1/login/mfa',
    { config: { rule: RULES.mfaLogin, limit: 'login' }, schema: { body: MfaLoginBody, response: { 200: TokenResponse } } },
    async (req) => loginMfa(deps, req.body, req.ip),
  );
  // Ends the calling session only (other logins of the same user stay valid).
  app.post('/api/v1/logout', { config: { rule: RULES.logout }, schema: { response: { 200: MessageResponse } } }, async (req) =>
    logout(deps, callerOf(req), req.ip),
  );
}
