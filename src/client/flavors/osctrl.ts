// osctrl 0.5.4 (github.com/jmpsec/osctrl) speaks the paths of this API with other shapes and
// parameters. This is the one place that knows: requests are mapped, answers normalised into the
// src/api shapes (then checked against them), and what osctrl lacks is refused before any
// request. Wire facts are from a real osctrl-api, osctrl-tls and osctrl-cli built at commit
// 3c1c5ab4, with agents enrolled (recorded in test/fixtures/osctrl/, docs/osctrl.md).
import { Type, type Static } from '@sinclair/typebox';
import {
  AuditLogEntry, CarveFile, CarveQuery, DataResponse, DistributedQuery, EnvironmentMap, MessageResponse, Paginated, Setting,
  TagTypes, TagWithCount, TokenResponse, User, type CarveDetail, type EnvironmentMapEntry, type MapTarget, type Page, type QueryResult,
  type QueryResultsPage, type QueryRunRequest, type QueryRunResponse, type UserBody,
} from '../../api/index.js';
import type { Setting as SettingT } from '../../api/index.js';
import { platformBucket } from '../../lib/platforms.js';
import { ApiError, CliError, ExitCode } from '../../errors.js';
import type { HttpClient } from '../http.js';
import { checkAnswer, needs } from '../validate.js';
import type { FleetResources } from '../index.js';
import { FEATURE_NAMES, NotSupportedError, type Feature } from './index.js';
import { osctrlConfig } from './osctrl-config.js';

const seg = encodeURIComponent;

// osctrl leaves fields out (its Go structs are `omitempty`, and it has none of this API's derived
// fields): checkAnswer, as for every answer, fills them with zero values and checks the types of
// what came.

// Raw osctrl shapes (PascalCase where the Go structs have no json tags); needs() names what is used.
const RawMapEntry = needs(Type.Object({ Name: Type.String(), UUID: Type.String(), ID: Type.Integer() }), 'Name', 'UUID');
const RawMap = Type.Record(Type.String(), RawMapEntry);
const RawLoginEnv = needs(Type.Object({ uuid: Type.String(), name: Type.String() }), 'uuid', 'name');
const RawAccess = Type.Object({ user: Type.Boolean(), query: Type.Boolean(), carve: Type.Boolean(), admin: Type.Boolean() });
type Access = { user: boolean; query: boolean; carve: boolean; admin: boolean };
const RawPermissions = Type.Record(Type.String(), RawAccess);
const RawUser = needs(Type.Object({
  username: Type.String(), email: Type.String(), fullname: Type.String(), admin: Type.Boolean(), service: Type.Boolean(),
  created_at: Type.String(), last_access: Type.String(),
}), 'username');
const RawMe = Type.Composite([RawUser, Type.Object({ permissions: Type.Optional(RawPermissions) })]);
const RawSetting = needs(Type.Object({
  ID: Type.Integer(), Name: Type.String(), Service: Type.String(), Type: Type.String(), EnvironmentID: Type.Integer(),
  String: Type.String(), Boolean: Type.Boolean(), Integer: Type.Integer(), Info: Type.String(), CreatedAt: Type.String(), UpdatedAt: Type.String(),
}), 'Name', 'Type');
const RawQuery = needs(Type.Object({ ...DistributedQuery.properties }), 'name');
/** One node's answer as osctrl stores it: the rows as a JSON text (`data`), `status` 0 or osquery's error code. */
const RawResult = needs(Type.Object({ id: Type.Integer(), created_at: Type.String(), uuid: Type.String(), data: Type.String(), status: Type.Integer() }), 'id', 'uuid');
const RawResultsPage = needs(Type.Object({ items: Type.Array(RawResult), page: Type.Integer(), total_pages: Type.Integer(), total_items: Type.Integer() }), 'items');
const NAME_ANSWER = needs(Type.Object({ query_name: Type.String() }), 'query_name');

/** When fleetctl is not told (--expire-hours), queries and carves expire after this many hours, as with osctrl-cli. */
export const OSCTRL_DEFAULT_EXPIRE_HOURS = 6;
/** osctrl's own page sizes: results up to 1000, lists up to 500. */
const RESULTS_PAGE = 1000;
const LIST_PAGE = 500;

/** The feature names refusals use (docs/osctrl.md lists them). */
const refuse = (feature: Feature | string, hint?: string): never => {
  throw new NotSupportedError(feature in FEATURE_NAMES ? FEATURE_NAMES[feature as Feature] : feature, hint);
};

export function osctrlResources(http: HttpClient, base: FleetResources) {
  let mapCache: Promise<EnvironmentMapEntry[]> | undefined;
  /** Every environment once, with ids (osctrl's map, super-admins only, lists each under its name and its UUID). */
  const environments = () =>
    (mapCache ??= http.request<unknown>('GET', 'api/v1/environments/map/id').then((raw) => {
      const m = checkAnswer<Record<string, { Name: string; UUID: string; ID: number }>>(RawMap, raw);
      return Object.values(m).map((e) => ({ id: e.ID, name: e.Name, uuid: e.UUID }));
    }));
  let namesCache: Promise<EnvironmentMapEntry[]> | undefined;
  /**
   * Names and UUIDs for anyone: osctrl's pre-login list. Used to resolve names, so that a user who is
   * not a super-admin never trips osctrl's "denied access" audit entries with a map request.
   */
  const envNames = () =>
    (namesCache ??= http.request<unknown>('GET', 'api/v1/login/environments').then((raw) =>
      checkAnswer<Array<{ uuid: string; name: string }>>(Type.Array(RawLoginEnv), raw, 'environments').map((x) => ({ id: 0, ...x })),
    ));
  /** osctrl matches permissions (and UUID targets) on UUIDs verbatim: a name there would grant nothing. */
  const envUuid = async (ref: string): Promise<string> => {
    const e = (await envNames()).find((x) => x.uuid === ref || x.name === ref || x.uuid.toLowerCase() === ref.toLowerCase());
    if (!e) throw new ApiError(404, 'not_found', `environment "${ref}" not found`);
    return e.uuid;
  };

  let meCache: Promise<{ admin: boolean; permissions?: Record<string, Access> }> | undefined;
  const me = () => (meCache ??= http.request<unknown>('GET', 'api/v1/users/me').then((raw) => checkAnswer<{ admin: boolean; permissions?: Record<string, Access> }>(RawMe, raw)));
  const accessibleEnvironments = async (): Promise<EnvironmentMapEntry[]> => {
    const perms = (await me()).permissions ?? {};
    const known = await envNames();
    const out: EnvironmentMapEntry[] = [];
    for (const e of known) {
      const a = perms[e.uuid];
      if (!a || !(a.user || a.admin)) continue; // osctrl's read of an environment wants user level (or an admin row first)
      const env = checkAnswer<{ id: number }>(needs(Type.Object({ id: Type.Integer() }), 'id'), await http.request<unknown>('GET', `api/v1/environments/${seg(e.uuid)}`));
      out.push({ id: env.id, name: e.name, uuid: e.uuid });
    }
    return out;
  };
  const toUser = async (raw: unknown, perms: Record<string, Access>, what: string): Promise<User> => {
    const u = checkAnswer<{ last_access: string; created_at: string }>(RawUser, raw, what);
    const envs = Object.keys(perms).length ? await envNames() : [];
    // Ids only when the map was read (super-admins): no request of its own.
    const ids = Object.keys(perms).length && mapCache ? await mapCache.catch(() => []) : [];
    // osctrl checks access by the environment's UUID; rows stored under a name (osctrl-cli's
    // `user add -e NAME` writes those) grant nothing there, so only the UUID rows are shown.
    const environmentsOut = Object.entries(perms)
      .filter(([uuid, a]) => (a.user || a.query || a.carve || a.admin) && envs.some((x) => x.uuid === uuid))
      .map(([uuid, a]) => {
        const e = envs.find((x) => x.uuid === uuid);
        return { id: ids.find((x) => x.uuid === uuid)?.id ?? 0, name: e?.name ?? uuid, uuid, user: a.user, query: a.query, carve: a.carve, admin: a.admin };
      });
    return checkAnswer<User>(User, { ...u, environments: environmentsOut, mfa: { totp: false, webauthn: 0 }, api: false, last_login_at: u.last_access }, what);
  };
  const permissionsOf = async (username: string) =>
    checkAnswer<{ permissions: Record<string, Access> }>(
      needs(Type.Object({ permissions: RawPermissions }), 'permissions'),
      await http.request<unknown>('GET', `api/v1/users/${seg(username)}/permissions`),
    ).permissions;
  /**
   * The osctrl permission rows for a user body. osctrl checks a level by reading the env's rows in
   * order and answering with the first row of that level, unless an admin row came first; its
   * permissions endpoint writes the user row first. So `user: false` next to `admin: true` is a
   * user locked out of the environment: every level granted includes user, and admin all four
   * (osctrl's own GenEnvAccess does the same). No level at all (`--level none`) is no access.
   */
  const accessOf = (b: UserBody): Access => {
    const admin = b.admin_access ?? false;
    const query = admin || (b.query_access ?? false);
    const carve = admin || (b.carve_access ?? false);
    const user = admin || query || carve || (b.user_access ?? true);
    return { user, query, carve, admin };
  };
  const setAccess = async (username: string, envRefs: string[], access: Access) => {
    const uuids = await Promise.all(envRefs.map(envUuid)); // all resolved before anything changes
    for (const env_uuid of uuids) await http.request('POST', `api/v1/users/${seg(username)}/permissions`, { body: { env_uuid, access } });
  };
  /**
   * osctrl's remove answers 200 for a user that does not exist, and its read of one user answers
   * 500: the list (the same super-admin right as the change) says whether the user is there.
   */
  const userExists = async (username: string) => {
    const all = checkAnswer<Array<{ username: string }>>(Type.Array(RawUser), await http.request<unknown>('GET', 'api/v1/users'), 'users');
    if (!all.some((u) => u.username === username)) throw new ApiError(404, 'not_found', `user "${username}" not found`);
  };
  const tagList = async (env: string) => checkAnswer<TagWithCount[]>(TAGS, await http.request<unknown>('GET', `api/v1/tags/${seg(env)}`), 'tags');
  const currentTag = async (env: string, name: string) => (await tagList(env)).find((t) => t.name === name);

  /**
   * osctrl's platform targets match `platform` exactly (ubuntu, darwin): a bucket (linux) becomes
   * the platforms of the env's nodes in it (read from the node list: osctrl's platforms endpoint is
   * for super-admins only).
   */
  const platformsIn = async (env: string, wanted: string[]): Promise<string[]> => {
    await readNodes(env);
    const out = new Set<string>();
    for (const w of wanted) {
      const lw = w.toLowerCase();
      const matches = [...platforms].filter((p) => p.toLowerCase() === lw || platformBucket(p) === lw);
      // Nothing of that kind here: send the name itself, which matches no node (an empty list would mean every node).
      for (const p of matches.length ? matches : [w]) out.add(p);
    }
    return [...out];
  };
  /**
   * The run request osctrl needs: a real expiry (osctrl stores 0 as "expired at year 1", and
   * osctrl-tls never hands such a query out), platform buckets expanded, and one kind of target
   * at most: osctrl intersects the lists of different kinds (and skips a kind that matched
   * nothing), where this API adds them up.
   */
  const runBody = async (env: string, body: QueryRunRequest): Promise<QueryRunRequest> => {
    const kinds = (['uuid_list', 'host_list', 'platform_list', 'environment_list', 'tag_list'] as const).filter((k) => (body[k]?.length ?? 0) > 0);
    if (kinds.length > 1) {
      refuse('targets of different kinds in one run (osctrl intersects them)', 'run once per kind of target, or list the nodes themselves');
    }
    // osctrl knows whole hours only (expire_seconds is this API's).
    const { expire_seconds: seconds, ...rest } = body;
    const hours = body.exp_hours || (seconds ? Math.max(1, Math.ceil(seconds / 3600)) : OSCTRL_DEFAULT_EXPIRE_HOURS);
    const out: QueryRunRequest = { ...rest, exp_hours: hours };
    if (body.environment_list?.length) {
      // This API targets nodes of the env in the path only; osctrl would take the other envs' nodes too.
      const here = await envUuid(env);
      for (const e of body.environment_list) {
        if ((await envUuid(e)) !== here) throw new ApiError(400, 'bad_request', `environment_list names "${e}", not this environment (${env})`);
      }
      delete out.environment_list; // = every node of this env
    }
    if (body.platform_list?.length) out.platform_list = await platformsIn(env, body.platform_list);
    return out;
  };

  const queryOf = async (env: string, name: string): Promise<ReturnType<typeof toQuery>> => {
    const raw = await http.request<unknown>('GET', `api/v1/queries/${seg(env)}/${seg(name)}`);
    // osctrl answers 200 with an empty record for a name it does not have.
    if (raw && typeof raw === 'object' && !(raw as { name?: unknown }).name) throw new ApiError(404, 'not_found', `query "${name}" not found in environment ${env}`);
    return toQuery(checkAnswer(RawQuery, raw));
  };
  const hostnames = new Map<string, string>();
  const platforms = new Set<string>();
  let nodesRead: Promise<void> | undefined;
  /** The env's nodes' hostnames (osctrl's results carry only the UUID) and platforms, read once per command. */
  const readNodes = (env: string) =>
    (nodesRead ??= (async () => {
      for (let page = 1; ; page++) {
        const p = await base.nodes.list(env, { page, page_size: LIST_PAGE });
        for (const n of p.items) {
          hostnames.set(n.uuid.toUpperCase(), n.hostname);
          if (n.platform) platforms.add(n.platform);
        }
        if (page >= p.total_pages || p.items.length === 0) break;
      }
    })());

  return {
    auth: {
      ...base.auth,
      /**
       * osctrl's `/login/{env}` lets in only admins of that environment: anyone else costs a failed
       * login (a warning in osctrl's audit log) and a second try, against a limit of 10 logins a
       * minute. Its token is the same as the environment-less `/login`'s, so fleetctl checks the
       * environment exists in osctrl's pre-login list (no password sent for a wrong name) and logs
       * in once without it. A wrong password is 403 `invalid credentials` there.
       */
      login: async (env: string, body: Parameters<FleetResources['auth']['login']>[1]) => {
        await envUuid(env);
        try {
          return checkAnswer<TokenResponse>(needs(TokenResponse, 'token'), await http.request<unknown>('POST', 'api/v1/login', { body }));
        } catch (e) {
          if (e instanceof ApiError && e.status === 403 && /invalid credentials/i.test(e.message)) {
            throw new CliError('invalid credentials (osctrl, HTTP 403)', ExitCode.auth, 'check the username and password');
          }
          throw e;
        }
      },
      mfaLogin: () => refuse('MFA login (second factor)'),
      /**
       * osctrl's logout ends only a session whose token comes as its `osctrl_token` cookie (the
       * browser's); a Bearer header is ignored and the token would stay valid. Then the token is
       * tried once more: osctrl answers 200 to a logout whatever happened, so only a refused
       * token says the session really ended.
       */
      logout: async () => {
        const token = http.opts.token ?? '';
        const r = checkAnswer<{ message?: string }>(Type.Object({}), await http.request<unknown>('POST', 'api/v1/logout', { headers: { cookie: `osctrl_token=${token}` } }));
        try {
          await http.request<unknown>('GET', 'api/v1/users/me');
        } catch (e) {
          if (e instanceof ApiError && e.status === 401) return { message: r.message ?? 'logged out' };
          throw e;
        }
        throw new CliError('osctrl still accepts the token after its logout', ExitCode.error);
      },
    },
    users: {
      ...base.users,
      list: async () => {
        const raw = await http.request<unknown>('GET', 'api/v1/users');
        const rows = checkAnswer<Array<{ username: string }>>(Type.Array(RawUser), raw, 'users');
        await environments().catch(() => []); // ids for the access lists (this endpoint is super-admin only anyway)
        const out: User[] = [];
        for (const [i, r] of rows.entries()) out.push(await toUser(r, await permissionsOf(r.username), `users[${i}]`));
        return out;
      },
      me: async () => {
        const raw = await me();
        if (raw.admin) await environments().catch(() => []);
        return toUser(raw, raw.permissions ?? {}, '');
      },
      action: async (username: string, action: Parameters<FleetResources['users']['action']>[1], body: Omit<UserBody, 'username'> = {}) => {
        // osctrl accepts `api` and ignores it: say so rather than report a change that did not happen.
        if (body.api !== undefined) refuse('the API-access flag of users (--api/--no-api)');
        const { environments: envRefs, api: _api, user_access: _u, query_access: _q, carve_access: _c, admin_access: _a, ...rest } = body;
        const levels = [_u, _q, _c, _a].some((v) => v !== undefined);
        if (action === 'add') {
          // osctrl stores `environments` verbatim and matches UUIDs: send UUIDs, with levels osctrl can check.
          const uuids = envRefs ? await Promise.all(envRefs.map(envUuid)) : undefined;
          const a = accessOf(body);
          const access = levels || uuids?.length ? { user_access: a.user, query_access: a.query, carve_access: a.carve, admin_access: a.admin } : {};
          return checkAnswer<{ data: string }>(DataResponse, await http.request<unknown>('POST', `api/v1/users/${seg(username)}/add`, { body: { ...rest, ...access, environments: uuids, username } }));
        }
        await userExists(username);
        if (action === 'edit') {
          // osctrl's edit ignores environments and levels: they go through its permissions endpoint,
          // after the plain fields (every environment is resolved first, so a bad name changes nothing).
          if (envRefs?.length) await Promise.all(envRefs.map(envUuid));
          const res = checkAnswer<{ data: string }>(DataResponse, await http.request<unknown>('POST', `api/v1/users/${seg(username)}/edit`, { body: { ...rest, username } }));
          if (envRefs?.length) await setAccess(username, envRefs, levels ? accessOf(body) : accessOf({}));
          return res;
        }
        return checkAnswer<{ data: string }>(DataResponse, await http.request<unknown>('POST', `api/v1/users/${seg(username)}/${seg(action)}`, { body: { ...rest, username } }));
      },
    },
    mfa: {
      totpBegin: () => refuse('mfa'),
      totpConfirm: () => refuse('mfa'),
      totpDisable: () => refuse('mfa'),
      recoveryCodesRegenerate: () => refuse('mfa'),
      webauthnList: () => refuse('mfa'),
      webauthnRemove: () => refuse('mfa'),
    },
    environments: {
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
    },
    nodes: {
      ...base.nodes,
      list: async (env: string, query: Parameters<FleetResources['nodes']['list']>[1] = {}) => {
        const { order, ...rest } = query;
        return base.nodes.list(env, { ...rest, ...(order ? { dir: order } : {}) } as Parameters<FleetResources['nodes']['list']>[1]);
      },
    },
    tags: {
      ...base.tags,
      list: tagList,
      // osctrl stores type 0 (env) when tagtype is omitted; this API's default is `tag`.
      add: (env: string, body: Parameters<FleetResources['tags']['add']>[1]) => base.tags.add(env, { ...body, tagtype: body.tagtype ?? TagTypes.tag }),
      // osctrl compares an omitted tagtype (0) with the stored one and changes it: send the current type.
      edit: async (env: string, body: Parameters<FleetResources['tags']['edit']>[1]) => {
        if (body.tagtype !== undefined) return base.tags.edit(env, body);
        const cur = await currentTag(env, body.name);
        if (!cur) throw new ApiError(404, 'not_found', `tag "${body.name}" not found`);
        return base.tags.edit(env, { ...body, tagtype: cur.tag_type });
      },
      /**
       * osctrl tags one node per request and creates the tag when missing (so it is checked first).
       * A node that already has the tag answers 500 "error tagging node": this API counts that as
       * done, as its own server does, and says which nodes they were; every node is tried.
       */
      tag: async (env: string, name: string, uuids: string[]) => {
        const cur = await currentTag(env, name);
        if (!cur) throw new ApiError(404, 'not_found', `tag "${name}" not found`);
        const already: string[] = [];
        for (const uuid of uuids) {
          try {
            checkAnswer(MessageResponse, await http.request<unknown>('POST', `api/v1/nodes/${seg(env)}/tag`, { body: { uuid, tag: name, type: cur.tag_type, custom: cur.custom_tag } }));
          } catch (e) {
            if (e instanceof ApiError && e.status === 500 && /error tagging node/.test(e.message)) already.push(uuid);
            else throw new CliError(`${(e as Error).message}: tag ${name} was applied to ${uuids.indexOf(uuid)} of ${uuids.length} node(s) before ${uuid}`, e instanceof ApiError ? ExitCode.error : ExitCode.unavailable);
          }
        }
        if (already.length) {
          http.opts.warn?.(`osctrl-tagged-${name}`, `${already.length} of ${uuids.length} node(s) already had tag ${name}, or osctrl could not tag them (it answers 500 "error tagging node" for both): ${already.join(', ')}`);
        }
        return { data: `tag ${name} applied to ${uuids.length - already.length} node(s)` };
      },
      untag: () => refuse('untag'),
    },
    settings: {
      list: async (service: Parameters<FleetResources['settings']['list']>[0], env: string) => {
        // osctrl's /{service}/{env} holds only the env's own rows (normally none); the global rows are
        // at /{service}. This API lists the env's rows, then the global rows it does not override.
        const own = checkAnswer<Array<Record<string, unknown>>>(Type.Array(RawSetting), await http.request<unknown>('GET', `api/v1/settings/${seg(service)}/${seg(env)}`), 'settings');
        const global = checkAnswer<Array<Record<string, unknown>>>(Type.Array(RawSetting), await http.request<unknown>('GET', `api/v1/settings/${seg(service)}`), 'settings');
        const rows = [...own, ...global.filter((g) => g.EnvironmentID === 0 && !own.some((o) => o.Name === g.Name))];
        return rows.map((r, i) => checkAnswer<SettingT>(Setting, settingFromOsctrl(r), `settings[${i}]`));
      },
      update: async (service: Parameters<FleetResources['settings']['update']>[0], name: string, body: Parameters<FleetResources['settings']['update']>[2], env?: string) => {
        // osctrl ignores ?env= and would change the global value.
        if (env) refuse('env-settings');
        const r = await http.request<unknown>('PATCH', `api/v1/settings/${seg(service)}/${seg(name)}`, { body });
        return checkAnswer<SettingT>(Setting, settingFromOsctrl(checkAnswer<Record<string, unknown>>(RawSetting, r)));
      },
    },
    carves: {
      ...base.carves,
      list: async (env: string, query: Parameters<FleetResources['carves']['list']>[1] = {}) => {
        const { status, ...rest } = query;
        // osctrl filters with `target`; `pending` is a derived status it cannot filter on.
        if (status === 'pending') refuse('filtering carves by status pending');
        return checkAnswer<Page<CarveQuery>>(CARVE_PAGE, await http.request<unknown>('GET', `api/v1/carves/${seg(env)}`, { query: { ...rest, target: status } }));
      },
      get: async (env: string, name: string): Promise<CarveDetail> => {
        const d = checkAnswer<{ query: Record<string, unknown>; files: unknown[] }>(
          needs(Type.Object({ query: needs(Type.Object({ name: Type.String() }), 'name'), files: Type.Array(Type.Unknown()) }), 'query'),
          await http.request<unknown>('GET', `api/v1/carves/${seg(env)}/${seg(name)}`),
        );
        const q = d.query;
        const status = q.deleted ? 'DELETED' : q.expired ? 'EXPIRED' : q.completed ? 'COMPLETED' : d.files.length ? 'PENDING' : 'ACTIVE';
        return {
          query: checkAnswer<CarveQuery>(CarveQuery, { carve_status: status, ...q }, 'query'),
          files: d.files.map((f, i) => checkAnswer<CarveDetail['files'][number]>(CARVE_FILE, f, `files[${i}]`)),
        };
      },
      run: async (env: string, body: QueryRunRequest): Promise<QueryRunResponse> =>
        checkAnswer<QueryRunResponse>(NAME_ANSWER, await http.request<unknown>('POST', `api/v1/carves/${seg(env)}`, { body: await runBody(env, body) })),
      action: async (env: string, action: Parameters<FleetResources['carves']['action']>[1], name: string) =>
        action === 'archive' ? refuse('carve-archive') : base.carves.action(env, action, name),
    },
    queries: {
      ...base.queries,
      run: async (env: string, body: QueryRunRequest): Promise<QueryRunResponse> =>
        checkAnswer<QueryRunResponse>(NAME_ANSWER, await http.request<unknown>('POST', `api/v1/queries/${seg(env)}`, { body: await runBody(env, body) })),
      /**
       * osctrl lists by target in the path. Without a status this API lists every query; osctrl's
       * widest list (`all-full`) is every query but the deleted ones (`--status deleted` has those).
       */
      list: async (env: string, query: Parameters<FleetResources['queries']['list']>[1] = {}): Promise<Page<ReturnType<typeof toQuery>>> => {
        const target = query.status ?? 'all-full';
        const raw = await http.request<unknown>('GET', `api/v1/queries/${seg(env)}/list/${seg(target)}`, { query: { page: query.page, page_size: query.page_size } });
        const p = checkAnswer<Page<Record<string, unknown>>>(needs(Paginated(RawQuery), 'items'), raw);
        return { ...p, items: p.items.map(toQuery) };
      },
      get: queryOf,
      /**
       * osctrl keeps one row per node answer with its rows as JSON text, pages by number (no
       * after_id) and knows no hostnames: the pages after `after_id` are read and converted, the
       * progress comes from the query itself.
       */
      results: async (env: string, name: string, query: Parameters<FleetResources['queries']['results']>[2] = {}): Promise<QueryResultsPage> => {
        const q = await queryOf(env, name);
        const after = query.after_id ?? 0;
        const items: QueryResult[] = [];
        let total = 0;
        for (let page = 1; ; page++) {
          const p = checkAnswer<{ items: Array<{ id: number; created_at: string; uuid: string; data: string; status: number }>; total_pages: number; total_items: number }>(
            RawResultsPage, await http.request<unknown>('GET', `api/v1/queries/${seg(env)}/results/${seg(name)}`, { query: { page, page_size: RESULTS_PAGE } }),
          );
          total = p.total_items;
          for (const r of p.items) if (r.id > after) items.push(toResult(r));
          if (page >= p.total_pages || p.items.length === 0) break;
        }
        items.sort((a, b) => a.id - b.id);
        if (items.some((r) => !hostnames.has(r.uuid.toUpperCase()))) {
          if (hostnames.size > 0) nodesRead = undefined; // a node enrolled since the last read
          await readNodes(env).catch(() => undefined);
        }
        for (const r of items) r.hostname = hostnames.get(r.uuid.toUpperCase()) ?? '';
        const size = query.page_size ?? RESULTS_PAGE;
        return {
          items: items.slice(0, size), page: 1, page_size: size, total_items: total, total_pages: total ? Math.ceil(total / size) : 0,
          expected: q.expected, answered: q.executions + q.errors, query_status: q.status,
        };
      },
      /** osctrl has delete, expire and complete; this API's cancel is its expire (nodes stop picking the query up). */
      action: async (env: string, action: Parameters<FleetResources['queries']['action']>[1], name: string) => {
        // osctrl answers 200 with an empty message to an action it does not know, and changes nothing.
        const act = action === 'cancel' ? 'expire' : action;
        return checkAnswer<{ message: string }>(needs(MessageResponse, 'message'), await http.request<unknown>('POST', `api/v1/queries/${seg(env)}/${seg(act)}/${seg(name)}`));
      },
    },
    sinks: {
      list: () => refuse('log-sinks'),
      clone: () => refuse('log-sinks'),
      create: () => refuse('log-sinks'),
      delete: () => refuse('log-sinks'),
    },
    audit: {
      list: async (query: Parameters<FleetResources['audit']['list']>[0] = {}) => {
        const { q, env, ...rest } = query;
        if (q) refuse('audit-search');
        const env_uuid = env ? await envUuid(env) : undefined;
        const p = checkAnswer<Page<AuditLogEntry>>(AUDIT_PAGE, await http.request<unknown>('GET', 'api/v1/audit-logs', { query: { ...rest, env_uuid } }));
        // osctrl matches `username` as a substring (bob finds bobby too): this API means that user.
        return rest.username === undefined ? p : { ...p, items: p.items.filter((e) => e.username === rest.username) };
      },
      get: () => refuse('audit-show'),
    },
    // Issue 22: GET/PATCH /api/v1/environments/config/{env} (osctrl-config.ts).
    config: osctrlConfig(http),
  };
}

/** tags list: osctrl's tags carry no node count, so the field stays absent (blank in tables), never a wrong 0. */
const TAGS = Type.Array(needs(Type.Omit(TagWithCount, ['node_count']), 'name'));
const CARVE_PAGE = needs(Paginated(CarveQuery), 'items');
const CARVE_FILE = needs(CarveFile, 'session_id', 'carve_size', 'total_blocks');
const AUDIT_PAGE = needs(Paginated(AuditLogEntry), 'items');

/** A query as this API shows it: osctrl's record, with `status` derived as this API's server does. */
function toQuery(r: Record<string, unknown>) {
  const status = r.deleted ? 'DELETED' : r.expired ? 'EXPIRED' : r.completed ? 'COMPLETED' : r.active ? 'ACTIVE' : 'INACTIVE';
  return checkAnswer<Static<typeof DistributedQuery>>(DistributedQuery, { targets: [], ...r, status });
}

/**
 * One node's answer. osctrl keeps what osctrl-tls received as JSON text: `{name, result: [rows],
 * status, message}` (the rows of that node, osquery's status code and error message).
 */
function toResult(r: { id: number; created_at: string; uuid: string; data: string; status: number }): QueryResult {
  let parsed: unknown;
  try {
    parsed = JSON.parse(r.data || '{}');
  } catch {
    parsed = undefined;
  }
  const d = parsed && typeof parsed === 'object' ? (parsed as { result?: unknown; message?: unknown; status?: unknown }) : {};
  const list = Array.isArray(parsed) ? parsed : Array.isArray(d.result) ? d.result : [];
  const rows = list.filter((x): x is Record<string, unknown> => Boolean(x) && typeof x === 'object' && !Array.isArray(x));
  const status = typeof d.status === 'number' ? d.status : r.status;
  const message = typeof d.message === 'string' && d.message ? d.message : `osquery status ${status}`;
  return { id: r.id, created_at: r.created_at, uuid: r.uuid, hostname: '', status, ...(status !== 0 ? { error: message } : {}), rows };
}

function settingFromOsctrl(r: Record<string, unknown>) {
  const deleted = r.DeletedAt;
  return {
    id: r.ID, name: r.Name, service: r.Service, type: r.Type, info: r.Info ?? '', environmentID: r.EnvironmentID,
    boolean: r.Boolean, integer: r.Integer, string: r.String, createdAt: r.CreatedAt ?? '', updatedAt: r.UpdatedAt ?? '',
    deletedAt: { time: typeof deleted === 'string' ? deleted : null, valid: typeof deleted === 'string' },
  };
}
