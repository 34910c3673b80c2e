import {
  DataResponse,
  Environment,
  EnvironmentMap,
  MessageResponse,
  type EnvironmentCreateBody,
  type EnvironmentEditBody,
  type EnvironmentMapEntry,
  type IntervalsBody,
  type MapTarget,
} from '../../../api/index.js';
import { ApiError, CliError, ExitCode, UsageError } from '../../../errors.js';
import { Type } from '../../../api/type.js';
import { UnexpectedAnswerError, checkAnswer, needs } from '../../validate.js';
import type { FleetResources } from '../../resources/index.js';
import type { OsctrlSession } from './session.js';
import { refuse, seg } from './shapes.js';

/**
 * osctrl 0.5.4's own filters for an environment (pkg/environments/filters.go), checked before any
 * request: its POST and PATCH answer only 400 "invalid name, hostname, type, or icon". Names are
 * stored lower-cased; a host is a name or address without a port (osctrl-cli in database mode
 * stores one, its API does not), so its agents connect on 443.
 */
const OSCTRL_NAME = /^[a-z0-9_-]+$/;
const OSCTRL_HOST = /^[a-zA-Z0-9.-]+$/;
/** What a new environment is sent: osctrl refuses an empty type or icon, and its default icon ("fas fa-wrench") fails its own filter. */
const OSCTRL_TYPE = 'osquery';
const OSCTRL_ICON = 'server';

function checkName(name: string): void {
  if (!OSCTRL_NAME.test(name.trim().toLowerCase())) {
    throw new UsageError(
      `invalid environment name ${JSON.stringify(name)} for osctrl: letters, digits, "-" and "_" only (osctrl stores names in lower case)`,
    );
  }
}

function checkHost(host: string): void {
  const h = host.trim();
  const port = /^([a-zA-Z0-9.-]+):\d+$/.exec(h);
  if (port) {
    refuse(
      'an agent host with a port (--agent-host HOST:PORT)',
      `osctrl's API takes a host name only, and its agents then connect on port 443: give --agent-host ${port[1]} with osctrl-tls on 443 (only osctrl-cli in database mode, "osctrl-cli --db env add --hostname HOST:PORT", stores a port)`,
    );
  }
  if (!OSCTRL_HOST.test(h))
    throw new UsageError(
      `invalid agent host ${JSON.stringify(host)} for osctrl: a host name or IPv4 address (letters, digits, "." and "-"), no port`,
    );
}

/** The intervals of a create or edit body, for osctrl's PATCH environments/intervals/{env}. */
function intervalsOf(b: IntervalsBody): IntervalsBody | undefined {
  const out: IntervalsBody = {};
  if (b.config_interval !== undefined) out.config_interval = b.config_interval;
  if (b.log_interval !== undefined) out.log_interval = b.log_interval;
  if (b.query_interval !== undefined) out.query_interval = b.query_interval;
  return Object.keys(out).length ? out : undefined;
}

/** The options text (JSON) of osctrl's GET environments/config/{env}. */
const ConfigOptions = Type.Object({ options: Type.String() });

/**
 * The configuration refresh reaches osquery only as its flag (--config_tls_refresh), and osctrl's API
 * cannot rewrite an environment's flags: a config interval would be stored and never used.
 */
function refuseConfigInterval(b: IntervalsBody): void {
  if (b.config_interval === undefined) return;
  refuse(
    'a configuration refresh interval (--config)',
    "osctrl's API stores it but cannot put it in the agents' flags (its PATCH environments/config refuses a flags text); osctrl's web UI (the environment's Intervals) regenerates the flags",
  );
}

export function environmentsResource(s: OsctrlSession) {
  const { http, base, environments, me, accessibleEnvironments, envUuid } = s;
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
  /** osctrl's PATCH environments/{env}: name, hostname, icon, type, accept_enrolls, debug_http. */
  const patchEnv = async (env: string, b: EnvironmentEditBody) => {
    const patch: Record<string, unknown> = {};
    for (const k of ['name', 'hostname', 'icon', 'type', 'accept_enrolls', 'debug_http'] as const) if (b[k] !== undefined) patch[k] = b[k];
    if (Object.keys(patch).length) await http.request<unknown>('PATCH', `api/v1/environments/${seg(env)}`, { body: patch });
  };
  /**
   * osctrl's PATCH environments/intervals only stores the three numbers: the flags it hands agents
   * keep the old ones (its web UI regenerates them; its API cannot: PATCH environments/config checks
   * the flags text as JSON and refuses it) and running agents never hear of them. So, as this API's
   * own server does, the environment's configuration options get distributed_interval and
   * logger_tls_period, which agents take from each configuration they fetch, new ones from their
   * first (checked with a real osqueryd 5.23.0 enrolled through osctrl-tls: its flagfile's
   * distributed_interval 60 became the options' 7). The configuration refresh is a flag only
   * (config_refresh in the options left the same agent at 300): refused, see refuseConfigInterval.
   */
  const setIntervals = async (env: string, body: IntervalsBody) => {
    refuseConfigInterval(body);
    const updated = await base.environments.setIntervals(env, body);
    const raw = await http.request<unknown>('GET', `api/v1/environments/config/${seg(env)}`);
    const { options: text } = checkAnswer<{ options: string }>(ConfigOptions, raw, 'config');
    let options: Record<string, unknown>;
    try {
      const parsed: unknown = JSON.parse(text.trim() || '{}');
      options = parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
    } catch {
      throw new UnexpectedAnswerError(
        `the options of environment ${env} on osctrl are not JSON: the intervals were stored, not sent to agents`,
      );
    }
    if (options.distributed_interval !== updated.query_interval || options.logger_tls_period !== updated.log_interval) {
      const merged = { ...options, distributed_interval: updated.query_interval, logger_tls_period: updated.log_interval };
      await http.request<unknown>('PATCH', `api/v1/environments/config/${seg(env)}`, {
        body: { options: JSON.stringify(merged, null, 2) },
      });
    }
    return updated;
  };
  return {
    ...base.environments,
    setIntervals,
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
    enrollAction: async (
      env: string,
      action: Parameters<FleetResources['environments']['enrollAction']>[1],
      body: Parameters<FleetResources['environments']['enrollAction']>[2] = {},
    ) => {
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
      if (body.certificate !== undefined)
        steps.push(['enroll/cert', { certificate_b64: Buffer.from(body.certificate).toString('base64') }]);
      const said: string[] = [];
      for (const [path, b] of steps) {
        said.push(
          checkAnswer<{ message: string }>(
            MessageResponse,
            await http.request<unknown>('POST', `api/v1/environments/${seg(env)}/${path}`, { body: b }),
          ).message,
        );
      }
      return { message: said.join('; ') || 'nothing to change' };
    },
    /**
     * Issue 27. osctrl: POST environments {name, hostname, type "osquery", an icon} (201; it stores
     * the name in lower case; name and host checked first by its own rules), then its intervals by their own endpoint, and enrollment made open until closed
     * (enroll/notexpire, and accept_enrolls on: osctrl-tls goes by that switch), as this API's new
     * environments are. osctrl has no
     * server-wide agent URL, so the agent host must be given; windows and detail refresh are refused
     * by the command (exit 8) before this runs.
     */
    create: async (body: EnvironmentCreateBody) => {
      if (!body.hostname)
        throw new UsageError(
          'osctrl needs the agent host of a new environment (its osctrl-tls address agents reach): give --agent-host HOST',
        );
      checkName(body.name);
      checkHost(body.hostname);
      refuseConfigInterval(body);
      const post = { name: body.name, hostname: body.hostname, type: body.type || OSCTRL_TYPE, icon: body.icon || OSCTRL_ICON };
      const created = checkAnswer<{ uuid: string }>(
        needs(Environment, 'uuid'),
        await http.request<unknown>('POST', 'api/v1/environments', { body: post }),
        'environment',
      );
      const intervals = intervalsOf(body);
      if (intervals) await setIntervals(created.uuid, intervals);
      // Open until closed, then the switches asked for (accept_enrolls false closes it again).
      await base.environments.enrollAction(created.uuid, 'notexpire');
      await patchEnv(created.uuid, { accept_enrolls: body.accept_enrolls ?? true, debug_http: body.debug_http });
      return base.environments.get(created.uuid);
    },
    /** osctrl: PATCH environments/{env}, and PATCH environments/intervals/{env} for the intervals. */
    edit: async (env: string, body: EnvironmentEditBody) => {
      if (body.name !== undefined) checkName(body.name);
      if (body.hostname !== undefined) checkHost(body.hostname);
      refuseConfigInterval(body);
      const uuid = await envUuid(env);
      await patchEnv(uuid, body);
      const intervals = intervalsOf(body);
      if (intervals) await setIntervals(uuid, intervals);
      return base.environments.get(uuid);
    },
    /**
     * osctrl's DELETE environments/{env} leaves the environment's nodes in its database; "with its
     * nodes" is each node deleted first (POST nodes/{env}/delete, as `nodes delete`), then the
     * environment.
     */
    remove: async (env: string) => {
      const uuid = await envUuid(env);
      const gone = new Set<string>();
      for (;;) {
        const page = await base.nodes.list(uuid, { page: 1, page_size: 500 });
        if (page.items.length === 0) break;
        for (const n of page.items) {
          // A node osctrl listed again after its delete answered: stop rather than loop.
          if (gone.has(n.uuid))
            throw new ApiError(500, 'internal', `osctrl still lists node ${n.uuid} after deleting it; the environment was not deleted`);
          await base.nodes.delete(uuid, n.uuid);
          gone.add(n.uuid);
        }
      }
      const deleted = gone.size;
      const r = checkAnswer<{ message: string }>(
        needs(MessageResponse, 'message'),
        await http.request<unknown>('DELETE', `api/v1/environments/${seg(uuid)}`),
      );
      return { message: `${r.message} with ${deleted} node${deleted === 1 ? '' : 's'}` };
    },
    enrollRead: async (env: string, target: Parameters<FleetResources['environments']['enrollRead']>[1]) => {
      if (target !== 'remove.sh' && target !== 'remove.ps1') return base.environments.enrollRead(env, target);
      return http.request<{ data: string }>('GET', `api/v1/environments/${seg(env)}/remove/${seg(target)}`, {
        secretResponse: true,
        schema: needs(DataResponse, 'data'),
      });
    },
  };
}
