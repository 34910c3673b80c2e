import { Type } from '../../../api/type.js';
import { DataResponse, User, type UserBody } from '../../../api/index.js';
import { checkAnswer } from '../../validate.js';
import type { FleetResources } from '../../resources/index.js';
import type { OsctrlSession } from './session.js';
import { seg, RawUser, refuse } from './shapes.js';

export function usersResource(s: OsctrlSession) {
  const { http, base, environments, envUuid, me, toUser, permissionsOf, accessOf, setAccess, userExists } = s;
  return {
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
        const access =
          levels || uuids?.length ? { user_access: a.user, query_access: a.query, carve_access: a.carve, admin_access: a.admin } : {};
        return checkAnswer<{ data: string }>(
          DataResponse,
          await http.request<unknown>('POST', `api/v1/users/${seg(username)}/add`, {
            body: { ...rest, ...access, environments: uuids, username },
          }),
        );
      }
      await userExists(username);
      if (action === 'edit') {
        // osctrl's edit ignores environments and levels: they go through its permissions endpoint,
        // after the plain fields (every environment is resolved first, so a bad name changes nothing).
        if (envRefs?.length) await Promise.all(envRefs.map(envUuid));
        const res = checkAnswer<{ data: string }>(
          DataResponse,
          await http.request<unknown>('POST', `api/v1/users/${seg(username)}/edit`, { body: { ...rest, username } }),
        );
        if (envRefs?.length) await setAccess(username, envRefs, levels ? accessOf(body) : accessOf({}));
        // osctrl ends no session on a password change: the user's token stays valid until it expires.
        if (body.password !== undefined) {
          return {
            data: `${res.data}; osctrl keeps ${username}'s session: a token issued before the change stays valid until it expires (to end it now: fleetctl api DELETE /api/v1/users/${username}/token)`,
          };
        }
        return res;
      }
      return checkAnswer<{ data: string }>(
        DataResponse,
        await http.request<unknown>('POST', `api/v1/users/${seg(username)}/${seg(action)}`, { body: { ...rest, username } }),
      );
    },
  };
}
