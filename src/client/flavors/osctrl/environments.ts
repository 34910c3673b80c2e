import { DataResponse, EnvironmentMap, MessageResponse, type EnvironmentMapEntry, type MapTarget } from '../../../api/index.js';
import { CliError, ExitCode } from '../../../errors.js';
import { checkAnswer, needs } from '../../validate.js';
import type { FleetResources } from '../../resources/index.js';
import type { OsctrlSession } from './session.js';
import { seg } from './shapes.js';

export function environmentsResource(s: OsctrlSession) {
  const { http, base, environments, me, accessibleEnvironments } = s;
  /**
   * osctrl's `rotate` renews the enroll secret path (the enroll.sh/enroll.ps1 URLs) and opens
   * enrollment for 24 hours, and keeps the enroll secret: no osctrl 0.5.4 API changes it, and
   * osctrl-tls enrolls anyone who sends it, expired enrollment or not. An operator rotating a
   * leaked secret must not be told it is done: the secret is read before and after.
   */
  const rotate = async (env: string, body: Parameters<FleetResources['environments']['enrollAction']>[2]) => {
    const secret = async () => (await base.environments.enrollRead(env, 'secret')).data;
    const before = await secret();
    const res = await base.environments.enrollAction(env, 'rotate', body);
    if ((await secret()) !== before) return res;
    throw new CliError(
      `the enroll secret of ${env} was NOT rotated: osctrl renewed only the enroll path (new enroll.sh/enroll.ps1 URLs, enrollment open 24 hours) and kept the secret, which still enrolls nodes`,
      ExitCode.error,
      `osctrl has no API to change the secret; to stop all enrolls into ${env}: fleetctl enroll expire ${env} --yes`,
    );
  };
  /**
   * osctrl's enroll expiry only ends the enroll.sh/enroll.ps1 links: osctrl-tls enrolls any agent
   * that sends the secret, expired or not, unless the environment's accept_enrolls is off. So
   * `expire` (new nodes can no longer enrol) also turns accept_enrolls off, and `extend` and
   * `notexpire` (nodes may enrol) turn it back on: what the commands say is then what happens.
   */
  const acceptEnrolls = (env: string, on: boolean) =>
    http.request<unknown>('PATCH', `api/v1/environments/${seg(env)}`, { body: { accept_enrolls: on } });
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
      if (action === 'rotate') return rotate(env, body);
      if (action === 'expire' || action === 'extend' || action === 'notexpire') {
        const res = await base.environments.enrollAction(env, action, body);
        await acceptEnrolls(env, action !== 'expire');
        return res;
      }
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
