import { Type } from '../../api/type.js';
import type { HttpClient } from '../http.js';
import * as S from '../../api/index.js';
import { needs } from '../validate.js';
import type { MessageResponse, TotpBeginResponse, TotpConfirmResponse, WebauthnCredential } from '../../api/index.js';

const seg = encodeURIComponent;

const WEBAUTHN_LIST = Type.Array(needs(S.WebauthnCredential, 'id'));
const TOTP_BEGIN = needs(S.TotpBeginResponse, 'secret', 'otpauth_uri');
const CODES = needs(S.TotpConfirmResponse, 'recovery_codes');

export const mfaApi = (http: HttpClient) => ({
  /** Begin TOTP enrolment (contract.md 2): a new secret, not active until confirmed. */
  totpBegin: () => http.request<TotpBeginResponse>('POST', 'api/v1/users/me/mfa/totp', { schema: TOTP_BEGIN }),
  /** Confirm with a code from the authenticator: enables TOTP, returns the recovery codes (once). */
  totpConfirm: (code: string) =>
    http.request<TotpConfirmResponse>('POST', 'api/v1/users/me/mfa/totp/confirm', { body: { code }, schema: CODES }),
  /** Disable TOTP and the recovery codes. */
  totpDisable: (password: string) =>
    http.request<MessageResponse>('DELETE', 'api/v1/users/me/mfa/totp', { body: { password }, schema: S.MessageResponse }),
  /** Replace the recovery codes with ten new ones (password confirmed); returns them (once). */
  recoveryCodesRegenerate: (password: string) =>
    http.request<TotpConfirmResponse>('POST', 'api/v1/users/me/mfa/recovery-codes', { body: { password }, schema: CODES }),
  /** The caller's WebAuthn credentials. */
  webauthnList: () => http.request<WebauthnCredential[]>('GET', 'api/v1/mfa/webauthn', { schema: WEBAUTHN_LIST }),
  /** 4.4 */
  webauthnRemove: (id: string, password: string) =>
    http.request<MessageResponse>('DELETE', `api/v1/mfa/webauthn/${seg(id)}`, { body: { password }, schema: S.MessageResponse }),
});
