import type { HttpClient } from '../http.js';

export const carvesApi = (http: HttpClient) => ({
  http,
});
