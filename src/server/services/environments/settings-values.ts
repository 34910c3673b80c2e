// Reading one setting's effective value: the env's own row wins over the global row (env 0).
import type { Deps } from '../../context.js';
import type { SettingRow } from '../../store/schema.js';
import { byGeneration } from '../../lib/generation-cache.js';

export const INACTIVE_HOURS_DEFAULT = 72;

async function effectiveRow(
  deps: Deps,
  service: string,
  name: string,
  envId: number,
): Promise<Pick<SettingRow, 'integer_value' | 'boolean_value'> | undefined> {
  const rows = await deps.db
    .selectFrom('settings')
    .select(['environment_id', 'integer_value', 'boolean_value'])
    .where('service', '=', service)
    .where('name', '=', name)
    .where('environment_id', 'in', [0, envId])
    .where('deleted_at', 'is', null)
    .execute();
  const own = rows.find((r) => r.environment_id === envId && envId !== 0);
  return own ?? rows.find((r) => r.environment_id === 0);
}

export async function integerSetting(deps: Deps, service: string, name: string, envId: number, fallback: number): Promise<number> {
  const row = await effectiveRow(deps, service, name, envId);
  return row ? Number(row.integer_value) : fallback;
}

export async function booleanSetting(deps: Deps, service: string, name: string, envId: number, fallback: boolean): Promise<boolean> {
  const row = await effectiveRow(deps, service, name, envId);
  return row ? !!row.boolean_value : fallback;
}

/** With the request's config counter, read once per settings change instead of per request. */
export const inactiveHours = (deps: Deps, envId = 0, configGeneration?: number) => {
  const read = () => integerSetting(deps, 'admin', 'inactive_hours', envId, INACTIVE_HOURS_DEFAULT);
  return configGeneration === undefined ? read() : byGeneration(deps.db, 'inactive_hours', configGeneration, String(envId), read);
};

/**
 * A server-wide period setting (seconds, env 0) in milliseconds; missing, zero or negative:
 * undefined (the task it drives is off).
 */
export async function serverSettingMs(deps: Deps, service: string, name: string): Promise<number | undefined> {
  const seconds = await integerSetting(deps, service, name, 0, 0);
  return seconds > 0 ? seconds * 1000 : undefined;
}

/** api/service_metrics: whether the API serves /metrics (read once per settings change with the counter). */
export const serviceMetrics = (deps: Deps, configGeneration?: number) => {
  const read = () => booleanSetting(deps, 'api', 'service_metrics', 0, false);
  return configGeneration === undefined ? read() : byGeneration(deps.db, 'service_metrics', configGeneration, '0', read);
};
