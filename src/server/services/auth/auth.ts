// Login, tokens and sessions (contract.md 2). A token is a signed JWT plus a session row:
// ending a session (password change, user removal) is deleting its row.
import { readGenerations } from '../../store/node-index.js';
import { byGeneration } from '../../lib/generation-cache.js';
import type { Deps, Caller } from '../../context.js';
import type { UserRow, EnvironmentRow } from '../../store/schema.js';
import { EXP_HOURS_DEFAULT, EXP_HOURS_MAX, LogTypes, Severities, type LoginBody, type TokenResponse } from '../../../api/index.js';
import { badRequest, forbidden, HttpError, notFound, unauthorized } from '../../errors.js';
import {
  dummyPasswordHash,
  randomHex,
  randomId,
  signJwt,
  verifyJwt,
  verifyPassword,
  type JwtClaims,
  type JwtResult,
} from '../../lib/crypto.js';
import { hasLevel, type EnvLevels } from '../../permissions.js';
import { findEnv } from '../environments/environments.js';
import { writeAudit } from '../audit/audit.js';

export function expHours(v: number | undefined): number {
  if (v === undefined || v === 0) return EXP_HOURS_DEFAULT;
  if (!Number.isInteger(v) || v < 1 || v > EXP_HOURS_MAX) throw badRequest(`exp_hours must be between 1 and ${EXP_HOURS_MAX}`);
  return v;
}

export async function envLevels(deps: Deps, userId: number): Promise<Map<number, EnvLevels>> {
  const rows = await deps.db.selectFrom('user_env_access').selectAll().where('user_id', '=', userId).execute();
  return new Map(
    rows.map((r) => [r.environment_id, { user: !!r.user_level, query: !!r.query_level, carve: !!r.carve_level, admin: !!r.admin_level }]),
  );
}

/** Issues a JWT and records its session. */
export async function issueToken(deps: Deps, user: UserRow, hours: number, sourceIp: string): Promise<TokenResponse> {
  const now = deps.now();
  const iat = Math.floor(now.getTime() / 1000);
  const exp = iat + hours * 3600;
  const jti = randomId();
  const csrf_token = randomHex(16);
  await deps.db
    .insertInto('sessions')
    .values({ jti, user_id: user.id, csrf_token, created_at: now.toISOString(), expires_at: new Date(exp * 1000).toISOString() })
    .execute();
  await deps.db.updateTable('users').set({ last_login_at: now.toISOString() }).where('id', '=', user.id).execute();
  await deps.loginGuard.succeeded(user.id, sourceIp);
  const token = signJwt({ sub: user.username, iss: deps.config.issuer, iat, exp, jti }, deps.config.jwtSecret);
  return { token, csrf_token };
}

/** Password step of 4.1. Returns a token, or throws 401 mfa_required with a challenge. */
export async function login(deps: Deps, envRef: string, body: LoginBody, sourceIp: string): Promise<TokenResponse> {
  const hours = expHours(body.exp_hours);
  const env = await findEnv(deps, envRef);
  if (!env) {
    // A failed login all the same (contract 4.19): someone is trying names against this server.
    await writeAudit(deps, {
      line: `failed login for "${body.username}": environment "${envRef}" not found`,
      logType: LogTypes.login,
      severity: Severities.warning,
      username: body.username,
      sourceIp,
    });
    throw notFound(`environment "${envRef}" not found`);
  }
  const user = await deps.db.selectFrom('users').selectAll().where('username', '=', body.username).executeTakeFirst();
  // The per-account limit is decided before the password is checked (and the same for unknown users).
  await deps.loginGuard.check(body.username, user?.id, sourceIp);
  // Unknown users are checked against a dummy hash so both failures take the same time.
  const ok = await verifyPassword(body.password, user?.password_hash ?? (await dummyPasswordHash()));
  const audit = (line: string, severity: number) =>
    writeAudit(deps, { line, logType: LogTypes.login, severity: severity as 1 | 2 | 3, username: body.username, sourceIp, env });
  if (!user || !ok) {
    await deps.loginGuard.failed(body.username, user?.id, sourceIp);
    await audit(`failed login for "${body.username}" to ${env.name}`, Severities.warning);
    throw unauthorized('invalid username or password');
  }
  await refuseWithoutApi(user, (line) => audit(line, Severities.warning));
  const access = await envLevels(deps, user.id);
  if (!hasLevel(!!user.admin, access.get(env.id), 'user')) {
    await audit(`login denied: ${user.username} has no access to ${env.name}`, Severities.warning);
    throw forbidden(`user ${user.username} has no access to environment ${env.name}`);
  }
  if (user.totp_secret) {
    const challenge = await createChallenge(deps, user, env, hours);
    await audit(`password accepted for ${user.username} to ${env.name}; second factor required`, Severities.info);
    throw new HttpError(401, 'mfa_required', 'a second factor is required: answer the challenge at POST /api/v1/login/mfa', {
      challenge,
      methods: ['totp', 'recovery'],
    });
  }
  await audit(`login ok: ${user.username} to ${env.name}`, Severities.info);
  return issueToken(deps, user, hours, sourceIp);
}

/**
 * The users' `api` flag (docs/api.md "API access"): this server's only door is its API, so a user
 * without it can neither log in nor use a token. 403 `api_disabled`, after the password was
 * checked (a wrong password is the same 401 for everyone: no enumeration).
 */
export const apiDisabled = (username: string) =>
  forbidden(
    `API access is disabled for user ${username}: a super-admin can allow it (fleetctl users edit ${username} --api)`,
    'api_disabled',
  );

export async function refuseWithoutApi(user: Pick<UserRow, 'username' | 'api'>, audit: (line: string) => Promise<unknown>): Promise<void> {
  if (user.api) return;
  await audit(`login denied: ${user.username} has no API access`);
  throw apiDisabled(user.username);
}

export const CHALLENGE_TTL_MS = 5 * 60_000;

async function createChallenge(deps: Deps, user: UserRow, env: EnvironmentRow, hours: number): Promise<string> {
  const now = deps.now();
  const id = randomHex(24);
  await deps.db
    .insertInto('mfa_challenges')
    .values({
      id,
      user_id: user.id,
      environment_id: env.id,
      exp_hours: hours,
      created_at: now.toISOString(),
      expires_at: new Date(now.getTime() + CHALLENGE_TTL_MS).toISOString(),
      failures: 0,
      used: 0,
    })
    .execute();
  return id;
}

const BEARER = /^bearer\s+(\S+)\s*$/i;

/** Resolves the Authorization header into a Caller, or throws 401. */
export async function authenticate(deps: Deps, header: string | undefined): Promise<Caller> {
  if (!header) throw unauthorized('authentication required: send Authorization: Bearer <token>');
  const m = BEARER.exec(header);
  if (!m) throw unauthorized('malformed Authorization header: expected "Bearer <token>"');
  const v = verifiedToken(deps, m[1]);
  if (!v.ok) {
    if (v.reason === 'expired') throw unauthorized('token expired: log in again', 'token_expired');
    throw unauthorized('invalid token');
  }
  // The change counters, read after this request arrived (concurrent requests share that read:
  // lib/fresh-read.ts); the caller (session, user, access) is read again only after a session
  // ended or a user or their access changed, on any replica.
  const generations = await readGenerations(deps.db, deps.readNow);
  const found = await byGeneration(deps.db, 'caller', generations.auth, v.claims.jti, () => loadCaller(deps, v.claims.jti));
  if (!found || found.caller.user.username !== v.claims.sub) {
    // Taking a user's API access away ends their sessions; their old tokens then say why (the
    // signature checked out, so `sub` is this server's word).
    const user = await deps.db.selectFrom('users').select(['username', 'api']).where('username', '=', v.claims.sub).executeTakeFirst();
    if (user && !user.api) throw apiDisabled(user.username);
    throw unauthorized('session ended (password changed, user removed or logged out): log in again', 'token_expired');
  }
  // A session issued while the flag was being taken away (an MFA step finishing meanwhile).
  if (!found.caller.user.api) throw apiDisabled(found.caller.user.username);
  // The session row's own expiry, not only the JWT's: the row is what the server controls.
  if (found.expiresAt <= deps.now().getTime()) throw unauthorized('session expired: log in again', 'token_expired');
  return { ...found.caller, generations };
}

/** Tokens whose signature checked out, per signing secret: the HMAC is computed once per token. */
const verifiedTokens = new WeakMap<Buffer, Map<string, JwtClaims>>();

function verifiedToken(deps: Deps, token: string): JwtResult {
  let known = verifiedTokens.get(deps.config.jwtSecret);
  if (!known) verifiedTokens.set(deps.config.jwtSecret, (known = new Map<string, JwtClaims>()));
  const nowMs = deps.now().getTime();
  const claims = known.get(token);
  if (claims) return claims.exp * 1000 <= nowMs ? { ok: false, reason: 'expired' } : { ok: true, claims };
  const v = verifyJwt(token, deps.config.jwtSecret, nowMs);
  if (v.ok) {
    if (known.size >= 10_000) known.clear();
    known.set(token, v.claims);
  }
  return v;
}

/** The session's caller as stored; undefined when the session is gone. Shared by requests: read-only. */
async function loadCaller(deps: Deps, jti: string): Promise<{ caller: Caller; expiresAt: number } | undefined> {
  const row = await deps.db
    .selectFrom('sessions')
    .innerJoin('users', 'users.id', 'sessions.user_id')
    .selectAll('users')
    .select(['sessions.csrf_token', 'sessions.expires_at'])
    .where('sessions.jti', '=', jti)
    .executeTakeFirst();
  if (!row) return undefined;
  const { csrf_token, expires_at, ...user } = row;
  return {
    caller: { user, isSuperAdmin: !!user.admin, access: await envLevels(deps, user.id), jti, csrfToken: csrf_token },
    expiresAt: Date.parse(expires_at),
  };
}

/** POST /api/v1/logout: ends the calling session (its token answers 401 token_expired from now on). */
export async function logout(deps: Deps, caller: Caller, sourceIp: string): Promise<{ message: string }> {
  await deps.db.deleteFrom('sessions').where('jti', '=', caller.jti).execute();
  await writeAudit(deps, {
    line: `user ${caller.user.username} logged out`,
    logType: LogTypes.logout,
    username: caller.user.username,
    sourceIp,
  });
  return { message: 'logged out: this session has ended' };
}

/** Ends every session of a user, except `keepJti` when given. */
export async function endSessions(deps: Deps, userId: number, keepJti?: string): Promise<void> {
  let q = deps.db.deleteFrom('sessions').where('user_id', '=', userId);
  if (keepJti) q = q.where('jti', '!=', keepJti);
  await q.execute();
}
