// The caller's second factors: TOTP enrolment and WebAuthn credentials (contract.md 2).
import { Type } from '@sinclair/typebox';
import { callerOf, type App } from './request.js';
import type { Deps } from '../context.js';
import {
  MessageResponse,
  PasswordBody,
  TotpBeginResponse,
  TotpConfirmBody,
  TotpConfirmResponse,
  WebauthnCredential,
} from '../../api/index.js';
import { RULES } from '../permissions.js';
import {
  beginTotp,
  confirmTotp,
  disableTotp,
  listWebauthn,
  regenerateRecoveryCodes,
  removeWebauthn,
} from '../services/auth/mfa-factors.js';

export function mfaRoutes(app: App, deps: Deps): void {
  app.post('/api/v1/users/me/mfa/totp', { config: { rule: RULES.ownMfa }, schema: { response: { 200: TotpBeginResponse } } }, async (req) =>
    beginTotp(deps, callerOf(req), req.ip),
  );
  app.post(
    '/api/v1/users/me/mfa/totp/confirm',
    { config: { rule: RULES.ownMfa }, schema: { body: TotpConfirmBody, response: { 200: TotpConfirmResponse } } },
    async (req) => ({ recovery_codes: await confirmTotp(deps, callerOf(req), req.body.code, req.ip) }),
  );
  // Endpoints that check the account password share the per-IP login limit: otherwise a stolen
  // token would turn them into a password-guessing oracle at the per-user rate (1200/min).
  app.delete(
    '/api/v1/users/me/mfa/totp',
    { config: { rule: RULES.ownMfa, limit: 'login' }, schema: { body: PasswordBody, response: { 200: MessageResponse } } },
    async (req) => ({ message: await disableTotp(deps, callerOf(req), req.body.password, req.ip) }),
  );
  app.post(
    '/api/v1/users/me/mfa/recovery-codes',
    { config: { rule: RULES.ownMfa, limit: 'login' }, schema: { body: PasswordBody, response: { 200: TotpConfirmResponse } } },
    async (req) => ({ recovery_codes: await regenerateRecoveryCodes(deps, callerOf(req), req.body.password, req.ip) }),
  );
  app.get(
    '/api/v1/mfa/webauthn',
    { config: { rule: RULES.ownMfa }, schema: { response: { 200: Type.Array(WebauthnCredential) } } },
    async (req) => listWebauthn(deps, callerOf(req)),
  );
  app.delete(
    '/api/v1/mfa/webauthn/:id',
    {
      config: { rule: RULES.ownMfa, limit: 'login' },
      schema: { params: Type.Object({ id: Type.String() }), body: PasswordBody, response: { 200: MessageResponse } },
    },
    async (req) => ({ message: await removeWebauthn(deps, callerOf(req), req.params.id, req.body.password, req.ip) }),
  );
}
