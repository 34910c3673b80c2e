// Environments created, edited and deleted (issue 27): by `--create-env` at start, and by the API
// (POST /api/v1/environments, PATCH and DELETE /api/v1/environments/{env}, osctrl's paths).
import { randomUUID } from 'node:crypto';
import type { Kysely, Updateable } from 'kysely';
import { atomically } from '../../store/db.js';
import type { Caller, Deps } from '../../context.js';
import type { DB, EnvironmentRow, EnvironmentsTable } from '../../store/schema.js';
import { LogTypes, NEVER, type Environment, type EnvironmentCreateBody, type EnvironmentEditBody } from '../../../api/index.js';
import { badRequest, conflict } from '../../errors.js';
import { randomHex } from '../../lib/crypto.js';
import { writeAudit } from '../audit/audit.js';
import { INTERVAL_MAX, reloadEnv, toEnvironment } from './environments.js';
import { storedPem } from './agent-identity.js';

/** Environment names: path segments, flag values and file names everywhere (as --create-env). */
export const ENV_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
/** Static segments of /api/v1/environments/...: an environment of that name would be unreachable by name. */
const RESERVED_NAMES = new Set(['map', 'intervals', 'config', 'expiration', 'actions']);
/** Shortest detail refresh: every minute is already more than osquery's own default for its distributed reads. */
export const DETAIL_REFRESH_MIN = 60;

export interface NewEnvironment {
  uuid?: string;
  /** --tls_hostname agents get; `hostnamePinned` when it was given for this environment. */
  hostname: string;
  hostnamePinned?: boolean;
  certificate?: string;
  now: Date;
  secret?: string;
  /** Seconds enrollment stays open; 0 or absent: until someone closes it. */
  enrollWindowSeconds?: number;
  icon?: string;
  type?: string;
  acceptEnrolls?: boolean;
  debugHttp?: boolean;
  intervals?: { config_interval?: number; log_interval?: number; query_interval?: number };
  detailRefresh?: number;
}

/** Inserts an environment with fresh paths and secrets; returns its id. */
export async function createEnvironment(db: Kysely<DB>, name: string, o: NewEnvironment): Promise<number> {
  const ts = o.now.toISOString();
  const expire = o.enrollWindowSeconds ? new Date(o.now.getTime() + o.enrollWindowSeconds * 1000).toISOString() : NEVER;
  const slug = randomHex(8);
  const r = await db
    .insertInto('environments')
    .values({
      uuid: o.uuid ?? randomUUID(),
      name,
      type: o.type ?? 'osquery',
      hostname: o.hostname,
      hostname_pinned: o.hostnamePinned ? 1 : 0,
      icon: o.icon ?? 'fas fa-wrench',
      user_id: 0,
      secret: o.secret ?? randomHex(24),
      certificate: storedPem(o.certificate ?? ''),
      flags: '',
      // No host_identifier (issue 26): from the configuration it would override each host's own flag.
      options: '{"disable_distributed":false}',
      schedule: '{}',
      packs: '{}',
      decorators: '{}',
      atc: '{}',
      configuration: '{}',
      accept_enrolls: o.acceptEnrolls === false ? 0 : 1,
      config_tls: 1,
      logging_tls: 1,
      query_tls: 1,
      carves_tls: 1,
      debug_http: o.debugHttp ? 1 : 0,
      config_interval: o.intervals?.config_interval ?? 300,
      log_interval: o.intervals?.log_interval ?? 600,
      query_interval: o.intervals?.query_interval ?? 60,
      detail_refresh: o.detailRefresh ?? 0,
      enroll_path: `${slug}/enroll`,
      enroll_secret_path: randomHex(16),
      remove_secret_path: randomHex(16),
      config_path: `${slug}/config`,
      log_path: `${slug}/log`,
      query_read_path: `${slug}/read`,
      query_write_path: `${slug}/write`,
      carver_init_path: `${slug}/init`,
      carver_block_path: `${slug}/block`,
      enroll_expire: expire,
      remove_expire: NEVER,
      deb_package: '',
      msi_package: '',
      pkg_package: '',
      rpm_package: '',
      created_at: ts,
      updated_at: ts,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return r.id;
}

/** A name for a new or renamed environment, or a 400 saying why not. */
export function checkEnvName(name: unknown): string {
  if (typeof name !== 'string' || !ENV_NAME.test(name))
    throw badRequest('name must be 1 to 64 letters, digits, ".", "_" or "-", starting with a letter or digit');
  if (RESERVED_NAMES.has(name.toLowerCase()))
    throw badRequest(`name "${name}" is a path segment of the API (${[...RESERVED_NAMES].join(', ')} are reserved)`);
  return name;
}

const HOST =
  /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*)(?::(\d{1,5}))?$/;

/** osquery's --tls_hostname: NAME or NAME:PORT (no scheme, no path), a host agents can reach. */
export function checkAgentHost(v: string): string {
  const h = v.trim();
  const m = HOST.exec(h);
  const port = m?.[1] === undefined ? 443 : Number(m[1]);
  if (!m || h.length > 253 || port < 1 || port > 65535) {
    throw badRequest(`hostname must be the name agents reach the agent door by, NAME or NAME:PORT (no https://, no path), got "${v}"`);
  }
  if (/^(0\.0\.0\.0|\[::\])(:|$)/.test(h)) throw badRequest(`hostname "${v}" is a bind-all address, not one agents can reach`);
  return h;
}

function checkInterval(field: string, v: number | undefined): number | undefined {
  if (v === undefined) return undefined;
  if (!Number.isInteger(v) || v < 1 || v > INTERVAL_MAX)
    throw badRequest(`${field} must be an integer from 1 to ${INTERVAL_MAX} (seconds)`);
  return v;
}

function checkDetailRefresh(v: number | undefined): number | undefined {
  if (v === undefined) return undefined;
  if (!Number.isInteger(v) || (v !== 0 && (v < DETAIL_REFRESH_MIN || v > INTERVAL_MAX))) {
    throw badRequest(`detail_refresh must be 0 (the server's --detail-refresh) or from ${DETAIL_REFRESH_MIN} to ${INTERVAL_MAX} seconds`);
  }
  return v;
}

function checkLabel(field: string, v: string | undefined): string | undefined {
  if (v === undefined) return undefined;
  // eslint-disable-next-line no-control-regex -- the control characters are what it refuses
  if (v.length > 64 || /[\x00-\x1f\x7f]/.test(v)) throw badRequest(`${field} must be at most 64 characters, without control characters`);
  return v;
}

const days = (s: number) => (s % 86400 === 0 ? `${s / 86400}d` : s % 3600 === 0 ? `${s / 3600}h` : `${s}s`);

/** POST /api/v1/environments (super-admin): 409 when the name is taken. */
export async function createEnvironmentFor(
  deps: Deps,
  caller: Caller,
  body: EnvironmentCreateBody,
  sourceIp: string,
): Promise<Environment> {
  const name = checkEnvName(body.name);
  const hostname = body.hostname !== undefined && body.hostname.trim() !== '' ? checkAgentHost(body.hostname) : undefined;
  const window = body.enroll_window ?? deps.config.enrollWindowSeconds;
  if (!Number.isInteger(window) || window < 0 || window > INTERVAL_MAX)
    throw badRequest(`enroll_window must be 0 (open until closed) or up to ${INTERVAL_MAX} seconds`);
  const intervals = {
    config_interval: checkInterval('config_interval', body.config_interval),
    log_interval: checkInterval('log_interval', body.log_interval),
    query_interval: checkInterval('query_interval', body.query_interval),
  };
  const detailRefresh = checkDetailRefresh(body.detail_refresh);
  const icon = checkLabel('icon', body.icon);
  const type = checkLabel('type', body.type);
  return atomically(deps, async (deps) => {
    const taken = await deps.db.selectFrom('environments').select('id').where('name', '=', name).executeTakeFirst();
    if (taken) throw conflict(`environment "${name}" already exists`);
    const id = await createEnvironment(deps.db, name, {
      hostname: hostname ?? deps.agentIdentity?.hostname ?? '',
      hostnamePinned: hostname !== undefined,
      certificate: deps.agentIdentity?.certificate,
      now: deps.now(),
      enrollWindowSeconds: window,
      icon,
      type,
      acceptEnrolls: body.accept_enrolls,
      debugHttp: body.debug_http,
      intervals,
      detailRefresh,
    });
    const env = await reloadEnv(deps, id);
    await writeAudit(deps, {
      line: `environment ${name} created: agent host ${env.hostname}${hostname ? ' (set for it)' : ''}, enrollment ${window ? `open for ${days(window)}, until ${env.enroll_expire}` : 'open until closed'}`,
      logType: LogTypes.environment,
      username: caller.user.username,
      sourceIp,
      env,
    });
    return toEnvironment(env, { withSecrets: true });
  });
}

/** PATCH /api/v1/environments/{env} (super-admin): only the fields given change; flags and scripts follow at once. */
export async function editEnvironment(
  deps: Deps,
  caller: Caller,
  env: EnvironmentRow,
  body: EnvironmentEditBody,
  sourceIp: string,
): Promise<Environment> {
  const changes: Updateable<EnvironmentsTable> = {};
  const said: string[] = [];
  if (body.name !== undefined && body.name !== env.name) {
    changes.name = checkEnvName(body.name);
    said.push(`name ${env.name} -> ${changes.name}`);
  }
  if (body.hostname !== undefined) {
    if (body.hostname.trim() === '') {
      if (!deps.agentIdentity?.hostname)
        throw badRequest('this server has no agent URL for the environment to follow (start it with --agent-url, or give a hostname)');
      changes.hostname = deps.agentIdentity.hostname;
      changes.hostname_pinned = 0;
      said.push(`agent host follows the server (${changes.hostname})`);
    } else {
      changes.hostname = checkAgentHost(body.hostname);
      changes.hostname_pinned = 1;
      said.push(`agent host ${changes.hostname}`);
    }
  }
  for (const f of ['config_interval', 'log_interval', 'query_interval'] as const) {
    const v = checkInterval(f, body[f]);
    if (v !== undefined) {
      changes[f] = v;
      said.push(`${f}=${v}`);
    }
  }
  const refresh = checkDetailRefresh(body.detail_refresh);
  if (refresh !== undefined) {
    changes.detail_refresh = refresh;
    said.push(`detail_refresh=${refresh || 'server default'}`);
  }
  for (const f of ['icon', 'type'] as const) {
    const v = checkLabel(f, body[f]);
    if (v !== undefined) {
      changes[f] = v;
      said.push(`${f}=${v}`);
    }
  }
  for (const f of ['accept_enrolls', 'debug_http'] as const) {
    const v = body[f];
    if (v !== undefined) {
      changes[f] = v ? 1 : 0;
      said.push(`${f}=${v}`);
    }
  }
  if (said.length === 0) return toEnvironment(env, { withSecrets: true });
  return atomically(deps, async (deps) => {
    if (changes.name) {
      const taken = await deps.db
        .selectFrom('environments')
        .select('id')
        .where('name', '=', changes.name)
        .where('id', '!=', env.id)
        .executeTakeFirst();
      if (taken) throw conflict(`environment "${changes.name}" already exists`);
    }
    await deps.db
      .updateTable('environments')
      .set({ ...changes, updated_at: deps.now().toISOString() })
      .where('id', '=', env.id)
      .execute();
    await writeAudit(deps, {
      line: `environment ${env.name} edited: ${said.join(', ')}`,
      logType: LogTypes.environment,
      username: caller.user.username,
      sourceIp,
      env,
    });
    return toEnvironment(await reloadEnv(deps, env.id), { withSecrets: true });
  });
}

/**
 * DELETE /api/v1/environments/{env} (super-admin): the environment with its nodes, tags, live
 * queries and their results, carves and their blocks, log sinks, settings and user access, in one
 * transaction. The audit log keeps its rows (and this one).
 */
export async function deleteEnvironment(deps: Deps, caller: Caller, env: EnvironmentRow, sourceIp: string): Promise<string> {
  return atomically(deps, async (deps) => {
    const db = deps.db;
    const count = await db
      .selectFrom('nodes')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('environment_id', '=', env.id)
      .executeTakeFirstOrThrow();
    const nodes = Number(count.n);
    const queries = db.selectFrom('queries').select('id').where('environment_id', '=', env.id);
    const nodeIds = db.selectFrom('nodes').select('id').where('environment_id', '=', env.id);
    // What the foreign keys do not cascade to (rows keyed by ids without a constraint).
    await db
      .deleteFrom('carve_blocks')
      .where('session_id', 'in', db.selectFrom('carve_files').select('session_id').where('query_id', 'in', queries))
      .execute();
    await db
      .deleteFrom('query_results')
      .where((eb) => eb.or([eb('query_id', 'in', queries), eb('node_id', 'in', nodeIds)]))
      .execute();
    await db
      .deleteFrom('node_queries')
      .where((eb) => eb.or([eb('query_id', 'in', queries), eb('node_id', 'in', nodeIds)]))
      .execute();
    await db.deleteFrom('log_sinks').where('environment_id', '=', env.id).execute();
    await db.deleteFrom('settings').where('environment_id', '=', env.id).execute();
    // Nodes (and their tag links), tags, queries (and carve files), user access: by cascade.
    await db.deleteFrom('environments').where('id', '=', env.id).execute();
    const message = `environment ${env.name} deleted with ${nodes} node${nodes === 1 ? '' : 's'}`;
    await writeAudit(deps, { line: message, logType: LogTypes.environment, username: caller.user.username, sourceIp, env });
    return message;
  });
}
