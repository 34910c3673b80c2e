// Users (4.5 add/edit/remove, super-admin) and the user list and "me" reads (contract.md 5).
import type { Kysely } from 'kysely';
import type { Deps, Caller } from '../../context.js';
import type { DB, EnvironmentRow, UserRow, UserUpdate } from '../../store/schema.js';
import { LogTypes, NEVER, UserActions, type User, type UserAction, type UserBody, type UserEnvAccess } from '../../../api/index.js';
import { badRequest, conflict, invalidAction, notFound } from '../../errors.js';
import { hashPassword } from '../../lib/crypto.js';
import type { EnvLevels } from '../../permissions.js';
import { writeAudit } from '../audit/audit.js';
import { findEnv } from '../environments/environments.js';
import { checkNewPassword, storePassword } from '../auth/password.js';
import { endSessions } from '../auth/auth.js';

/** Letters, digits and . _ @ - (64 at most); "me" is taken by /api/v1/users/me. */
const USERNAME = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/;
const RESERVED_USERNAMES = new Set(['me']);
const EMAIL = /^[^\s@]+@[^\s@]+$/;

// ---- reads -------------------------------------------------------------------------------

async function toUsers(db: Kysely<DB>, rows: UserRow[]): Promise<User[]> {
  if (rows.length === 0) return [];
  const ids = rows.map((r) => r.id);
  const [access, keys, codes] = await Promise.all([
    db
      .selectFrom('user_env_access as a')
      .innerJoin('environments as e', 'e.id', 'a.environment_id')
      .select(['a.user_id', 'e.id', 'e.name', 'e.uuid', 'a.user_level', 'a.query_level', 'a.carve_level', 'a.admin_level'])
      .where('a.user_id', 'in', ids)
      .orderBy('e.name')
      .execute(),
    db
      .selectFrom('webauthn_credentials')
      .select(['user_id', (eb) => eb.fn.countAll<number>().as('n')])
      .where('user_id', 'in', ids)
      .groupBy('user_id')
      .execute(),
    db
      .selectFrom('recovery_codes')
      .select(['user_id', (eb) => eb.fn.countAll<number>().as('n')])
      .where('user_id', 'in', ids)
      .where('used_at', 'is', null)
      .groupBy('user_id')
      .execute(),
  ]);
  const envsOf = new Map<number, UserEnvAccess[]>();
  for (const a of access) {
    const list = envsOf.get(a.user_id) ?? [];
    list.push({
      id: a.id,
      name: a.name,
      uuid: a.uuid,
      user: !!a.user_level,
      query: !!a.query_level,
      carve: !!a.carve_level,
      admin: !!a.admin_level,
    });
    envsOf.set(a.user_id, list);
  }
  const keysOf = new Map(keys.map((k) => [k.user_id, Number(k.n)]));
  const codesOf = new Map(codes.map((k) => [k.user_id, Number(k.n)]));
  return rows.map((r) => ({
    username: r.username,
    fullname: r.fullname,
    email: r.email,
    admin: !!r.admin,
    service: !!r.service,
    api: !!r.api,
    environments: envsOf.get(r.id) ?? [],
    mfa: { totp: r.totp_secret !== null, webauthn: keysOf.get(r.id) ?? 0, recovery_codes: codesOf.get(r.id) ?? 0 },
    created_at: r.created_at,
    last_login_at: r.last_login_at ?? NEVER,
  }));
}

export async function listUsers(deps: Deps): Promise<User[]> {
  return toUsers(deps.db, await deps.db.selectFrom('users').selectAll().orderBy('username').execute());
}

export async function readMe(deps: Deps, caller: Caller): Promise<User> {
  const row = await deps.db.selectFrom('users').selectAll().where('id', '=', caller.user.id).executeTakeFirstOrThrow();
  return (await toUsers(deps.db, [row]))[0];
}

// ---- 4.5 ---------------------------------------------------------------------------------

interface AccessChange {
  envs: EnvironmentRow[];
  levels: EnvLevels;
}

const LEVEL_FIELDS = ['user_access', 'query_access', 'carve_access', 'admin_access'] as const;

/**
 * `environments` with the `*_access` levels to set on each of them. Each level not given takes
 * its default: `user_access` true, the others false ("user only"). All four false means no
 * access (edit: the access is revoked). Unknown env: 404, before anything is changed.
 */
/** 400 for `*_access` without `environments`; undefined when no access is to change. */
function accessRequest(body: UserBody): { refs: string[]; levels: EnvLevels } | undefined {
  const anyLevel = LEVEL_FIELDS.some((f) => body[f] !== undefined);
  if (!body.environments || body.environments.length === 0) {
    if (anyLevel) throw badRequest('access levels (*_access) need the environments they apply to');
    return undefined;
  }
  const levels: EnvLevels = {
    user: body.user_access ?? true,
    query: body.query_access ?? false,
    carve: body.carve_access ?? false,
    admin: body.admin_access ?? false,
  };
  return { refs: body.environments, levels };
}

async function resolveAccess(deps: Deps, req: ReturnType<typeof accessRequest>): Promise<AccessChange | undefined> {
  if (!req) return undefined;
  const envs = new Map<number, EnvironmentRow>();
  for (const ref of req.refs) {
    const env = await findEnv(deps, ref);
    if (!env) throw notFound(`environment "${ref}" not found`);
    envs.set(env.id, env);
  }
  return { envs: [...envs.values()], levels: req.levels };
}

async function applyAccess(db: Kysely<DB>, userId: number, change: AccessChange): Promise<void> {
  const { levels } = change;
  for (const env of change.envs) {
    await db.deleteFrom('user_env_access').where('user_id', '=', userId).where('environment_id', '=', env.id).execute();
    if (!levels.user && !levels.query && !levels.carve && !levels.admin) continue;
    await db
      .insertInto('user_env_access')
      .values({
        user_id: userId,
        environment_id: env.id,
        user_level: levels.user ? 1 : 0,
        query_level: levels.query ? 1 : 0,
        carve_level: levels.carve ? 1 : 0,
        admin_level: levels.admin ? 1 : 0,
      })
      .execute();
  }
}

function describeAccess(change: AccessChange): string {
  const lv = (Object.keys(change.levels) as (keyof EnvLevels)[]).filter((k) => change.levels[k]);
  return `${change.envs.map((e) => e.name).join(', ')} [${lv.length ? lv.join(',') : 'none'}]`;
}

function checkFlags(body: UserBody): void {
  if (body.admin && body.not_admin) throw badRequest('admin and not_admin cannot both be true');
  if (body.service && body.not_service) throw badRequest('service and not_service cannot both be true');
  if (body.email !== undefined && body.email !== '' && !EMAIL.test(body.email)) throw badRequest(`invalid email "${body.email}"`);
}

async function superAdminCount(db: Kysely<DB>): Promise<number> {
  const r = await db
    .selectFrom('users')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('admin', '=', 1)
    .executeTakeFirst();
  return Number(r?.n ?? 0);
}

export async function userAction(
  deps: Deps,
  caller: Caller,
  username: string,
  action: string,
  body: UserBody,
  sourceIp: string,
): Promise<string> {
  if (!(UserActions as readonly string[]).includes(action)) throw invalidAction(action, UserActions);
  if (body.username !== username) {
    throw badRequest(`the body's username ("${body.username ?? ''}") must equal the one in the path ("${username}")`);
  }
  // Written inside each change's transaction: the change and its audit row commit together.
  const audit: Audit = (trx, what, after = '') =>
    writeAudit(
      { ...deps, db: trx },
      { line: `${what} by ${caller.user.username}${after}`, logType: LogTypes.user, username: caller.user.username, sourceIp },
    );
  switch (action as UserAction) {
    case 'add':
      await addUser(deps, username, body, audit);
      return `user ${username} added`;
    case 'edit':
      await editUser(deps, caller, username, body, audit);
      return `user ${username} updated`;
    case 'remove':
      await removeUser(deps, caller, username, audit);
      return `user ${username} removed`;
  }
}

/** Writes a change's audit row ("WHAT by CALLER AFTER") in the change's own transaction. */
type Audit = (trx: Kysely<DB>, what: string, after?: string) => Promise<void>;

async function addUser(deps: Deps, username: string, body: UserBody, audit: Audit): Promise<void> {
  if (!USERNAME.test(username) || RESERVED_USERNAMES.has(username.toLowerCase())) {
    throw badRequest(`invalid username "${username}": use 1 to 64 letters, digits and . _ @ - (not "me")`);
  }
  checkFlags(body);
  const password = checkNewPassword(body.password, 'password');
  const accessReq = accessRequest(body);
  if (await deps.db.selectFrom('users').select('id').where('username', '=', username).executeTakeFirst()) {
    throw conflict(`user ${username} already exists`);
  }
  const access = await resolveAccess(deps, accessReq);
  const hash = await hashPassword(password);
  const ts = deps.now().toISOString();
  await deps.db.transaction().execute(async (trx) => {
    const existing = await trx.selectFrom('users').select('id').where('username', '=', username).executeTakeFirst();
    if (existing) throw conflict(`user ${username} already exists`); // added meanwhile
    const { id } = await trx
      .insertInto('users')
      .values({
        username,
        fullname: body.fullname ?? '',
        email: body.email ?? '',
        password_hash: hash,
        admin: body.admin ? 1 : 0,
        service: body.service ? 1 : 0,
        api: body.api === false ? 0 : 1,
        totp_secret: null,
        totp_pending_secret: null,
        totp_last_step: 0,
        created_at: ts,
        updated_at: ts,
        last_login_at: null,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    if (access) await applyAccess(trx, id, access);
    const what = [body.admin ? 'super-admin' : '', body.service ? 'service account' : '', access ? `access ${describeAccess(access)}` : '']
      .filter(Boolean)
      .join('; ');
    await audit(trx, `user ${username} added${what ? ` (${what})` : ''}`);
  });
}

async function editUser(deps: Deps, caller: Caller, username: string, body: UserBody, audit: Audit): Promise<void> {
  checkFlags(body);
  const password = body.password === undefined ? undefined : checkNewPassword(body.password, 'password');
  const accessReq = accessRequest(body);
  const set: UserUpdate = {};
  const changed: string[] = [];
  const change = (fields: UserUpdate, what: string) => {
    Object.assign(set, fields);
    changed.push(what);
  };
  if (body.fullname !== undefined) change({ fullname: body.fullname }, 'fullname');
  if (body.email !== undefined) change({ email: body.email }, 'email');
  if (body.admin) change({ admin: 1 }, 'made super-admin');
  if (body.not_admin) change({ admin: 0 }, 'no longer super-admin');
  if (body.service) change({ service: 1 }, 'service account');
  if (body.not_service) change({ service: 0 }, 'not a service account');
  if (body.api !== undefined) change({ api: body.api ? 1 : 0 }, `api ${body.api}`);
  if (changed.length === 0 && password === undefined && !accessReq) {
    throw badRequest(
      'nothing to change: give at least one of fullname, email, password, admin, not_admin, service, not_service, api, environments',
    );
  }
  const target = await deps.db.selectFrom('users').selectAll().where('username', '=', username).executeTakeFirst();
  if (!target) throw notFound(`user ${username} not found`);
  const access = await resolveAccess(deps, accessReq);
  const hash = password === undefined ? undefined : await hashPassword(password);

  const apiRemoved = body.api === false && !!target.api;
  // The caller is a super-admin using the API: refusing their own flag keeps one who can.
  if (apiRemoved && target.id === caller.user.id) throw conflict('you cannot take away your own API access (you would be locked out)');
  await deps.db.transaction().execute(async (trx) => {
    if (body.not_admin && target.admin && (await superAdminCount(trx)) <= 1) {
      throw conflict(`cannot demote ${username}: the server must keep at least one super-admin`);
    }
    if (Object.keys(set).length > 0) {
      await trx
        .updateTable('users')
        .set({ ...set, updated_at: deps.now().toISOString() })
        .where('id', '=', target.id)
        .execute();
    }
    if (access) await applyAccess(trx, target.id, access);
    // A super-admin resetting their own password keeps the session they are using.
    if (hash !== undefined) await storePassword(deps, trx, target.id, hash, target.id === caller.user.id ? caller.jti : undefined);
    if (password !== undefined) changed.push('password (sessions ended)');
    // Without API access nothing of this server can be used: the user's sessions end now, and
    // their old tokens answer 403 api_disabled (auth.ts). Given back, it takes a new login.
    if (apiRemoved) {
      await trx.deleteFrom('mfa_challenges').where('user_id', '=', target.id).execute();
      await endSessions({ ...deps, db: trx }, target.id);
      changed[changed.indexOf('api false')] = 'api false (sessions ended)';
    }
    if (access) changed.push(`access ${describeAccess(access)}`);
    await audit(trx, `user ${username} updated: ${changed.join(', ')}`);
  });
}

async function removeUser(deps: Deps, caller: Caller, username: string, audit: Audit): Promise<void> {
  await deps.db.transaction().execute(async (trx) => {
    const target = await trx.selectFrom('users').select(['id', 'admin']).where('username', '=', username).executeTakeFirst();
    if (!target) throw notFound(`user ${username} not found`);
    if (target.id === caller.user.id) throw conflict('you cannot remove yourself');
    if (target.admin && (await superAdminCount(trx)) <= 1)
      throw conflict(`cannot remove ${username}: the server must keep at least one super-admin`);
    // Sessions, access, recovery codes, WebAuthn credentials and challenges go with the row
    // (ON DELETE CASCADE): the user's tokens stop working at once.
    await trx.deleteFrom('users').where('id', '=', target.id).execute();
    await audit(trx, `user ${username} removed`, '; their sessions were ended');
  });
}
