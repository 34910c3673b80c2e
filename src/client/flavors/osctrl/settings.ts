import { Type } from '../../../api/type.js';
import { Setting } from '../../../api/index.js';
import type { Setting as SettingT } from '../../../api/index.js';
import { checkAnswer } from '../../validate.js';
import type { FleetResources } from '../../resources/index.js';
import type { OsctrlSession } from './session.js';
import { seg, RawSetting, refuse, settingFromOsctrl } from './shapes.js';

export function settingsResource(s: OsctrlSession) {
  const { http } = s;
  return {
    list: async (service: Parameters<FleetResources['settings']['list']>[0], env: string) => {
      // osctrl's /{service}/{env} holds only the env's own rows (normally none); the global rows are
      // at /{service}. This API lists the env's rows, then the global rows it does not override.
      const own = checkAnswer<Array<Record<string, unknown>>>(
        Type.Array(RawSetting),
        await http.request<unknown>('GET', `api/v1/settings/${seg(service)}/${seg(env)}`),
        'settings',
      );
      const global = checkAnswer<Array<Record<string, unknown>>>(
        Type.Array(RawSetting),
        await http.request<unknown>('GET', `api/v1/settings/${seg(service)}`),
        'settings',
      );
      const rows = [...own, ...global.filter((g) => g.EnvironmentID === 0 && !own.some((o) => o.Name === g.Name))];
      return rows.map((r, i) => checkAnswer<SettingT>(Setting, settingFromOsctrl(r), `settings[${i}]`));
    },
    update: async (
      service: Parameters<FleetResources['settings']['update']>[0],
      name: string,
      body: Parameters<FleetResources['settings']['update']>[2],
      env?: string,
    ) => {
      // osctrl ignores ?env= and would change the global value.
      if (env) refuse('env-settings');
      const r = await http.request<unknown>('PATCH', `api/v1/settings/${seg(service)}/${seg(name)}`, { body });
      return checkAnswer<SettingT>(Setting, settingFromOsctrl(checkAnswer<Record<string, unknown>>(RawSetting, r)));
    },
  };
}
