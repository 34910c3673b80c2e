import type { HttpClient } from '../http.js';
import * as S from '../../api/index.js';
import { needs } from '../validate.js';
import type { LoginBody, MessageResponse, MfaLoginBody, TokenResponse as Token } from '../../api/index.js';

/** A login is nothing without its token; csrf_token and the rest may be missing. */
export const TokenSchema = needs(S.TokenResponse, 'token');

const seg = encodeURIComponent;

export const authApi = (http: HttpClient) => ({
  /** 4.1 — throws ApiError 401 `mfa_required` (with challenge, methods) when a second factor is needed. */
  login: (env: string, body: LoginBody) => http.request<Token>('POST', `api/v1/login/${seg(env)}`, { body, schema: TokenSchema }),
  /** 4.2 */
  mfaLogin: (body: MfaLoginBody) => http.request<Token>('POST', 'api/v1/login/mfa', { body, schema: TokenSchema }),
  /** Ends the calling session on the server: the token answers 401 `token_expired` afterwards. */
  logout: () => http.request<MessageResponse>('POST', 'api/v1/logout', { schema: S.MessageResponse }),
});
