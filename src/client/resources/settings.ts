import type { HttpClient } from '../http.js';

export const settingsApi = (http: HttpClient) => ({
  http,
});
