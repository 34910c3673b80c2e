import type { HttpClient } from '../http.js';

export const statsApi = (http: HttpClient) => ({
  http,
});
