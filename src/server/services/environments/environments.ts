// Environments: lookup by name or UUID, the API shape, the map (4.7), read and intervals (4.6).
import { byGeneration } from '../../lib/generation-cache.js';
import { atomically } from '../../store/db.js';
import type { Deps, Caller } from '../../context.js';
import type { EnvironmentRow } from '../../store/schema.js';
import type { Environment, EnvironmentMap, IntervalsBody, MapTarget } from '../../../api/index.js';
import { LogTypes, MapTargets } from '../../../api/index.js';
import { badRequest, invalidTarget, notFound } from '../../errors.js';
import { hasLevel } from '../../permissions.js';
import { writeAudit } from '../audit/audit.js';
import { genericFlags } from './enroll-scripts.js';
import { agentConfig } from './osquery-config.js';

/** `{env}` in a path: exact name or UUID (UUIDs compared case-insensitively). */
/** `configGeneration` (the request's config counter): the row is read once per environment change. */
export async function findEnv(deps: Deps, ref: string, configGeneration?: number): Promise<EnvironmentRow | undefined> {
  const read = () =>
    deps.db
      .selectFrom('environments')
      .selectAll()
      .where((eb) => eb.or([eb('name', '=', ref), eb('uuid', '=', ref.toLowerCase())]))
      .executeTakeFirst();
  return configGeneration === undefined ? read() : byGeneration(deps.db, 'environment', configGeneration, ref, read);
}

/** findEnv, or 404; `configGeneration` as findEnv's. */
export async function requireEnv(deps: Deps, ref: string, configGeneration?: number): Promise<EnvironmentRow> {
  const env = await findEnv(deps, ref, configGeneration);
  if (!env) throw notFound(`environment "${ref}" not found`);
  return env;
}

export function toEnvironment(r: EnvironmentRow, opts: { withSecrets: boolean }): Environment {
  const b = (v: number) => v !== 0;
  return {
    id: r.id,
    uuid: r.uuid,
    name: r.name,
    type: r.type,
    hostname: r.hostname,
    icon: r.icon,
    user_id: r.user_id,
    secret: opts.withSecrets ? r.secret : '',
    certificate: opts.withSecrets ? r.certificate : '',
    // Stored flags when an operator set them, else the ones generated from the current values.
    flags: opts.withSecrets ? genericFlags(r) : '',
    options: r.options,
    schedule: r.schedule,
    packs: r.packs,
    decorators: r.decorators,
    atc: r.atc,
    // Derived, never stored: what agents receive now, so it cannot fall behind the parts.
    configuration: JSON.stringify(agentConfig(r).config, null, 2),
    accept_enrolls: b(r.accept_enrolls),
    config_tls: b(r.config_tls),
    logging_tls: b(r.logging_tls),
    query_tls: b(r.query_tls),
    carves_tls: b(r.carves_tls),
    debug_http: b(r.debug_http),
    config_interval: r.config_interval,
    log_interval: r.log_interval,
    query_interval: r.query_interval,
    enroll_path: r.enroll_path,
    enroll_secret_path: r.enroll_secret_path,
    remove_secret_path: r.remove_secret_path,
    config_path: r.config_path,
    log_path: r.log_path,
    query_read_path: r.query_read_path,
    query_write_path: r.query_write_path,
    carver_init_path: r.carver_init_path,
    carver_block_path: r.carver_block_path,
    enroll_expire: r.enroll_expire,
    remove_expire: r.remove_expire,
    deb_package: r.deb_package,
    msi_package: r.msi_package,
    pkg_package: r.pkg_package,
    rpm_package: r.rpm_package,
    created_at: r.created_at,
    updated_at: r.updated_at,
    hostname_pinned: b(r.hostname_pinned),
    certificate_pinned: b(r.certificate_pinned),
    detail_refresh: r.detail_refresh,
  };
}

export async function accessibleEnvs(deps: Deps, caller: Caller, configGeneration?: number): Promise<EnvironmentRow[]> {
  const read = () => deps.db.selectFrom('environments').selectAll().orderBy('name').execute();
  const all = configGeneration === undefined ? await read() : await byGeneration(deps.db, 'environments', configGeneration, '', read);
  return all.filter((e) => hasLevel(caller.isSuperAdmin, caller.access.get(e.id), 'user'));
}

export async function environmentMap(deps: Deps, caller: Caller, target: string): Promise<EnvironmentMap> {
  if (!(MapTargets as readonly string[]).includes(target)) throw invalidTarget(target, MapTargets);
  const out: EnvironmentMap = {};
  for (const e of await accessibleEnvs(deps, caller)) {
    out[String(e[target as MapTarget])] = { id: e.id, name: e.name, uuid: e.uuid };
  }
  return out;
}

/** Env admins (and super-admins) see the enrollment secrets of an environment. */
export function isEnvAdmin(caller: Caller, env: EnvironmentRow): boolean {
  return hasLevel(caller.isSuperAdmin, caller.access.get(env.id), 'admin');
}

/** GET /api/v1/environments/{env} (contract.md 5): secrets only for env admins. */
export function readEnvironment(caller: Caller, env: EnvironmentRow): Environment {
  return toEnvironment(env, { withSecrets: isEnvAdmin(caller, env) });
}

/**
 * The largest interval accepted: intervals become osquery flags and SQL integers, and nobody
 * wants a check-in less often than yearly.
 */
export const INTERVAL_MAX = 31_536_000;
const INTERVAL_FIELDS = ['config_interval', 'log_interval', 'query_interval'] as const;

/** 4.6: each given interval an integer >= 1; omitted ones keep their value. */
export async function updateIntervals(
  deps: Deps,
  caller: Caller,
  env: EnvironmentRow,
  body: IntervalsBody,
  sourceIp: string,
): Promise<Environment> {
  // The change and its audit row commit together (store/db.ts, atomically).
  return atomically(deps, async (deps) => {
    const changes: Partial<Record<(typeof INTERVAL_FIELDS)[number], number>> = {};
    for (const f of INTERVAL_FIELDS) {
      const v = body[f];
      if (v === undefined) continue;
      if (!Number.isInteger(v) || v < 1 || v > INTERVAL_MAX)
        throw badRequest(`${f} must be an integer from 1 to ${INTERVAL_MAX} (seconds)`);
      changes[f] = v;
    }
    const given = Object.keys(changes);
    if (given.length === 0) return toEnvironment(env, { withSecrets: true });
    await deps.db
      .updateTable('environments')
      .set({ ...changes, updated_at: deps.now().toISOString() })
      .where('id', '=', env.id)
      .execute();
    await writeAudit(deps, {
      line: `intervals of ${env.name} set: ${given.map((f) => `${f}=${changes[f as keyof typeof changes]}`).join(', ')}`,
      logType: LogTypes.environment,
      username: caller.user.username,
      sourceIp,
      env,
    });
    return toEnvironment(await reloadEnv(deps, env.id), { withSecrets: true });
  });
}

export async function reloadEnv(deps: Deps, id: number): Promise<EnvironmentRow> {
  return deps.db.selectFrom('environments').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}
