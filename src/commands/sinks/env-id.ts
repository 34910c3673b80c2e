// Log-sink endpoints take numeric environment ids (0 = global); people type names or UUIDs.
import type { FleetApi } from '../../client/index.js';
import { CliError, ExitCode } from '../../errors.js';

export interface EnvRef {
  id: number;
  /** What to call it in messages: the env name, or "global". */
  label: string;
}

export const GLOBAL: EnvRef = { id: 0, label: 'global' };

/** `global` -> 0; an env name, UUID (any case) or numeric id -> that env, from the environment map. */
export async function resolveEnvRef(api: FleetApi, ref: string): Promise<EnvRef> {
  if (ref.toLowerCase() === 'global') return GLOBAL;
  const entries = Object.values(await api.environments.map('name'));
  const hit =
    entries.find((e) => e.name === ref) ??
    entries.find((e) => e.uuid.toLowerCase() === ref.toLowerCase()) ??
    (/^\d+$/.test(ref) ? entries.find((e) => e.id === Number(ref)) : undefined);
  if (!hit) {
    const names = entries.map((e) => e.name).sort();
    throw new CliError(`no environment "${ref}"`, ExitCode.notFound, names.length ? `known: ${names.join(', ')}, or global` : undefined);
  }
  return { id: hit.id, label: hit.name };
}
