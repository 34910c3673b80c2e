import type { HttpClient } from '../http.js';
import type { EnvironmentMap, MapTarget } from '../../api/index.js';

const seg = encodeURIComponent;

export const environmentsApi = (http: HttpClient) => ({
  /** 4.7 */
  map: (target: MapTarget) => http.request<EnvironmentMap>('GET', `api/v1/environments/map/${seg(target)}`),
});
