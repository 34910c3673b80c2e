import { mapLimit } from '../../lib/map-limit.js';
import type { Command } from 'commander';
import { group, intArg, spanArg, verb } from '../define.js';
import { MapTargets } from '../../api/constants.js';
import type { Environment, EnvironmentMapEntry, IntervalsBody, MapTarget } from '../../api/index.js';
import { UsageError } from '../../errors.js';
import { printList, printObject, safeText, type Column } from '../../output/index.js';
import type { Context } from '../../context.js';
import { printWholeList } from '../paged-list.js';
import { enrollmentOf } from './enrollment-state.js';

/**
 * The enroll secret is blanked in `env list`/`env show` output unless asked for (--show-secret):
 * it lets anyone enrol nodes, and these commands are often piped into logs. `fleetctl enroll
 * show ENV secret` is the explicit way to read it.
 */
function redactSecret(e: Environment, show: boolean | undefined): Environment {
  return show ? e : { ...e, secret: '' };
}

/** Issue 27: where enrollment stands (open, closing within a day, closed), beside the expiry. */
type EnvRow = Environment & { enrollment: string };
const withEnrollment = (e: Environment, now: Date, expiryStops: boolean): EnvRow => ({
  ...e,
  enrollment: enrollmentOf(e, now, expiryStops).state,
});

const ENV_COLUMNS: Column<EnvRow>[] = [
  { key: 'name', header: 'NAME' },
  { key: 'uuid', header: 'UUID' },
  { key: 'hostname', header: 'HOSTNAME' },
  { key: 'config_interval', header: 'CONFIG', kind: 'number' },
  { key: 'log_interval', header: 'LOG', kind: 'number' },
  { key: 'query_interval', header: 'QUERY', kind: 'number' },
  { key: 'enrollment', header: 'ENROLLMENT' },
  { key: 'enroll_expire', header: 'ENROLL EXPIRES', kind: 'time' },
];

const ENV_DETAIL_COLUMNS: Column<EnvRow>[] = [
  { key: 'name' },
  { key: 'uuid' },
  { key: 'id' },
  { key: 'type' },
  { key: 'hostname' },
  { key: 'hostname_pinned', header: 'hostname set for it', kind: 'bool' },
  { key: 'config_interval', kind: 'number' },
  { key: 'log_interval', kind: 'number' },
  { key: 'query_interval', kind: 'number' },
  { key: 'detail_refresh', header: 'detail refresh (s, 0: server default)', kind: 'number' },
  { key: 'accept_enrolls', kind: 'bool' },
  { key: 'enrollment' },
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

/**
 * Issue 27: an enrollment window closing within a day, or closed, said on stderr (new hosts of a
 * rollout would be refused), with the command that reopens it.
 */
function warnEnrollment(ctx: Context, envs: Environment[], now: Date, expiryStops: boolean): void {
  for (const e of envs) {
    const s = enrollmentOf(e, now, expiryStops);
    if (s.state === 'open' || !e.accept_enrolls) continue;
    ctx.io.err(
      `warning: enrollment of ${safeText(e.name)} is ${s.text}: new hosts ${s.state === 'closed' ? 'are' : 'will be'} refused; \`fleetctl enroll notexpire ${safeText(e.name)}\` keeps it open\n`,
    );
  }
}

/** The environment named by the positional argument, else --env / FLEETCTL_ENV / the profile's. */
function envArg(ctx: Context, arg: string | undefined): string {
  return arg ?? ctx.requireEnv();
}

export function registerEnv(program: Command): void {
  const env = group(program, {
    name: 'env',
    summary: 'Environments: list, show, create, edit, delete, map, intervals, osquery configuration',
    examples: [
      'fleetctl env list',
      'fleetctl env show prod',
      'fleetctl env create rollout --enroll-window 14d',
      'fleetctl env map uuid -o json',
      'fleetctl env intervals prod --config 600',
      'fleetctl env config prod schedule',
    ],
  });

  registerEnvListAndShow(env);

  registerEnvIntervalsAndMap(env);

  registerEnvCreateEditDelete(env);

  registerEnvConfig(env);
}

function registerEnvListAndShow(env: Command): void {
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
      const now = new Date();
      const stops = api.traits.enrollExpiryStopsAgents;
      const rows = envs.map((e) => redactSecret(e, o.showSecret));
      // Tables say where enrollment stands; machine output stays the API's objects.
      await printWholeList(
        ctx,
        ctx.wantsData() ? rows : rows.map((e) => withEnrollment(e, now, stops)),
        ENV_COLUMNS as Column<Environment>[],
        'No environments you can access',
      );
      warnEnrollment(ctx, envs, now, stops);
    },
  );

  verb<{ showSecret?: boolean }>(
    env,
    {
      name: 'show',
      aliases: ['get'],
      summary: 'Show one environment',
      description:
        "Show an environment (by name or UUID; default: --env or the profile's). The table view shows the " +
        'main fields; -o json the whole object, with `secret` blanked unless --show-secret (certificate ' +
        'and flags, like the secret, are only sent to env admins).',
      examples: ['fleetctl env show prod', 'fleetctl env show -o json', 'fleetctl env show staging --jq .enroll_expire'],
    },
    (cmd) => cmd.argument('[env]', 'environment name or UUID').option('--show-secret', 'include the enroll secret (env admins only)'),
    async (ctx, [name], o) => {
      const api = await ctx.api();
      const e = await api.environments.get(envArg(ctx, name));
      const now = new Date();
      const stops = api.traits.enrollExpiryStopsAgents;
      const shown = redactSecret(e, o.showSecret);
      await printObject(
        ctx.io,
        ctx.output(),
        ctx.wantsData() ? shown : { ...shown, enrollment: enrollmentOf(e, now, stops).text },
        ENV_DETAIL_COLUMNS as Column<Environment>[],
      );
      warnEnrollment(ctx, [e], now, stops);
    },
  );
}

function registerEnvIntervalsAndMap(env: Command): void {
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
      examples: [
        'fleetctl env intervals prod --config 600',
        'fleetctl env intervals staging --log 120 --query 30',
        'fleetctl --env dev env intervals --query 15 -o json',
      ],
    },
    (cmd) =>
      cmd
        .argument('[env]', "environment name or UUID (default: --env or the profile's)")
        .option('--config <seconds>', 'config refresh interval', intArg(1))
        .option('--log <seconds>', 'log flush interval', intArg(1))
        .option('--query <seconds>', 'distributed query poll interval', intArg(1)),
    async (ctx, [name], o) => {
      const body: IntervalsBody = {};
      if (o.config !== undefined) body.config_interval = o.config;
      if (o.log !== undefined) body.log_interval = o.log;
      if (o.query !== undefined) body.query_interval = o.query;
      if (Object.keys(body).length === 0)
        throw new UsageError('nothing to change: pass at least one of --config, --log, --query (seconds)');
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
      description:
        'Show the environment map (id, name, uuid of each environment you can access). With -o json the object is printed as the server returns it: keys are the chosen attribute.',
      examples: ['fleetctl env map', 'fleetctl env map uuid --json', "fleetctl env map name --jq '.prod.uuid'"],
    },
    (cmd) => cmd.argument('[target]', `key of the map: ${MapTargets.join(', ')}`, 'name'),
    async (ctx, [target = 'name']) => {
      if (!(MapTargets as readonly string[]).includes(target))
        throw new UsageError(`invalid target "${target}"; valid: ${MapTargets.join(', ')}`);
      const api = await ctx.api();
      const map = await api.environments.map(target as MapTarget);
      const o = ctx.output();
      if (o.format === 'table' && o.jq === undefined) {
        const rows: EnvironmentMapEntry[] = Object.values(map).sort((a, b) => a.name.localeCompare(b.name));
        await printList(ctx.io, o, rows, [
          { key: 'id', header: 'ID' },
          { key: 'name', header: 'NAME' },
          { key: 'uuid', header: 'UUID' },
        ]);
      } else {
        await printObject(ctx.io, o, map);
      }
    },
  );
}

function registerEnvCreateEditDelete(env: Command): void {
  const settable = (cmd: import('commander').Command) =>
    cmd
      .option(
        '--agent-host <host[:port]>',
        "the name agents connect to (osquery's --tls_hostname), when it is not the server's --agent-url",
      )
      .option('--config <seconds>', 'config refresh interval', intArg(1))
      .option('--log <seconds>', 'log flush interval', intArg(1))
      .option('--query <seconds>', 'distributed query poll interval', intArg(1))
      .option(
        '--detail-refresh <span>',
        "how often its nodes are asked for their details, e.g. 30m, 1h (0: the server's --detail-refresh)",
        (v: string) => (v === '0' ? 0 : spanArg({ min: 60 })(v)),
      )
      .option('--enroll', 'accept enrolls (the default of a new environment)')
      .option('--no-enroll', 'refuse every enroll until --enroll');

  verb<import('./admin.js').EnvCreateOpts>(
    env,
    {
      name: 'create',
      aliases: ['add'],
      summary: 'Create an environment (super-admin)',
      description:
        'Create an environment: a new enroll secret, enroll paths and an osquery configuration to fill. Its agents connect ' +
        "to the server's --agent-url (or --agent-host for this environment) and trust the server's anchor; enrollment " +
        'stays open until someone closes it (`enroll expire`, `env edit --no-enroll`), unless --enroll-window (or the ' +
        "server's --enroll-window) sets a window. Prints the environment; `fleetctl enroll show NAME enroll.sh` is the next step.",
      examples: [
        'fleetctl env create qa',
        'fleetctl env create eu-prod --agent-host fleet-eu.example.com:8443 --enroll-window 14d',
        'fleetctl env create lab --query 10 --detail-refresh 10m -o json',
      ],
    },
    (cmd) =>
      settable(cmd.argument('<name>', 'letters, digits, . _ - (at most 64)')).option(
        '--enroll-window <span>',
        "accept enrolls for this long, e.g. 7d, 12h, or never (default: the server's --enroll-window, else until closed)",
        spanArg({ allowNever: true }),
      ),
    async (ctx, [name], o) => (await import('./admin.js')).runEnvCreate(ctx, name, o),
  );

  verb<import('./admin.js').EnvEditOpts>(
    env,
    {
      name: 'edit',
      summary: 'Rename an environment or change its agent host, intervals, detail refresh or enrollment switch (super-admin)',
      description:
        'Change an environment: --name renames it (profiles and scripts that name it need the new name), --agent-host sets ' +
        "the name its agents connect to, --follow-server makes it follow the server's --agent-url again, and the intervals, " +
        'detail refresh and enroll switch as `env create`. Flags, certificates and install scripts follow at once; hosts ' +
        'already enrolled keep the flags they were given until they are enrolled again.',
      examples: [
        'fleetctl env edit prod --agent-host fleet.example.com:443',
        'fleetctl env edit prod --follow-server',
        'fleetctl env edit lab --no-enroll',
        'fleetctl env edit qa --name qa-eu',
      ],
    },
    (cmd) =>
      settable(cmd.argument('<env>', 'environment name or UUID'))
        .option('--name <new-name>', 'rename it')
        .option('--follow-server', "the agent host follows the server's --agent-url again"),
    async (ctx, [ref], o) => (await import('./admin.js')).runEnvEdit(ctx, ref, o),
  );

  verb<{ yes?: boolean }>(
    env,
    {
      name: 'delete',
      aliases: ['rm'],
      summary: 'Delete an environment with its nodes (super-admin)',
      description:
        'Delete an environment with everything in it: its nodes, tags, live queries and their results, carves, log sinks ' +
        'and settings (the audit log keeps its history). Agents still running with its flags are told they are unknown. ' +
        'Asks for confirmation naming the number of nodes at a terminal; needs --yes otherwise.',
      examples: ['fleetctl env delete lab', 'fleetctl env delete lab --yes'],
    },
    (cmd) => cmd.argument('<env>', 'environment name or UUID').option('-y, --yes', 'do not ask for confirmation'),
    async (ctx, [ref], o) => (await import('./admin.js')).runEnvDelete(ctx, ref, o),
  );
}

function registerEnvConfig(env: Command): void {
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
        .argument(
          '[part]',
          'one part: options, schedule, packs, decorators, atc (with --set PART: the FILE with its new content, - for stdin)',
        )
        .option('--edit', 'edit it in $EDITOR; checked and stored on save')
        .option('--set <part>', 'replace PART with the content of FILE')
        .option('--agent', 'the configuration as agents receive it, with its hash'),
    async (ctx, [name, part], o) => (await import('./config.js')).runEnvConfig(ctx, name, part, o),
  );
}
