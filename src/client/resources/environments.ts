import { Type } from '../../api/type.js';
import type { HttpClient } from '../http.js';
import { needs } from '../validate.js';
import * as S from '../../api/index.js';
import type {
  DataResponse,
  EnrollAction,
  EnrollBody,
  EnrollTarget,
  Environment,
  EnvironmentCreateBody,
  EnvironmentEditBody,
  EnvironmentMap,
  IntervalsBody,
  MapTarget,
  MessageResponse,
} from '../../api/index.js';

const seg = encodeURIComponent;

/** Names and UUIDs are what the map is for; the enroll texts are what a read prints. */
export const MAP = Type.Record(Type.String(), needs(S.EnvironmentMapEntry, 'name', 'uuid'));
export const DATA = needs(S.DataResponse, 'data');

export const environmentsApi = (http: HttpClient) => ({
  /** 4.7 */
  map: (target: MapTarget) => http.request<EnvironmentMap>('GET', `api/v1/environments/map/${seg(target)}`, { schema: MAP }),
  /** GET /api/v1/environments/{env} (contract.md 5): secret, certificate and flags only for env admins. */
  get: (env: string) => http.request<Environment>('GET', `api/v1/environments/${seg(env)}`, { schema: S.Environment }),
  /** Issue 27: POST /api/v1/environments (super-admin); the new environment with its secrets. */
  create: (body: EnvironmentCreateBody) =>
    http.request<Environment>('POST', 'api/v1/environments', { body, secretResponse: true, schema: S.Environment }),
  /** Issue 27: PATCH /api/v1/environments/{env}: only the fields given change. */
  edit: (env: string, body: EnvironmentEditBody) =>
    http.request<Environment>('PATCH', `api/v1/environments/${seg(env)}`, { body, secretResponse: true, schema: S.Environment }),
  /** Issue 27: DELETE /api/v1/environments/{env}, with its nodes. */
  remove: (env: string) =>
    http.request<MessageResponse>('DELETE', `api/v1/environments/${seg(env)}`, { schema: needs(S.MessageResponse, 'message') }),
  /** 4.6: omitted intervals keep their value; returns the whole environment. */
  setIntervals: (env: string, body: IntervalsBody) =>
    http.request<Environment>('PATCH', `api/v1/environments/intervals/${seg(env)}`, { body, schema: S.Environment }),
  /** 4.8 */
  enrollAction: (env: string, action: EnrollAction, body: EnrollBody = {}) =>
    http.request<MessageResponse>('POST', `api/v1/environments/${seg(env)}/enroll/${seg(action)}`, { body, schema: S.MessageResponse }),
  /** 4.9 — the texts embed the enroll secret, so --debug does not print them. */
  enrollRead: (env: string, target: EnrollTarget) =>
    http.request<DataResponse>('GET', `api/v1/environments/${seg(env)}/enroll/${seg(target)}`, { secretResponse: true, schema: DATA }),
});
