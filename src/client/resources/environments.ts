import type { HttpClient } from '../http.js';
import type {
  DataResponse, EnrollAction, EnrollBody, EnrollTarget, Environment, EnvironmentMap, IntervalsBody, MapTarget, MessageResponse,
} from '../../api/index.js';

const seg = encodeURIComponent;

export const environmentsApi = (http: HttpClient) => ({
  /** 4.7 */
  map: (target: MapTarget) => http.request<EnvironmentMap>('GET', `api/v1/environments/map/${seg(target)}`),
  /** GET /api/v1/environments/{env} (contract.md 5): secret, certificate and flags only for env admins. */
  get: (env: string) => http.request<Environment>('GET', `api/v1/environments/${seg(env)}`),
  /** 4.6: omitted intervals keep their value; returns the whole environment. */
  setIntervals: (env: string, body: IntervalsBody) => http.request<Environment>('PATCH', `api/v1/environments/intervals/${seg(env)}`, { body }),
  /** 4.8 */
  enrollAction: (env: string, action: EnrollAction, body: EnrollBody = {}) =>
    http.request<MessageResponse>('POST', `api/v1/environments/${seg(env)}/enroll/${seg(action)}`, { body }),
  /** 4.9 — the texts embed the enroll secret, so --debug does not print them. */
  enrollRead: (env: string, target: EnrollTarget) =>
    http.request<DataResponse>('GET', `api/v1/environments/${seg(env)}/enroll/${seg(target)}`, { secretResponse: true }),
});
