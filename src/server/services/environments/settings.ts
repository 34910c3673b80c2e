// Settings (4.14 read, 4.15 update): global rows (environment 0) and per-environment overrides.
import type { Updateable } from 'kysely';
import { atomically } from '../../store/db.js';
import type { Deps, Caller } from '../../context.js';
import type { EnvironmentRow, SettingRow, SettingsTable } from '../../store/schema.js';
import { LogTypes, SettingServices, type Setting, type SettingUpdateBody } from '../../../api/index.js';
import { badRequest, invalidTarget, notFound } from '../../errors.js';
import { writeAudit } from '../audit/audit.js';
import { requireEnv } from './environments.js';
import { settingInfo, settingRule } from './settings-catalogue.js';

export const INTEGER_SETTING_MAX = 2_147_483_647;

/**
 * Lower bounds of integer settings. Every seeded period (seconds) or threshold (hours) needs at
 * least 1: 0 would mean "busy loop" or "every node inactive". Any other integer setting must not
 * be negative (tls/accelerated_seconds: 0 turns acceleration off).
 */
const INTEGER_MIN: Record<string, number> = {
  'admin/inactive_hours': 1,
  'admin/cleanup_sessions': 1,
  'admin/cleanup_expired': 1,
  // Issue 30: 0 MiB would delete every line as it arrives (0 days means no age bound).
  'admin/retention_logs_mb': 1,
};
const STRING_MAX = 4096;

/** Settings only the server as a whole has (issue 27: the retention purge reads the global rows). */
const GLOBAL_ONLY = new Set(['admin/retention_query_results_days', 'admin/retention_carves_days', 'admin/retention_audit_days']);

export function toSetting(r: SettingRow): Setting {
  return {
    id: r.id,
    name: r.name,
    service: r.service,
    type: r.type,
    info: settingInfo(r.service, r.name, r.info),
    environmentID: r.environment_id,
    boolean: !!r.boolean_value,
    integer: Number(r.integer_value),
    string: r.string_value,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    deletedAt: { time: r.deleted_at, valid: r.deleted_at !== null },
  };
}

function checkService(service: string): void {
  if (!(SettingServices as readonly string[]).includes(service)) {
    throw invalidTarget(service, SettingServices);
  }
}

/** 4.14: the env's own rows (by name), then the global rows it does not override (by name). */
export async function readSettings(deps: Deps, service: string, env: EnvironmentRow): Promise<Setting[]> {
  checkService(service);
  const rows = await deps.db
    .selectFrom('settings')
    .selectAll()
    .where('service', '=', service)
    .where('environment_id', 'in', [0, env.id])
    .where('deleted_at', 'is', null)
    .orderBy('name')
    .execute();
  const own = env.id === 0 ? [] : rows.filter((r) => r.environment_id === env.id);
  const overridden = new Set(own.map((r) => r.name));
  const global = rows.filter((r) => r.environment_id === 0 && !overridden.has(r.name));
  return [...own, ...global].map(toSetting);
}

/** The value columns a body sets for a setting of the stored type; 400 when it does not fit. */
function valueFor(row: SettingRow, body: SettingUpdateBody): Updateable<SettingsTable> {
  if (body.type !== undefined && body.type !== row.type) {
    throw badRequest(`setting ${row.service}/${row.name} is of type ${row.type}, not ${body.type}`);
  }
  const key = `${row.service}/${row.name}`;
  switch (row.type) {
    case 'boolean':
      if (typeof body.boolean !== 'boolean') throw badRequest(`setting ${key} is boolean: give "boolean": true or false`);
      return { boolean_value: body.boolean ? 1 : 0 };
    case 'integer': {
      const v = body.integer;
      if (typeof v !== 'number' || !Number.isInteger(v)) throw badRequest(`setting ${key} is integer: give "integer": <whole number>`);
      const min = INTEGER_MIN[key] ?? 0;
      if (v < min || v > INTEGER_SETTING_MAX) throw badRequest(`${key} must be from ${min} to ${INTEGER_SETTING_MAX}, got ${v}`);
      return { integer_value: v };
    }
    case 'string':
      if (typeof body.string !== 'string') throw badRequest(`setting ${key} is string: give "string": "<text>"`);
      if (body.string.length > STRING_MAX) throw badRequest(`${key} is longer than ${STRING_MAX} characters`);
      return { string_value: body.string };
  }
  throw badRequest(`setting ${key} has an unknown stored type ${row.type}`);
}

const shownValue = (r: Updateable<SettingsTable>) =>
  r.boolean_value !== undefined
    ? String(!!r.boolean_value)
    : r.integer_value !== undefined
      ? String(r.integer_value)
      : JSON.stringify(r.string_value);

/**
 * 4.15: updates the global row, or with `envRef` the environment's override (created from the
 * global row when the environment has none yet).
 */
export async function updateSetting(
  deps: Deps,
  caller: Caller,
  service: string,
  name: string,
  envRef: string | undefined,
  body: SettingUpdateBody,
  sourceIp: string,
): Promise<Setting> {
  // The change and its audit row commit together (store/db.ts, atomically).
  return atomically(deps, async (deps) => {
    checkService(service);
    if (envRef !== undefined && envRef.trim() === '') throw badRequest('env must name an environment (name or UUID) when given');
    const env = envRef === undefined ? undefined : await requireEnv(deps, envRef);
    if (env && GLOBAL_ONLY.has(`${service}/${name}`))
      throw badRequest(`setting ${service}/${name} applies to the whole server; set it without an environment`);
    const live = (envId: number) =>
      deps.db
        .selectFrom('settings')
        .selectAll()
        .where('service', '=', service)
        .where('name', '=', name)
        .where('environment_id', '=', envId)
        .where('deleted_at', 'is', null)
        .executeTakeFirst();
    const global = await live(0);
    const current = (env ? await live(env.id) : undefined) ?? global;
    if (!current) throw notFound(`setting ${service}/${name} not found`);
    // Nothing is stored that the server would ignore (issue 29): see settings-catalogue.ts.
    const rule = settingRule(service, name);
    if (rule && 'refused' in rule) throw badRequest(`${service}/${name} has no effect on this server: ${rule.refused}`);
    if (env && rule?.scope === 'server')
      throw badRequest(`${service}/${name} is server-wide: it has no per-environment value (leave out env)`);
    const value = valueFor(current, body);
    const ts = deps.now().toISOString();
    let id: number;
    if (env && current.environment_id !== env.id) {
      // The environment's first override. A soft-deleted override row is revived rather than duplicated.
      const row = await deps.db
        .insertInto('settings')
        .values({
          name,
          service,
          type: current.type,
          info: current.info,
          environment_id: env.id,
          boolean_value: current.boolean_value,
          integer_value: current.integer_value,
          string_value: current.string_value,
          ...value,
          created_at: ts,
          updated_at: ts,
          deleted_at: null,
        })
        .onConflict((oc) => oc.columns(['service', 'name', 'environment_id']).doUpdateSet({ ...value, updated_at: ts, deleted_at: null }))
        .returning('id')
        .executeTakeFirstOrThrow();
      id = row.id;
    } else {
      await deps.db
        .updateTable('settings')
        .set({ ...value, updated_at: ts })
        .where('id', '=', current.id)
        .execute();
      id = current.id;
    }
    await writeAudit(deps, {
      line: `setting ${service}/${name} set to ${shownValue(value)} (${env ? `environment ${env.name}` : 'global'})`,
      logType: LogTypes.setting,
      username: caller.user.username,
      sourceIp,
      env: env ?? null,
    });
    return toSetting(await deps.db.selectFrom('settings').selectAll().where('id', '=', id).executeTakeFirstOrThrow());
  });
}
