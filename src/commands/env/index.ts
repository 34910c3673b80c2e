import { mapLimit } from '../../lib/map-limit.js';
import type { Command } from 'commander';
import { group, intArg, verb } from '../define.js';
import { MapTargets } from '../../api/constants.js';
import type { Environment, EnvironmentMapEntry, IntervalsBody, MapTarget } from '../../api/index.js';
import { UsageError } from '../../errors.js';
import { printList, printObject, type Column } from '../../output/index.js';
import type { Context } from '../../context.js';
import { printWholeList } from '../paged-list.js';

/**
 * The enroll secret is blanked in `env list`/`env show` output unless asked for (--show-secret):
 * it lets anyone enrol nodes, and these commands are often piped into logs. `fleetctl enroll
 * show ENV secret` is the explicit way to read it.
 */
function redactSecret(e: Environment, show: boolean | undefined): Environment {
  return show ? e : { ...e, secret: '' };
}

const ENV_COLUMNS: Column<Environment>[] = [
  { key: 'name', header: 'NAME' },
  { key: 'uuid', header: 'UUID' },
  { key: 'hostname', header: 'HOSTNAME' },
  { key: 'config_interval', header: 'CONFIG', kind: 'number' },
  { key: 'log_interval', header: 'LOG', kind: 'number' },
  { key: 'query_interval', header: 'QUERY', kind: 'number' },
  { key: 'enroll_expire', header: 'ENROLL EXPIRES', kind: 'time' },
];

const ENV_DETAIL_COLUMNS: Column<Environment>[] = [
  { key: 'name' },
  { key: 'uuid' },
  { key: 'id' },
  { key: 'type' },
  { key: 'hostname' },
  { key: 'config_interval', kind: 'number' },
  { key: 'log_interval', kind: 'number' },
  { key: 'query_interval', kind: 'number' },
  { key: 'accept_enrolls', kind: 'bool' },
  { key: 'enroll_expire', kind: 'time' },
  { key: 'remove_expire', kind: 'time' },
  { key: 'enroll_secret_path' },
  { key: 'deb_package' },
  { key: 'rpm_package' },
  { key: 'msi_package' },
  { key: 'pkg_package' },
  { key: 'created_at', kind: 'time' },
  { key: 'updated_at', kind: 'time' },
];

export interface IntervalsView {
  name: string;
  uuid: string;
  config_interval: number;
  log_interval: number;
  query_interval: number;
}

export const intervalsOf = (e: Environment): IntervalsView => ({
  name: e.name,
  uuid: e.uuid,
  config_interval: e.config_interval,
  log_interval: e.log_interval,
  query_interval: e.query_interval,
});


/** The environment named by the positional argument, else --env / FLEETCTL_ENV / the profile's. */
function envArg(ctx: Context, arg: string | undefined): string {
  return arg ?? ctx.requireEnv();
}

export function registerEnv(program: Command): void {
  const env = group(program, {
    name: 'env',
    summary: 'Environments: list, show, map, intervals, osquery configuration',
    examples: ['fleetctl env list', 'fleetctl env show prod', 'fleetctl env map uuid -o json', 'fleetctl env intervals prod --config 600', 'fleetctl env config prod schedule'],
  });

  verb<{ showSecret?: boolean }>(
    env,
    {
      name: 'list',
      watch: true,
      aliases: ['ls'],
      summary: 'List the environments you can access, with hostname, intervals and enroll expiry',
      description:
        'List the environments you can access (from the environment map), each read in full: name, uuid, ' +
        'hostname, agent intervals (seconds) and when enrollment expires. -o json prints the environment ' +
        'objects as the API returns them, with `secret` blanked unless --show-secret.',
      examples: ['fleetctl env list', 'fleetctl env list -o json', "fleetctl env list --jq '.[] | select(.config_interval > 300) | .name'"],
    },
    (cmd) => cmd.option('--show-secret', 'include the enroll secret (env admins only) in machine output'),
    async (ctx, _args, o) => {
      const api = await ctx.api();
      const names = Object.keys(await api.environments.map('name')).sort((a, b) => a.localeCompare(b));
      const envs = await mapLimit(names, 4, (n) => api.environments.get(n));
      await printWholeList(ctx, envs.map((e) => redactSecret(e, o.showSecret)), ENV_COLUMNS, 'No environments you can access');
    },
  );

  verb<{ showSecret?: boolean }>(
    env,
    {
      name: 'show',
      aliases: ['get'],
      summary: 'Show one environment',
      description:
        'Show an environment (by name or UUID; default: --env or the profile\'s). The table view shows the ' +
        'main fields; -o json the whole object, with `secret` blanked unless --show-secret (certificate ' +
        'and flags, like the secret, are only sent to env admins).',
      examples: ['fleetctl env show prod', 'fleetctl env show -o json', 'fleetctl env show staging --jq .enroll_expire'],
    },
    (cmd) => cmd.argument('[env]', 'environment name or UUID').option('--show-secret', 'include the enroll secret (env admins only)'),
    async (ctx, [name], o) => {
      const api = await ctx.api();
      const e = await api.environments.get(envArg(ctx, name));
      await printObject(ctx.io, ctx.output(), redactSecret(e, o.showSecret), ENV_DETAIL_COLUMNS);
    },
  );

  verb<{ config?: number; log?: number; query?: number }>(
    env,
    {
      name: 'intervals',
      summary: 'Set the agent intervals (seconds) of an environment',
      description:
        'Set how often agents of the environment fetch their configuration (--config), send logs (--log) ' +
        'and poll for queries (--query), in seconds (integers >= 1). Intervals not given keep their value. ' +
        'Running agents take --log and --query from their configuration at their next config fetch (the ' +
        'server puts them in its options); --config reaches them through their flags only (osquery reads ' +
        'config_refresh from the command line). Needs env admin. Prints the intervals as they now are.',
      examples: ['fleetctl env intervals prod --config 600', 'fleetctl env intervals staging --log 120 --query 30', 'fleetctl --env dev env intervals --query 15 -o json'],
    },
    (cmd) =>
      cmd
        .argument('[env]', 'environment name or UUID (default: --env or the profile\'s)')
        .option('--config <seconds>', 'config refresh interval', intArg(1))
        .option('--log <seconds>', 'log flush interval', intArg(1))
        .option('--query <seconds>', 'distributed query poll interval', intArg(1)),
    async (ctx, [name], o) => {
      const body: IntervalsBody = {};
      if (o.config !== undefined) body.config_interval = o.config;
      if (o.log !== undefined) body.log_interval = o.log;
      if (o.query !== undefined) body.query_interval = o.query;
      if (Object.keys(body).length === 0) throw new UsageError('nothing to change: pass at least one of --config, --log, --query (seconds)');
      const api = await ctx.api();
      const updated = await api.environments.setIntervals(envArg(ctx, name), body);
      await printObject(ctx.io, ctx.output(), intervalsOf(updated));
    },
  );

  verb(
    env,
    {
      name: 'map',
      summary: 'Show the environments you can access, keyed by id, name or uuid',
      description: 'Show the environment map (id, name, uuid of each environment you can access). With -o json the object is printed as the server returns it: keys are the chosen attribute.',
      examples: ['fleetctl env map', 'fleetctl env map uuid --json', "fleetctl env map name --jq '.prod.uuid'"],
    },
    (cmd) => cmd.argument('[target]', `key of the map: ${MapTargets.join(', ')}`, 'name'),
    async (ctx, [target = 'name']) => {
      if (!(MapTargets as readonly string[]).includes(target)) throw new UsageError(`invalid target "${target}"; valid: ${MapTargets.join(', ')}`);
      const api = await ctx.api();
      const map = await api.environments.map(target as MapTarget);
      const o = ctx.output();
      if (o.format === 'table' && o.jq === undefined) {
        const rows: EnvironmentMapEntry[] = Object.values(map).sort((a, b) => a.name.localeCompare(b.name));
        await printList(ctx.io, o, rows, [{ key: 'id', header: 'ID' }, { key: 'name', header: 'NAME' }, { key: 'uuid', header: 'UUID' }]);
      } else {
        await printObject(ctx.io, o, map);
      }
    },
  );

  verb<{ edit?: boolean; set?: string; agent?: boolean }>(
    env,
    {
      name: 'config',
      summary: 'Show, set or edit the osquery configuration agents of an environment get',
      description:
        'Print the osquery configuration of an environment (options, schedule, packs, decorators, atc), or one PART\n' +
        'of it, as an apply document (YAML; -o json for JSON): `-o yaml` output applies back unchanged with\n' +
        '`fleetctl apply -f`. --edit opens it in $VISUAL or $EDITOR (else vi), like `kubectl edit`: on save it is\n' +
        'checked and stored if it changed, or reopened with the error on top; it is refused if someone changed the\n' +
        'configuration meanwhile. --set PART FILE replaces one part with the YAML or JSON in FILE (- for stdin).\n' +
        '--agent prints the configuration exactly as agents receive it, with its hash (`nodes list --config-stale`\n' +
        'lists the nodes not on it yet). Needs env admin. Agents pick changes up at their next config refresh.',
      examples: [
        'fleetctl env config prod',
        'fleetctl env config prod schedule -o json',
        'fleetctl env config prod -o yaml > prod.yaml',
        'fleetctl env config prod --edit',
        'fleetctl env config prod --set packs packs.yaml',
        'fleetctl env config prod --agent --jq .hash',
      ],
    },
    (cmd) =>
      cmd
        .argument('<env>', 'environment name or UUID')
        .argument('[part]', 'one part: options, schedule, packs, decorators, atc (with --set PART: the FILE with its new content, - for stdin)')
        .option('--edit', 'edit it in $EDITOR; checked and stored on save')
        .option('--set <part>', 'replace PART with the content of FILE')
        .option('--agent', 'the configuration as agents receive it, with its hash'),
    async (ctx, [name, part], o) => (await import('./config.js')).runEnvConfig(ctx, name!, part, o),
  );
}
