import type { Static } from '@sinclair/typebox';
import { Type } from './type.js';
import { PASSWORD_MIN_LENGTH, MfaMethods } from './constants.js';
export { PASSWORD_MIN_LENGTH, MfaMethods };

/** 4.1 */
export const LoginBody = Type.Object({
  username: Type.String(),
  password: Type.String(),
  exp_hours: Type.Optional(Type.Integer()),
});
export type LoginBody = Static<typeof LoginBody>;

export const TokenResponse = Type.Object({
  token: Type.String(),
  csrf_token: Type.String(),
  /** Only after a login with a recovery code: how many unused codes the account has left. */
  recovery_codes_left: Type.Optional(Type.Integer()),
});
export type TokenResponse = Static<typeof TokenResponse>;

export const EXP_HOURS_DEFAULT = 3;
export const EXP_HOURS_MAX = 720;

/** 401 body when a second factor is needed (contract.md 2, MFA). */
export interface MfaRequiredBody {
  code: 'mfa_required';
  error: string;
  challenge: string;
  methods: MfaMethod[];
}
export type MfaMethod = (typeof MfaMethods)[number];

/** 4.2 */
export const MfaLoginBody = Type.Object({
  challenge: Type.String(),
  code: Type.String(),
  method: Type.String(),
});
export type MfaLoginBody = Static<typeof MfaLoginBody>;

/** 4.3 */
export const PasswordChangeBody = Type.Object({
  current_password: Type.Optional(Type.String()),
  new_password: Type.Optional(Type.String()),
});
export type PasswordChangeBody = Static<typeof PasswordChangeBody>;

/** TOTP enrolment (added endpoints, contract.md 2) */
export const TotpBeginResponse = Type.Object({ secret: Type.String(), otpauth_uri: Type.String() });
export type TotpBeginResponse = Static<typeof TotpBeginResponse>;
export const TotpConfirmBody = Type.Object({ code: Type.String() });
export const TotpConfirmResponse = Type.Object({ recovery_codes: Type.Array(Type.String()) });
/** POST /api/v1/users/me/mfa/recovery-codes answers the same shape: the new codes, shown once. */
export type TotpConfirmResponse = Static<typeof TotpConfirmResponse>;
export const PasswordBody = Type.Object({ password: Type.String() });
export type PasswordBody = Static<typeof PasswordBody>;

/** GET /api/v1/mfa/webauthn items */
export const WebauthnCredential = Type.Object({
  id: Type.String(),
  name: Type.String(),
  created_at: Type.String(),
  last_used_at: Type.String(),
});
export type WebauthnCredential = Static<typeof WebauthnCredential>;
