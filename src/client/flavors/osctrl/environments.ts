import { DataResponse, EnvironmentMap, MessageResponse, type EnvironmentMapEntry, type MapTarget } from '../../../api/index.js';
import { checkAnswer, needs } from '../../validate.js';
import type { FleetResources } from '../../resources/index.js';
import type { OsctrlSession } from './session.js';
import { seg } from './shapes.js';

export function environmentsResource(s: OsctrlSession) {
  const { http, base, environments, me, accessibleEnvironments } = s;
  return {
    ...base.environments,
    /**
     * osctrl's map is for super-admins; asking it as anyone else writes a "denied access" warning
     * into osctrl's audit log. So the caller is asked first: other users get the environments
     * they have access to, each read as they may (GET /environments/{uuid}, which has the id).
     */
    map: async (target: MapTarget) => {
      const list = (await me()).admin ? await environments() : await accessibleEnvironments();
      const key = (e: EnvironmentMapEntry) => (target === 'id' ? String(e.id) : target === 'uuid' ? e.uuid : e.name);
      return checkAnswer<EnvironmentMap>(EnvironmentMap, Object.fromEntries(list.map((e) => [key(e), e])));
    },
    enrollAction: async (env: string, action: Parameters<FleetResources['environments']['enrollAction']>[1], body: Parameters<FleetResources['environments']['enrollAction']>[2] = {}) => {
      if (action !== 'update') return base.environments.enrollAction(env, action, body);
      // osctrl: one action per package, and the certificate through its own upload endpoint.
      const steps: Array<[string, Record<string, string>]> = [];
      if (body.url_deb_pkg !== undefined) steps.push(['enroll/set_deb', { url_deb_pkg: body.url_deb_pkg }]);
      if (body.url_rpm_pkg !== undefined) steps.push(['enroll/set_rpm', { url_rpm_pkg: body.url_rpm_pkg }]);
      if (body.url_msi_pkg !== undefined) steps.push(['enroll/set_msi', { url_msi_pkg: body.url_msi_pkg }]);
      if (body.url_mac_pkg !== undefined) steps.push(['enroll/set_pkg', { url_mac_pkg: body.url_mac_pkg }]);
      if (body.certificate !== undefined) steps.push(['enroll/cert', { certificate_b64: Buffer.from(body.certificate).toString('base64') }]);
      const said: string[] = [];
      for (const [path, b] of steps) {
        said.push(checkAnswer<{ message: string }>(MessageResponse, await http.request<unknown>('POST', `api/v1/environments/${seg(env)}/${path}`, { body: b })).message);
      }
      return { message: said.join('; ') || 'nothing to change' };
    },
    enrollRead: async (env: string, target: Parameters<FleetResources['environments']['enrollRead']>[1]) => {
      if (target !== 'remove.sh' && target !== 'remove.ps1') return base.environments.enrollRead(env, target);
      return http.request<{ data: string }>('GET', `api/v1/environments/${seg(env)}/remove/${seg(target)}`, { secretResponse: true, schema: needs(DataResponse, 'data') });
    },
  };
}
