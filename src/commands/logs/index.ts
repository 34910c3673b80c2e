// `fleetctl logs` (issue 30): declared here, done in run.ts (loaded only when it runs).
import { Option, type Command } from 'commander';
import { choiceOption, intArg, verb } from '../define.js';
import { LogLineTypes, StatusSeverities } from '../../api/constants.js';
import type { LogsOpts } from './run.js';

export function registerLogs(program: Command): void {
  verb<LogsOpts>(
    program,
    {
      name: 'logs',
      pager: true,
      summary: 'Print what agents sent: scheduled query results and osquery status lines; --follow for new ones',
      description:
        "Print the log lines agents of the environment (--env or the profile's) sent: the results of scheduled queries\n" +
        "and osquery's own status lines, the same lines the environment's log sinks receive. Without --all, the newest\n" +
        `${100} lines (--limit N) are printed oldest first; --all prints every line of the range, oldest first, as a stream.\n\n` +
        'At a terminal: a table (NODE, TIME, QUERY, ACTION, ROW), one line per result row; a status line shows its\n' +
        'severity as ACTION and "file:line message" as ROW. Piped without -o: one JSON object per line (the API\'s\n' +
        'line: environment, node_uuid, hostname, log_type, name, received_at, entry), for jq.\n\n' +
        '--follow prints the newest 10 lines (or --limit N), then each new line as it arrives, until Ctrl-C; it\n' +
        'reconnects on its own when the connection is lost, and never goes through the pager.\n\n' +
        '--since and --until take an age (30s, 10m, 1h, 2d, 1w: that long ago) or a time (2026-11-25T10:00:00Z, or\n' +
        "2026-11-25 10:00 in local time). Lines are kept for the environment's retention (settings admin\n" +
        'retention_logs_days and retention_logs_mb).',
      examples: [
        'fleetctl logs',
        'fleetctl logs --query users_query --since 1h',
        'fleetctl logs --node win-iad-00001-04b9 --type status',
        'fleetctl logs --severity warning --since 1d',
        'fleetctl logs --since 2d -q sshd --all -o csv > sshd.csv',
        'fleetctl logs --follow --query users_query',
        'fleetctl logs --type result --since 10m | jq -r .entry.columns.username',
      ],
    },
    (cmd) =>
      cmd
        .addOption(choiceOption('--type <type>', 'only results or only status lines', LogLineTypes))
        .option('--query <query-name>', "only results of this scheduled query (as osquery names it; with --pack, that pack's query)")
        .option('--pack <pack>', "only results of this pack's queries")
        .option('--node <node>', 'only lines of this node (UUID, hostname or local name)')
        .option('--since <time>', 'only lines received at or after this time (an age such as 10m, or a time)')
        .option('--until <time>', 'only lines received before this time (an age or a time)')
        .addOption(choiceOption('--severity <level>', 'only status lines of this severity or above', StatusSeverities))
        .option('-q, --search <text>', 'only lines whose entry contains this text (case-insensitive)')
        .addOption(
          new Option('--limit <n>', `how many of the newest lines (default ${100}; 10 with --follow)`)
            .argParser(intArg(1))
            .conflicts('all'),
        )
        .option('--all', 'every line of the range, oldest first')
        .option('-f, --follow', 'keep printing new lines as they arrive, until Ctrl-C'),
    async (ctx, _args, o) => (await import('./run.js')).runLogs(ctx, o),
  );
}
