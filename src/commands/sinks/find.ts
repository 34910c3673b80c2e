// One sink of a scope by name (unique there) or id: what show, edit, enable, disable and test act on.
import type { LogSink } from '../../api/index.js';
import type { FleetApi } from '../../client/index.js';
import type { Context } from '../../context.js';
import { CliError, ExitCode, UsageError } from '../../errors.js';
import { resolveEnvRef, type EnvRef } from './env-id.js';

/** The positional ENV|global, else --env / the profile's environment. */
export async function targetEnv(ctx: Context, api: FleetApi, ref: string | undefined): Promise<EnvRef> {
  const r = ref ?? ctx.envName();
  if (!r) throw new UsageError('which sinks? name an environment or `global` (or pass --env)');
  return resolveEnvRef(api, r);
}

export async function findSink(
  ctx: Context,
  api: FleetApi,
  ref: string,
  envRef: string | undefined,
): Promise<{ sink: LogSink; env: EnvRef }> {
  const env = await targetEnv(ctx, api, envRef);
  const list = await api.sinks.list(env.id);
  const sink = list.find((x) => x.name === ref) ?? (/^\d+$/.test(ref) ? list.find((x) => x.id === Number(ref)) : undefined);
  const listCmd = envRef ? `fleetctl sinks list ${envRef}` : 'fleetctl sinks list';
  if (!sink) throw new CliError(`no log sink "${ref}" in ${env.label}`, ExitCode.notFound, `run \`${listCmd}\` to see them`);
  return { sink, env };
}
