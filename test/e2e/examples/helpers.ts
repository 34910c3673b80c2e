// Building blocks of fixtures: state made through the admin API (users, tags, schedule), users
// of an example's own, the demo's MFA user, and nodes an agent enrolls on demand.
import { totpCode } from '../../../src/lib/totp.js';
import { apiCall } from '../../helpers/admin-cli.js';
import type { Sandbox, World } from './world.js';

/** Passwords examples type or pipe in (the policy wants 8 characters or more). */
export const NEW_PASSWORD = 'examples-new-pass-2';

let counter = 0;

export async function userExists(world: World, username: string): Promise<boolean> {
  const r = await world.api('GET', '/api/v1/users');
  return (r.body as { username: string }[]).some((u) => u.username === username);
}

/** The user exists (created with the world's password, env user on `envs`) . */
export async function ensureUser(world: World, username: string, o: { envs?: string[]; admin?: boolean } = {}): Promise<void> {
  if (await userExists(world, username)) return;
  await world.api('POST', `/api/v1/users/${username}/add`, {
    username,
    password: world.password,
    email: `${username}@example.com`,
    environments: o.envs ?? ['prod'],
    user_access: true,
    admin: o.admin ?? false,
  });
}

export async function ensureNoUser(world: World, username: string): Promise<void> {
  if (await userExists(world, username)) await world.api('POST', `/api/v1/users/${username}/remove`, { username });
}

export interface OwnUser {
  username: string;
  password: string;
  /** With `totp`: the TOTP secret (on, or only begun with `totp: 'begun'`). */
  secret?: string;
}

/**
 * A user of the example's own (so its MFA and password changes touch no one else), logged in
 * as the sandbox's default profile on prod.
 */
export async function ownUser(sb: Sandbox, o: { totp?: 'on' | 'begun' } = {}): Promise<OwnUser> {
  const username = `example-user-${process.pid}-${++counter}`;
  await ensureUser(sb.world, username);
  await sb.login(username);
  const user: OwnUser = { username, password: sb.world.password };
  if (o.totp) {
    const token = await tokenOf(sb.world, username);
    const begin = await apiCall(sb.world.url, 'POST', '/api/v1/users/me/mfa/totp', { token });
    if (begin.status !== 200) throw new Error(`totp begin: ${begin.status} ${JSON.stringify(begin.body)}`);
    user.secret = (begin.body as { secret: string }).secret;
    if (o.totp === 'on') {
      const ok = await apiCall(sb.world.url, 'POST', '/api/v1/users/me/mfa/totp/confirm', { token, body: { code: totpCode(user.secret) } });
      if (ok.status !== 200) throw new Error(`totp confirm: ${ok.status} ${JSON.stringify(ok.body)}`);
    }
  }
  return user;
}

async function tokenOf(world: World, username: string, password = world.password): Promise<string> {
  const r = await apiCall(world.url, 'POST', '/api/v1/login/prod', { body: { username, password } });
  if (r.status !== 200) throw new Error(`login ${username}: ${r.status} ${JSON.stringify(r.body)}`);
  return (r.body as { token: string }).token;
}

/** The demo's MFA user, as the server's banner prints it: its TOTP secret and recovery codes. */
export function demoMfa(world: World): { secret: string; recoveryCodes: string[] } {
  const banner = world.banner();
  const secret = /TOTP secret:\s+([A-Z2-7]+)/.exec(banner)?.[1];
  const codes = /recovery codes:\s+((?:[a-z0-9-]+\s+)+)/.exec(banner)?.[1]?.trim().split(/\s+/);
  if (!secret || !codes?.length) throw new Error(`no MFA user in the banner:\n${banner}`);
  return { secret, recoveryCodes: codes };
}

/** The TOTP code an authenticator app shows now for `secret`. */
export const totpNow = (secret: string): string => totpCode(secret);

export async function tagExists(world: World, env: string, name: string): Promise<boolean> {
  const r = await world.api('GET', `/api/v1/tags/${env}`);
  return (r.body as { name: string }[]).some((t) => t.name === name);
}

export async function ensureTag(world: World, env: string, name: string): Promise<void> {
  if (!(await tagExists(world, env, name)))
    await world.api('POST', `/api/v1/tags/${env}/add`, { name, description: `${name} (example fixture)` });
}

export async function ensureNoTag(world: World, env: string, name: string): Promise<void> {
  if (await tagExists(world, env, name)) await world.api('POST', `/api/v1/tags/${env}/remove`, { name });
}

/** The demo's first simulated agent (`fleetctl server --dev --dev-agents N` prints their names). */
export function firstLiveAgent(world: World): string {
  const m = /tagged live-agents \(([^,)]+)/.exec(world.banner());
  if (!m) throw new Error(`no simulated agents in the banner:\n${world.banner()}`);
  return m[1];
}

// A configuration part is free-form JSON (osquery's schema): fixtures edit it by key.

type Part = Record<string, any>;

/** Changes one part of an environment's osquery configuration (schedule, packs, ...) through the API. */
export async function editConfigPart(world: World, env: string, part: string, change: (current: Part) => Part): Promise<void> {
  const r = await world.api('GET', `/api/v1/environments/${env}/config/${part}`);
  await world.api(
    'PUT',
    `/api/v1/environments/${env}/config/${part}`,
    change({ ...((r.body as Record<string, Part | undefined>)[part] ?? {}) }),
  );
}

/** A scheduled query of the environment's schedule, there (`true`) or not (`false`). */
export async function scheduled(world: World, env: string, names: Record<string, boolean>): Promise<void> {
  await editConfigPart(world, env, 'schedule', (s) => {
    for (const [name, present] of Object.entries(names)) {
      if (!present) delete s[name];
      else s[name] ??= { query: `SELECT * FROM osquery_info; -- ${name}`, interval: 300 };
    }
    return s;
  });
}

/** A pack with the given queries there (added when missing), others of the pack removed when listed false. */
export async function packed(world: World, env: string, pack: string, names: Record<string, boolean>): Promise<void> {
  await editConfigPart(world, env, 'packs', (packs) => {
    const p = (packs[pack] ??= { queries: {} }) as { queries?: Part };
    p.queries ??= {};
    const queries = p.queries;
    for (const [name, present] of Object.entries(names)) {
      if (!present) delete queries[name];
      else queries[name] ??= { query: `SELECT * FROM processes; -- ${name}`, interval: 300 };
    }
    return packs;
  });
}

/** Removes every log sink of an environment (by id; 0 is global). */
export async function noSinks(world: World, envId: number): Promise<void> {
  const r = await world.api('GET', `/api/v1/log-sinks?environment_id=${envId}`);
  for (const s of r.body as { id: number }[]) await world.api('DELETE', `/api/v1/log-sinks/${s.id}`);
}

/** An environment's id by name; 0 for `global`. */
export async function envId(world: World, env: string): Promise<number> {
  if (env === 'global') return 0;
  return ((await world.api('GET', `/api/v1/environments/${env}`)).body as { id: number }).id;
}

async function sinkNamed(world: World, env: string, name: string): Promise<{ id: number } | undefined> {
  const r = await world.api('GET', `/api/v1/log-sinks?environment_id=${await envId(world, env)}`);
  return (r.body as { id: number; name: string }[]).find((s) => s.name === name);
}

/** A log sink of that name in `env` (or global), added as given when missing. */
export async function ensureSink(
  world: World,
  env: string,
  sink: { name: string; type: string; source: string; config: Record<string, unknown>; enabled?: boolean },
): Promise<void> {
  if (await sinkNamed(world, env, sink.name)) return;
  await world.api('POST', '/api/v1/log-sinks', { ...sink, environment_id: await envId(world, env) });
}

export async function ensureNoSink(world: World, env: string, name: string): Promise<void> {
  const s = await sinkNamed(world, env, name);
  if (s) await world.api('DELETE', `/api/v1/log-sinks/${s.id}`);
}

export async function envExists(world: World, name: string): Promise<boolean> {
  return (await world.api('GET', `/api/v1/environments/${name}`, undefined, [200, 404])).status === 200;
}

/** The environment exists (created with the server's defaults when missing). */
export async function ensureEnv(world: World, name: string): Promise<void> {
  if (!(await envExists(world, name))) await world.api('POST', '/api/v1/environments', { name });
}

/** No environment of that name (deleted with its nodes when there is one). */
export async function ensureNoEnv(world: World, name: string): Promise<void> {
  if (await envExists(world, name)) await world.api('DELETE', `/api/v1/environments/${name}`);
}
