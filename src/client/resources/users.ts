import { Type } from '../../api/type.js';
import type { HttpClient } from '../http.js';
import * as S from '../../api/index.js';
import { needs } from '../validate.js';
import type { DataResponse, MessageResponse, PasswordChangeBody, User, UserAction, UserBody } from '../../api/index.js';

const seg = encodeURIComponent;

const USER = needs(S.User, 'username');
const USERS = Type.Array(USER);

export const usersApi = (http: HttpClient) => ({
  /** GET /api/v1/users (contract.md 5; super-admin) */
  list: () => http.request<User[]>('GET', 'api/v1/users', { schema: USERS, answerName: 'users' }),
  /** GET /api/v1/users/me */
  me: () => http.request<User>('GET', 'api/v1/users/me', { schema: USER }),
  /** 4.5 — the body's username is always the path's (the server insists on it). */
  action: (username: string, action: UserAction, body: Omit<UserBody, 'username'> = {}) =>
    http.request<DataResponse>('POST', `api/v1/users/${seg(username)}/${seg(action)}`, {
      body: { ...body, username },
      schema: S.DataResponse,
    }),
  /** 4.3 */
  changeOwnPassword: (body: Required<PasswordChangeBody>) =>
    http.request<MessageResponse>('POST', 'api/v1/users/me/password', { body, schema: S.MessageResponse }),
});
