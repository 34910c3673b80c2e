import type { HttpClient } from '../http.js';
import { TokenResponse as TokenSchema } from '../../api/index.js';
import type { LoginBody, MessageResponse, MfaLoginBody, TokenResponse } from '../../api/index.js';

const seg = encodeURIComponent;

export const authApi = (http: HttpClient) => ({
  /** 4.1 — throws ApiError 401 `mfa_required` (with challenge, methods) when a second factor is needed. */
  login: (env: string, body: LoginBody) => http.request<TokenResponse>('POST', `api/v1/login/${seg(env)}`, { body, schema: TokenSchema }),
  /** 4.2 */
  mfaLogin: (body: MfaLoginBody) => http.request<TokenResponse>('POST', 'api/v1/login/mfa', { body, schema: TokenSchema }),
  /** Ends the calling session on the server: the token answers 401 `token_expired` afterwards. */
  logout: () => http.request<MessageResponse>('POST', 'api/v1/logout'),
});
