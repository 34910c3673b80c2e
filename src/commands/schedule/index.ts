// `fleetctl schedule` (issue 22): the scheduled queries of an environment's osquery
// configuration (or of one of its packs, --pack), one by one. Each change reads the part,
// changes one entry and writes the part back on the condition that nobody changed it meanwhile.
import type { Command } from 'commander';
import { Option } from 'commander';
import { group, intArg, verb } from '../define.js';
import type { QueryOpts } from './options.js';
import type { ReportOpts } from './report.js';

const packOption = '--pack <pack>';
const packHelp = 'the queries of this pack instead of the schedule';

function queryOptions(cmd: Command, adding: boolean): Command {
  cmd.option('--query <sql>', 'the SQL (one SELECT)').option('--query-file <file>', 'read the SQL from a file (- for stdin)');
  if (adding) cmd.requiredOption('--interval <seconds>', 'run every N seconds (1 to 604800)', intArg(1));
  else cmd.option('--interval <seconds>', 'run every N seconds (1 to 604800)', intArg(1));
  cmd
    .option('--platform <platforms>', 'only on these platforms: darwin, linux, windows, freebsd, posix, all (comma-separated)')
    .option('--min-version <version>', 'only on osquery of at least this version, e.g. 5.10.0 (osquery\'s "version")')
    .option('--shard <percent>', 'only on this percentage of hosts (1 to 100)', intArg(1))
    .option('--description <text>', 'what the query is for')
    .option(packOption, packHelp);
  // Commander: the first of --x / --no-x declared sets the default; for edit, none (keep the value).
  if (adding) {
    cmd
      .option('--snapshot', 'log the whole result each time (not the rows added and removed)')
      .option('--no-removed', 'do not log rows that disappear (differential results)')
      .option('--no-denylist', "keep running it even when it exceeds osquery's watchdog limits");
  } else {
    cmd
      .option('--snapshot', 'log the whole result each time')
      .option('--no-snapshot', 'log differences again (rows added and removed)')
      .option('--removed', 'log rows that disappear again')
      .option('--no-removed', 'do not log rows that disappear')
      .option('--denylist', "let osquery's watchdog deny it again")
      .option('--no-denylist', "keep running it even when it exceeds osquery's watchdog limits");
  }
  return cmd;
}

export function registerSchedule(program: Command): void {
  const schedule = group(program, {
    name: 'schedule',
    summary: 'The scheduled queries agents of an environment run: list, show, add, edit, remove',
    description:
      "Scheduled queries of an environment's osquery configuration (its `schedule`; with --pack, the queries of that\n" +
      "pack). Agents pick changes up at their next config refresh and send the results to the environment's log\n" +
      'sinks, each entry with the query name and the node. Needs env admin. To manage the whole configuration as\n' +
      'files, see `fleetctl apply`.',
    examples: [
      'fleetctl schedule list prod',
      'fleetctl schedule add prod users_query --query "SELECT uid, username FROM users" --interval 300',
      'fleetctl schedule edit prod users_query --interval 600 --platform linux,darwin',
      'fleetctl schedule remove prod users_query --yes',
      'fleetctl schedule report prod users_query',
    ],
  });

  verb<QueryOpts>(
    schedule,
    {
      name: 'list',
      aliases: ['ls'],
      watch: true,
      summary: 'List the scheduled queries of an environment',
      description:
        "List the scheduled queries (name, interval, platform, snapshot, removed, version, SQL). ENV defaults to --env or the profile's. The boolean columns show osquery's defaults when a query does not set them (snapshot false, removed true).",
      examples: ['fleetctl schedule list prod', 'fleetctl schedule list prod --pack web -o json'],
    },
    (cmd) => cmd.argument('[env]', 'environment name or UUID').option(packOption, packHelp),
    async (ctx, [env], o) => (await import('./run.js')).list(ctx, env ?? ctx.requireEnv(), o),
  );

  verb<QueryOpts>(
    schedule,
    {
      name: 'show',
      aliases: ['get'],
      summary: 'Show one scheduled query',
      examples: ['fleetctl schedule show prod users_query', 'fleetctl schedule show prod procs --pack web -o json'],
    },
    (cmd) => cmd.argument('<env>', 'environment name or UUID').argument('<query-name>', 'the scheduled query').option(packOption, packHelp),
    async (ctx, [env, name], o) => (await import('./run.js')).show(ctx, env, name, o),
  );

  verb<QueryOpts>(
    schedule,
    {
      name: 'add',
      aliases: ['create'],
      summary: 'Add a scheduled query',
      description:
        'Add a scheduled query; its SQL is checked (one SQLite SELECT; unknown tables are fine) before anything is sent. An existing name is refused (exit 6): use `schedule edit`.',
      examples: [
        'fleetctl schedule add prod users_query --query "SELECT uid, username FROM users" --interval 300',
        'fleetctl schedule add prod procs --query-file procs.sql --interval 60 --platform linux --snapshot',
        'fleetctl schedule add prod listening --pack network --query "SELECT * FROM listening_ports" --interval 600',
      ],
    },
    (cmd) => queryOptions(cmd.argument('<env>', 'environment name or UUID').argument('<name>', 'name of the new query'), true),
    async (ctx, [env, name], o) => (await import('./run.js')).add(ctx, env, name, o),
  );

  verb<QueryOpts>(
    schedule,
    {
      name: 'edit',
      aliases: ['update'],
      summary: 'Change fields of a scheduled query',
      description: 'Change the given fields of a scheduled query; the others keep their value.',
      examples: [
        'fleetctl schedule edit prod users_query --interval 600',
        'fleetctl schedule edit prod procs --no-snapshot --platform all',
      ],
    },
    (cmd) => queryOptions(cmd.argument('<env>', 'environment name or UUID').argument('<query-name>', 'the scheduled query'), false),
    async (ctx, [env, name], o) => (await import('./run.js')).edit(ctx, env, name, o),
  );

  verb<QueryOpts>(
    schedule,
    {
      name: 'remove',
      aliases: ['rm', 'delete'],
      summary: 'Remove scheduled queries',
      description: 'Remove one or more scheduled queries. Asks at a terminal; needs --yes otherwise.',
      examples: ['fleetctl schedule remove prod users_query', 'fleetctl schedule remove prod users_query procs --yes'],
    },
    (cmd) =>
      cmd
        .argument('<env>', 'environment name or UUID')
        .argument('<query-name...>', 'the scheduled queries')
        .option(packOption, packHelp)
        .option('-y, --yes', 'do not ask for confirmation'),
    async (ctx, [env, ...names], o) => (await import('./run.js')).remove(ctx, env, names, o),
  );

  verb<ReportOpts>(
    schedule,
    {
      name: 'report',
      pager: true,
      summary: 'The current rows of a scheduled query on every node that runs it',
      description:
        'What a scheduled query returns now across the fleet, kept by the server from the results agents send: a\n' +
        "snapshot query's last snapshot, a differential query's rows added and not removed since. At a terminal (and\n" +
        "piped, as TSV) one line per row, the NODE first, then the query's columns (--fields picks them, e.g.\n" +
        '--fields node,username); -o json|jsonl|yaml gives one item per node with its rows, when it last reported\n' +
        "(reported_at) and osquery's epoch and counter. The first 100 nodes by hostname unless --limit N or --all.\n" +
        "Needs env user (as nodes list). Reports are kept for the environment's log retention.",
      examples: [
        'fleetctl schedule report prod users_query',
        'fleetctl schedule report prod users_query --node web-fra-0001',
        'fleetctl schedule report prod users_query --all --fields node,username -o csv > users.csv',
        'fleetctl schedule report prod listening --pack network --all -o json',
      ],
    },
    (cmd) =>
      cmd
        .argument('<env>', 'environment name or UUID')
        .argument('<query-name>', 'the scheduled query')
        .option(packOption, "the query is this pack's")
        .option('--node <node>', 'only this node (UUID, hostname or local name)')
        .addOption(new Option('--limit <n>', 'at most N nodes').argParser(intArg(1)).conflicts('all'))
        .option('--all', 'every node (a stream of pages)'),
    async (ctx, [env, name], o) => (await import('./report.js')).report(ctx, env, name, o),
  );
}
