import type { HttpClient } from '../http.js';

export const mfaApi = (http: HttpClient) => ({
  http,
});
