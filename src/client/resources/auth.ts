import type { HttpClient } from '../http.js';
import { TokenResponse as TokenSchema } from '../../api/index.js';
import type { LoginBody, MfaLoginBody, TokenResponse } from '../../api/index.js';

const seg = encodeURIComponent;

export const authApi = (http: HttpClient) => ({
  /** 4.1 — throws ApiError 401 `mfa_required` (with challenge, methods) when a second factor is needed. */
  login: (env: string, body: LoginBody) => http.request<TokenResponse>('POST', `api/v1/login/${seg(env)}`, { body, schema: TokenSchema }),
  /** 4.2 */
  mfaLogin: (body: MfaLoginBody) => http.request<TokenResponse>('POST', 'api/v1/login/mfa', { body, schema: TokenSchema }),
});
