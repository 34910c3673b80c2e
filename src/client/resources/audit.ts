import type { HttpClient } from '../http.js';

export const auditApi = (http: HttpClient) => ({
  http,
});
