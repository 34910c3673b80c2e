// Users (4.5), the user list and "me" (contract.md 5), and the caller's own password (4.3).
import { Type } from '@sinclair/typebox';
import { callerOf, type App } from './request.js';
import type { Deps } from '../context.js';
import { DataResponse, MessageResponse, PasswordChangeBody, User, UserBody } from '../../api/index.js';
import { RULES } from '../permissions.js';
import { listUsers, readMe, userAction } from '../services/users/users.js';
import { changeOwnPassword } from '../services/auth/password.js';

export function usersRoutes(app: App, deps: Deps): void {
  app.get('/api/v1/users', { config: { rule: RULES.users }, schema: { response: { 200: Type.Array(User) } } }, async () => listUsers(deps));
  app.get('/api/v1/users/me', { config: { rule: RULES.me }, schema: { response: { 200: User } } }, async (req) =>
    readMe(deps, callerOf(req)),
  );
  // Checks the current password, so it shares the per-IP login limit (see routes/mfa.ts).
  app.post(
    '/api/v1/users/me/password',
    { config: { rule: RULES.ownPassword, limit: 'login' }, schema: { body: PasswordChangeBody, response: { 200: MessageResponse } } },
    async (req) => ({ message: await changeOwnPassword(deps, callerOf(req), req.body, req.ip) }),
  );
  app.post(
    '/api/v1/users/:username/:action',
    {
      config: { rule: RULES.users },
      schema: { params: Type.Object({ username: Type.String(), action: Type.String() }), body: UserBody, response: { 200: DataResponse } },
    },
    async (req) => ({ data: await userAction(deps, callerOf(req), req.params.username, req.params.action, req.body, req.ip) }),
  );
}
