import type { HttpClient } from '../http.js';

export const sinksApi = (http: HttpClient) => ({
  http,
});
