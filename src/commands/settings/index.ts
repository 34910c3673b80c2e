import { Argument, type Command } from 'commander';
import { group, verb } from '../define.js';
import { SettingServices } from '../../api/constants.js';
import type { Setting, SettingService } from '../../api/index.js';
import { CliError, ExitCode } from '../../errors.js';
import { printObject, type Column } from '../../output/index.js';
import type { Context } from '../../context.js';
import type { FleetApi } from '../../client/index.js';
import { settingBody, settingValue } from './value.js';
import { printWholeList } from '../paged-list.js';

const scopeOf = (s: Setting) => (s.environmentID === 0 ? 'global' : 'env');

const SETTING_COLUMNS: Column<Setting>[] = [
  { key: 'name', header: 'NAME' },
  { key: 'type', header: 'TYPE' },
  { key: 'value', header: 'VALUE', get: settingValue },
  { key: 'scope', header: 'SCOPE', get: scopeOf },
  { key: 'info', header: 'INFO' },
];

const SETTING_DETAIL_COLUMNS: Column<Setting>[] = [
  { key: 'service' },
  { key: 'name' },
  { key: 'type' },
  { key: 'value', get: settingValue },
  { key: 'scope', get: scopeOf },
  { key: 'environmentID' },
  { key: 'info' },
  { key: 'updatedAt', kind: 'time' },
];

const serviceArgument = () => new Argument('<service>', `settings service: ${SettingServices.join(', ')}`).choices(SettingServices);

/** An environment to read settings through: settings are read per environment (4.14). */
async function readEnv(ctx: Context, api: FleetApi): Promise<string> {
  const named = ctx.envName();
  if (named) return named;
  const first = Object.keys(await api.environments.map('name')).sort()[0];
  if (!first) throw new CliError('you have access to no environment to read settings through', ExitCode.forbidden);
  return first;
}

export function registerSettings(program: Command): void {
  const settings = group(program, {
    name: 'settings',
    summary: 'Read and change server settings (tls, admin, api services)',
    examples: [
      'fleetctl settings list admin',
      'fleetctl settings list tls staging -o json',
      'fleetctl settings set admin inactive_hours 48',
      'fleetctl settings set tls accelerated_seconds 120 --env staging',
    ],
  });

  verb(
    settings,
    {
      name: 'list',
      watch: true,
      aliases: ['ls'],
      summary: 'List the settings of a service as they apply to an environment',
      description:
        'List the settings of a service (tls, admin, api) that apply to an environment (default: --env or ' +
        "the profile's): the environment's own values, then the global ones it does not override (SCOPE).\n" +
        'Needs env admin. -o json prints the settings as the API returns them.',
      examples: [
        'fleetctl settings list admin',
        'fleetctl settings list tls staging',
        'fleetctl settings list api --jq \'.[] | select(.type == "boolean") | .name\'',
      ],
    },
    (cmd) => cmd.addArgument(serviceArgument()).argument('[env]', 'environment name or UUID'),
    async (ctx, [service, env]) => {
      const api = await ctx.api();
      const list = await api.settings.list(service as SettingService, env ?? ctx.requireEnv());
      await printWholeList(ctx, list, SETTING_COLUMNS, 'No settings');
    },
  );

  verb(
    settings,
    {
      name: 'set',
      summary: 'Change one setting (global, or one environment with --env)',
      description:
        "Change a setting. VALUE is converted to the setting's type, read from the server first: booleans " +
        'accept true/false, yes/no, on/off, 1/0; integers digits. A value that does not fit exits 2 and ' +
        'changes nothing. Without --env the global value changes; with --env ENV (the flag, not the ' +
        "profile's environment) that environment's own value. Needs super-admin.\n\n" +
        'Each setting says in its INFO what it does on the server. On this server api/service_metrics turns ' +
        '/metrics of the API on and off, admin/cleanup_expired is how often expired live queries and carves are ' +
        'marked expired, tls/accelerated_seconds how long a newly enrolled node asks for live queries every 5 s; ' +
        'settings with no meaning here (refresh_envs, refresh_settings, node_dashboard) are refused with the ' +
        'reason, and server-wide ones take no --env.',
      examples: [
        'fleetctl settings set admin inactive_hours 48',
        'fleetctl settings set api service_metrics yes',
        'fleetctl settings set tls accelerated_seconds 10 --env prod -o json',
      ],
    },
    (cmd) => cmd.addArgument(serviceArgument()).argument('<name>', 'setting name').argument('<value>', 'new value'),
    async (ctx, [service, name, value]) => {
      const svc = service as SettingService;
      const api = await ctx.api();
      const target = ctx.globals.env;
      if (target) api.need('env-settings');
      const via = target ?? (await readEnv(ctx, api));
      const current = (await api.settings.list(svc, via)).find((s) => s.name === name);
      if (!current)
        throw new CliError(
          `setting "${name}" not found in service ${svc}`,
          ExitCode.notFound,
          `run \`fleetctl settings list ${svc}\` to see its settings`,
        );
      const body = settingBody(current, value);
      const updated = await api.settings.update(svc, name, body, target);
      await printObject(ctx.io, ctx.output(), updated, SETTING_DETAIL_COLUMNS);
    },
  );
}
