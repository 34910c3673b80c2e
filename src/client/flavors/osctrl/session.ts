// What one command's osctrl requests share: caches of environments, the caller and the nodes read
// once per command, and the helpers every resource module uses (osctrl resolves names, checks
// permissions and targets its own way).
import { Type } from '../../../api/type.js';
import { TagWithCount, User, type EnvironmentMapEntry, type QueryRunRequest, type UserBody } from '../../../api/index.js';
import { platformBucket } from '../../../lib/platforms.js';
import { ApiError } from '../../../errors.js';
import type { HttpClient } from '../../http.js';
import { checkAnswer, needs } from '../../validate.js';
import type { FleetResources } from '../../resources/index.js';
import {
  seg,
  RawMap,
  RawLoginEnv,
  type Access,
  RawPermissions,
  RawUser,
  RawMe,
  RawQuery,
  OSCTRL_DEFAULT_EXPIRE_HOURS,
  LIST_PAGE,
  refuse,
  TAGS,
  toQuery,
} from './shapes.js';

export function osctrlSession(http: HttpClient, base: FleetResources) {
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
    (namesCache ??= http
      .request<unknown>('GET', 'api/v1/login/environments')
      .then((raw) =>
        checkAnswer<Array<{ uuid: string; name: string }>>(Type.Array(RawLoginEnv), raw, 'environments').map((x) => ({ id: 0, ...x })),
      ));
  /** osctrl matches permissions (and UUID targets) on UUIDs verbatim: a name there would grant nothing. */
  const envUuid = async (ref: string): Promise<string> => {
    const e = (await envNames()).find((x) => x.uuid === ref || x.name === ref || x.uuid.toLowerCase() === ref.toLowerCase());
    if (!e) throw new ApiError(404, 'not_found', `environment "${ref}" not found`);
    return e.uuid;
  };

  let meCache: Promise<{ admin: boolean; permissions?: Record<string, Access> }> | undefined;
  const me = () =>
    (meCache ??= http
      .request<unknown>('GET', 'api/v1/users/me')
      .then((raw) => checkAnswer<{ admin: boolean; permissions?: Record<string, Access> }>(RawMe, raw)));
  const accessibleEnvironments = async (): Promise<EnvironmentMapEntry[]> => {
    const perms = (await me()).permissions ?? {};
    const known = await envNames();
    const out: EnvironmentMapEntry[] = [];
    for (const e of known) {
      const a = perms[e.uuid];
      if (!a || !(a.user || a.admin)) continue; // osctrl's read of an environment wants user level (or an admin row first)
      const env = checkAnswer<{ id: number }>(
        needs(Type.Object({ id: Type.Integer() }), 'id'),
        await http.request<unknown>('GET', `api/v1/environments/${seg(e.uuid)}`),
      );
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
        return {
          id: ids.find((x) => x.uuid === uuid)?.id ?? 0,
          name: e?.name ?? uuid,
          uuid,
          user: a.user,
          query: a.query,
          carve: a.carve,
          admin: a.admin,
        };
      });
    return checkAnswer<User>(
      User,
      { ...u, environments: environmentsOut, mfa: { totp: false, webauthn: 0 }, api: false, last_login_at: u.last_access },
      what,
    );
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
  const tagList = async (env: string) =>
    checkAnswer<TagWithCount[]>(TAGS, await http.request<unknown>('GET', `api/v1/tags/${seg(env)}`), 'tags');
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
    const kinds = (['uuid_list', 'host_list', 'platform_list', 'environment_list', 'tag_list'] as const).filter(
      (k) => (body[k]?.length ?? 0) > 0,
    );
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
        if ((await envUuid(e)) !== here)
          throw new ApiError(400, 'bad_request', `environment_list names "${e}", not this environment (${env})`);
      }
      delete out.environment_list; // = every node of this env
    }
    if (body.platform_list?.length) out.platform_list = await platformsIn(env, body.platform_list);
    return out;
  };

  const queryOf = async (env: string, name: string): Promise<ReturnType<typeof toQuery>> => {
    const raw = await http.request<unknown>('GET', `api/v1/queries/${seg(env)}/${seg(name)}`);
    // osctrl answers 200 with an empty record for a name it does not have.
    if (raw && typeof raw === 'object' && !(raw as { name?: unknown }).name)
      throw new ApiError(404, 'not_found', `query "${name}" not found in environment ${env}`);
    return toQuery(checkAnswer(RawQuery, raw));
  };
  const hostnames = new Map<string, string>();
  const platforms = new Set<string>();
  /** Nodes per platform and in all, from the same read (tag counts). */
  const nodeCounts = { total: 0, perPlatform: new Map<string, number>() };
  let nodesRead: Promise<void> | undefined;
  /** The env's nodes' hostnames (osctrl's results carry only the UUID) and platforms, read once per command. */
  const readNodes = (env: string) =>
    (nodesRead ??= (async () => {
      nodeCounts.perPlatform.clear();
      for (let page = 1; ; page++) {
        const p = await base.nodes.list(env, { page, page_size: LIST_PAGE });
        nodeCounts.total = p.total_items;
        for (const n of p.items) {
          hostnames.set(n.uuid.toUpperCase(), n.hostname);
          if (n.platform) platforms.add(n.platform);
          nodeCounts.perPlatform.set(n.platform, (nodeCounts.perPlatform.get(n.platform) ?? 0) + 1);
        }
        if (page >= p.total_pages || p.items.length === 0) break;
      }
    })());

  return {
    http,
    base,
    environments,
    envNames,
    envUuid,
    me,
    accessibleEnvironments,
    toUser,
    permissionsOf,
    accessOf,
    setAccess,
    userExists,
    tagList,
    currentTag,
    platformsIn,
    runBody,
    queryOf,
    hostnames,
    platforms,
    nodeCounts,
    readNodes,
    /** Forgets the nodes read (a node enrolled since): the next readNodes reads them again. */
    forgetNodes: () => {
      nodesRead = undefined;
    },
  };
}

export type OsctrlSession = ReturnType<typeof osctrlSession>;
