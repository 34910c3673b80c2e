import type { HttpClient } from '../http.js';

export const usersApi = (http: HttpClient) => ({
  http,
});
