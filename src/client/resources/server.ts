import type { HttpClient } from '../http.js';
import { needs } from '../validate.js';
import * as S from '../../api/index.js';
import type { ServerVersion } from '../../api/index.js';

export const serverApi = (http: HttpClient) => ({
  /** Issue 27: GET /api/v1/version, for any signed-in user. */
  version: () => http.request<ServerVersion>('GET', 'api/v1/version', { schema: needs(S.ServerVersion, 'version') }),
});
