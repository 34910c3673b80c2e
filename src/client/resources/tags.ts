import type { HttpClient } from '../http.js';

export const tagsApi = (http: HttpClient) => ({
  http,
});
