import { Type } from '../../api/type.js';
import type { HttpClient } from '../http.js';
import * as S from '../../api/index.js';
import { needs } from '../validate.js';
import type { Setting, SettingService, SettingUpdateBody } from '../../api/index.js';

const seg = encodeURIComponent;

/** `settings set` checks the value against the stored type: name and type are needed. */
const SETTING = needs(S.Setting, 'name', 'type');
const SETTINGS = Type.Array(SETTING);

export const settingsApi = (http: HttpClient) => ({
  /** 4.14: the env's own rows, then the global rows it does not override. */
  list: (service: SettingService, env: string) =>
    http.request<Setting[]>('GET', `api/v1/settings/${seg(service)}/${seg(env)}`, { schema: SETTINGS, answerName: 'settings' }),
  /** 4.15: the global row, or the env's row when `env` is given. */
  update: (service: SettingService, name: string, body: SettingUpdateBody, env?: string) =>
    http.request<Setting>('PATCH', `api/v1/settings/${seg(service)}/${seg(name)}`, { body, query: { env }, schema: SETTING }),
});
