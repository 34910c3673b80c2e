// osctrl 0.5.4 (github.com/jmpsec/osctrl) speaks the paths of this API with other shapes and
// parameters. This is the one place that knows: requests are mapped, answers normalised into the
// src/api shapes (then checked against them), and what osctrl lacks is refused before any
// request. Wire facts are from osctrl's Go handlers at commit 3c1c5ab4 (docs/osctrl.md).
import { Type, type TSchema } from '@sinclair/typebox';
import {
  AuditLogEntry, CarveDetail, CarveQuery, DataResponse, Environment, EnvironmentMap, MessageResponse, Node, Paginated, Setting,
  TagTypes, TagWithCount, TokenResponse, User, type EnvironmentMapEntry, type MapTarget, type Page, type UserBody,
} from '../../api/index.js';
import type { Setting as SettingT } from '../../api/index.js';
import { ApiError, CliError, ExitCode } from '../../errors.js';
import type { HttpClient } from '../http.js';
import { checkAnswer, emptyValue } from '../validate.js';
import type { FleetResources } from '../index.js';
import { FEATURE_NAMES, NotSupportedError, type Feature } from './index.js';
import { osctrlConfig } from './osctrl-config.js';

const seg = encodeURIComponent;

/** osctrl leaves out fields this API always has: fill them with the schema's zero values, keep what came, then check. */
function normalise<T>(schema: TSchema, raw: unknown, what = ''): T {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return checkAnswer<T>(schema, raw, what);
  return checkAnswer<T>(schema, { ...(emptyValue(schema) as object), ...(raw as object) }, what);
}
const normaliseAll = <T>(schema: TSchema, raw: unknown, what: string): T[] =>
  Array.isArray(raw) ? raw.map((r, i) => normalise<T>(schema, r, `${what}[${i}]`)) : checkAnswer<T[]>(Type.Array(schema), raw, what);
function normalisePage<T>(schema: TSchema, raw: unknown): Page<T> {
  const p = checkAnswer<Page<unknown>>(Paginated(Type.Unknown()), raw);
  // osctrl says total_pages 0 for an empty list on some endpoints; the pager stops on empty items anyway.
  return { ...p, items: p.items.map((r, i) => normalise<T>(schema, r, `items[${i}]`)) };
}

// Raw osctrl shapes (PascalCase where the Go structs have no json tags).
const RawMapEntry = Type.Object({ Name: Type.String(), UUID: Type.String(), ID: Type.Integer() });
const RawMap = Type.Record(Type.String(), RawMapEntry);
const RawAccess = Type.Object({ user: Type.Boolean(), query: Type.Boolean(), carve: Type.Boolean(), admin: Type.Boolean() });
const RawPermissions = Type.Record(Type.String(), RawAccess);
const RawUser = Type.Object({
  username: Type.String(), email: Type.String(), fullname: Type.String(), admin: Type.Boolean(), service: Type.Boolean(),
});
const RawMe = Type.Composite([RawUser, Type.Object({ permissions: Type.Optional(RawPermissions) })]);
const RawSetting = Type.Object({
  ID: Type.Integer(), Name: Type.String(), Service: Type.String(), Type: Type.String(), EnvironmentID: Type.Integer(),
  String: Type.String(), Boolean: Type.Boolean(), Integer: Type.Integer(),
});

/** The feature names refusals use (docs/osctrl.md lists them). */
const refuse = (feature: Feature | string): never => {
  throw new NotSupportedError(feature in FEATURE_NAMES ? FEATURE_NAMES[feature as Feature] : feature);
};

export function osctrlResources(http: HttpClient, base: FleetResources) {
  let mapCache: Promise<EnvironmentMapEntry[]> | undefined;
  /** Every environment once (osctrl's name/uuid maps list each one under its name and its UUID). */
  const environments = () =>
    (mapCache ??= http.request<unknown>('GET', 'api/v1/environments/map/id').then((raw) => {
      const m = checkAnswer<Record<string, { Name: string; UUID: string; ID: number }>>(RawMap, raw);
      return Object.values(m).map((e) => ({ id: e.ID, name: e.Name, uuid: e.UUID }));
    }));
  /** osctrl matches permissions on UUIDs verbatim: a name there would grant nothing. */
  const envUuid = async (ref: string): Promise<string> => {
    const e = (await environments()).find((x) => x.uuid === ref || x.name === ref);
    if (!e) throw new ApiError(404, 'not_found', `environment "${ref}" not found`);
    return e.uuid;
  };
  /** Names for UUIDs: the map (super-admins), else osctrl's pre-login list (anyone; no IDs). */
  const envNames = async (): Promise<EnvironmentMapEntry[]> => {
    try {
      return await environments();
    } catch (e) {
      if (!(e instanceof ApiError && e.status === 403)) throw e;
      const raw = await http.request<unknown>('GET', 'api/v1/login/environments');
      return checkAnswer<Array<{ uuid: string; name: string }>>(Type.Array(Type.Object({ uuid: Type.String(), name: Type.String() })), raw).map((x) => ({ id: 0, ...x }));
    }
  };
  const toUser = async (raw: unknown, perms: Record<string, { user: boolean; query: boolean; carve: boolean; admin: boolean }>, what: string): Promise<User> => {
    const u = checkAnswer<Record<string, unknown>>(RawUser, raw, what);
    const envs = Object.keys(perms).length ? await envNames() : [];
    const environmentsOut = Object.entries(perms)
      .filter(([, a]) => a.user || a.query || a.carve || a.admin)
      .map(([uuid, a]) => {
        const e = envs.find((x) => x.uuid === uuid);
        return { id: e?.id ?? 0, name: e?.name ?? uuid, uuid, ...a };
      });
    const lastLogin = typeof u.last_access === 'string' ? u.last_access : '';
    return normalise<User>(User, { ...u, environments: environmentsOut, mfa: { totp: false, webauthn: 0 }, api: false, last_login_at: lastLogin }, what);
  };
  const permissionsOf = async (username: string) =>
    checkAnswer<{ permissions: Record<string, { user: boolean; query: boolean; carve: boolean; admin: boolean }> }>(
      Type.Object({ permissions: RawPermissions }),
      await http.request<unknown>('GET', `api/v1/users/${seg(username)}/permissions`),
    ).permissions;
  /** The levels of a user body, with this API's defaults (user level unless told otherwise). */
  const accessOf = (b: UserBody) => ({ user: b.user_access ?? true, query: b.query_access ?? false, carve: b.carve_access ?? false, admin: b.admin_access ?? false });
  const setAccess = async (username: string, envRefs: string[], access: ReturnType<typeof accessOf>) => {
    const uuids = await Promise.all(envRefs.map(envUuid)); // all resolved before anything changes
    for (const env_uuid of uuids) await http.request('POST', `api/v1/users/${seg(username)}/permissions`, { body: { env_uuid, access } });
  };
  const currentTag = async (env: string, name: string) =>
    normaliseAll<TagWithCount>(TagWithCount, await http.request<unknown>('GET', `api/v1/tags/${seg(env)}`), 'tags').find((t) => t.name === name);

  return {
    auth: {
      ...base.auth,
      /** osctrl answers 403 for a wrong password; `/login/{env}` wants env admin, `/login` (no env) anyone. */
      login: async (env: string, body: Parameters<FleetResources['auth']['login']>[1]) => {
        try {
          return checkAnswer<TokenResponse>(TokenResponse, await http.request<unknown>('POST', `api/v1/login/${seg(env)}`, { body }));
        } catch (e) {
          if (!(e instanceof ApiError) || e.status !== 403) throw e;
          if (/invalid credentials/i.test(e.message)) throw new CliError('invalid credentials (osctrl, HTTP 403)', ExitCode.auth, 'check the username and password');
          // "no access": not an admin of the environment, the environment-less login still works for users.
          return checkAnswer<TokenResponse>(TokenResponse, await http.request<unknown>('POST', 'api/v1/login', { body }));
        }
      },
      mfaLogin: () => refuse('MFA login (second factor)'),
    },
    users: {
      ...base.users,
      list: async () => {
        const raw = await http.request<unknown>('GET', 'api/v1/users');
        const rows = checkAnswer<unknown[]>(Type.Array(RawUser), raw, 'users');
        const out: User[] = [];
        for (const [i, r] of rows.entries()) out.push(await toUser(r, await permissionsOf((r as { username: string }).username), `users[${i}]`));
        return out;
      },
      me: async () => {
        const raw = checkAnswer<{ permissions?: Record<string, { user: boolean; query: boolean; carve: boolean; admin: boolean }> }>(RawMe, await http.request<unknown>('GET', 'api/v1/users/me'));
        return toUser(raw, raw.permissions ?? {}, '');
      },
      action: async (username: string, action: Parameters<FleetResources['users']['action']>[1], body: Omit<UserBody, 'username'> = {}) => {
        // osctrl accepts `api` and ignores it: say so rather than report a change that did not happen.
        if (body.api !== undefined) refuse('the API-access flag of users (--api/--no-api)');
        const { environments: envRefs, api: _api, ...rest } = body;
        if (action === 'add') {
          // osctrl stores `environments` verbatim and matches UUIDs: send UUIDs.
          const uuids = envRefs ? await Promise.all(envRefs.map(envUuid)) : undefined;
          return checkAnswer<{ data: string }>(DataResponse, await http.request<unknown>('POST', `api/v1/users/${seg(username)}/add`, { body: { ...rest, environments: uuids, username } }));
        }
        if (action === 'edit') {
          // osctrl's edit ignores environments and levels: they go through its permissions endpoint,
          // after the plain fields (every environment is resolved first, so a bad name changes nothing).
          if (envRefs?.length) await Promise.all(envRefs.map(envUuid));
          const plain = Object.fromEntries(Object.entries(rest).filter(([k]) => !k.endsWith('_access')));
          const res = checkAnswer<{ data: string }>(DataResponse, await http.request<unknown>('POST', `api/v1/users/${seg(username)}/edit`, { body: { ...plain, username } }));
          if (envRefs?.length) await setAccess(username, envRefs, accessOf(body));
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
      map: async (target: MapTarget) => {
        const list = await environments();
        const key = (e: EnvironmentMapEntry) => (target === 'id' ? String(e.id) : target === 'uuid' ? e.uuid : e.name);
        return checkAnswer<EnvironmentMap>(EnvironmentMap, Object.fromEntries(list.map((e) => [key(e), e])));
      },
      get: async (env: string) => normalise<Environment>(Environment, await http.request<unknown>('GET', `api/v1/environments/${seg(env)}`)),
      setIntervals: async (env: string, body: Parameters<FleetResources['environments']['setIntervals']>[1]) =>
        normalise<Environment>(Environment, await http.request<unknown>('PATCH', `api/v1/environments/intervals/${seg(env)}`, { body })),
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
        return http.request<{ data: string }>('GET', `api/v1/environments/${seg(env)}/remove/${seg(target)}`, { secretResponse: true, schema: DataResponse });
      },
    },
    nodes: {
      ...base.nodes,
      list: async (env: string, query: Parameters<FleetResources['nodes']['list']>[1] = {}) => {
        const { order, ...rest } = query;
        return normalisePage<Node>(Node, await http.request<unknown>('GET', `api/v1/nodes/${seg(env)}`, { query: { ...rest, dir: order } }));
      },
      get: async (env: string, node: string) => normalise<Node>(Node, await http.request<unknown>('GET', `api/v1/nodes/${seg(env)}/node/${seg(node)}`)),
    },
    tags: {
      ...base.tags,
      list: async (env: string) => normaliseAll<TagWithCount>(TagWithCount, await http.request<unknown>('GET', `api/v1/tags/${seg(env)}`), 'tags'),
      // osctrl stores type 0 (env) when tagtype is omitted; this API's default is `tag`.
      add: (env: string, body: Parameters<FleetResources['tags']['add']>[1]) => base.tags.add(env, { ...body, tagtype: body.tagtype ?? TagTypes.tag }),
      // osctrl compares an omitted tagtype (0) with the stored one and changes it: send the current type.
      edit: async (env: string, body: Parameters<FleetResources['tags']['edit']>[1]) => {
        if (body.tagtype !== undefined) return base.tags.edit(env, body);
        const cur = await currentTag(env, body.name);
        if (!cur) throw new ApiError(404, 'not_found', `tag "${body.name}" not found`);
        return base.tags.edit(env, { ...body, tagtype: cur.tag_type });
      },
      // osctrl tags one node per request; it creates the tag when missing, so check it exists first.
      tag: async (env: string, name: string, uuids: string[]) => {
        const cur = await currentTag(env, name);
        if (!cur) throw new ApiError(404, 'not_found', `tag "${name}" not found`);
        for (const uuid of uuids) {
          checkAnswer(MessageResponse, await http.request<unknown>('POST', `api/v1/nodes/${seg(env)}/tag`, { body: { uuid, tag: name, type: cur.tag_type, custom: cur.custom_tag } }));
        }
        return { data: `tag ${name} applied to ${uuids.length} node(s)` };
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
        return rows.map((r, i) => normalise<SettingT>(Setting, settingFromOsctrl(r), `settings[${i}]`));
      },
      update: async (service: Parameters<FleetResources['settings']['update']>[0], name: string, body: Parameters<FleetResources['settings']['update']>[2], env?: string) => {
        // osctrl ignores ?env= and would change the global value.
        if (env) refuse('env-settings');
        const r = await http.request<unknown>('PATCH', `api/v1/settings/${seg(service)}/${seg(name)}`, { body });
        return normalise<SettingT>(Setting, settingFromOsctrl(checkAnswer<Record<string, unknown>>(RawSetting, r)));
      },
    },
    carves: {
      ...base.carves,
      list: async (env: string, query: Parameters<FleetResources['carves']['list']>[1] = {}) => {
        const { status, ...rest } = query;
        // osctrl filters with `target`; `pending` is a derived status it cannot filter on.
        if (status === 'pending') refuse('filtering carves by status pending');
        return normalisePage<CarveQuery>(CarveQuery, await http.request<unknown>('GET', `api/v1/carves/${seg(env)}`, { query: { ...rest, target: status } }));
      },
      get: async (env: string, name: string) => {
        const d = checkAnswer<{ query: Record<string, unknown>; files: unknown[] }>(
          Type.Object({ query: Type.Record(Type.String(), Type.Unknown()), files: Type.Array(Type.Unknown()) }),
          await http.request<unknown>('GET', `api/v1/carves/${seg(env)}/${seg(name)}`),
        );
        const q = d.query;
        const status = q.deleted ? 'DELETED' : q.expired ? 'EXPIRED' : q.completed ? 'COMPLETED' : d.files.length ? 'PENDING' : 'ACTIVE';
        return normalise<CarveDetail>(CarveDetail, {
          query: normalise(CarveQuery, { carve_status: status, ...q }, 'query'),
          files: d.files.map((f, i) => normalise(CarveDetail.properties.files.items, f, `files[${i}]`)),
        });
      },
      action: async (env: string, action: Parameters<FleetResources['carves']['action']>[1], name: string) =>
        action === 'archive' ? refuse('carve-archive') : base.carves.action(env, action, name),
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
        return normalisePage<AuditLogEntry>(AuditLogEntry, await http.request<unknown>('GET', 'api/v1/audit-logs', { query: { ...rest, env_uuid } }));
      },
      get: () => refuse('audit-show'),
    },
    // Issue 22: GET/PATCH /api/v1/environments/config/{env} (osctrl-config.ts).
    config: osctrlConfig(http),
  };
}

function settingFromOsctrl(r: Record<string, unknown>) {
  const deleted = r.DeletedAt;
  return {
    id: r.ID, name: r.Name, service: r.Service, type: r.Type, info: r.Info ?? '', environmentID: r.EnvironmentID,
    boolean: r.Boolean, integer: r.Integer, string: r.String, createdAt: r.CreatedAt ?? '', updatedAt: r.UpdatedAt ?? '',
    deletedAt: { time: typeof deleted === 'string' ? deleted : null, valid: typeof deleted === 'string' },
  };
}
