// `fleetctl query`: distributed (live) queries. run streams answers as nodes send them;
// list/show/results/cancel follow osctrl-api's /api/v1/queries/{env} endpoints.
import { Option, type Command } from 'commander';
import { choiceOption, group, intArg, verb } from '../define.js';
import { PAGE_SIZE_MAX, QueryListStatuses } from '../../api/constants.js';
import type { DistributedQuery, QueryListStatus } from '../../api/index.js';
import { printPagedList } from '../paged-list.js';
import { parseDuration } from '../../lib/duration.js';
import { InterruptedError, UsageError } from '../../errors.js';
import { printObject, type Column } from '../../output/index.js';
import { addRunOptions, targetLists } from './targets.js';
import { streamResults } from './stream.js';

export const QUERY_COLUMNS: Column<DistributedQuery>[] = [
  { key: 'name', header: 'NAME' },
  { key: 'query', header: 'QUERY' },
  { key: 'creator', header: 'CREATOR' },
  { key: 'progress', header: 'NODES', get: (q) => `${q.executions}/${q.expected}` },
  { key: 'errors', header: 'ERRORS', kind: 'number' },
  { key: 'state', header: 'STATE', kind: 'status', get: queryState },
  { key: 'created_at', header: 'CREATED', kind: 'time' },
];

const QUERY_DETAIL_COLUMNS: Column<DistributedQuery>[] = [
  { key: 'name' },
  { key: 'query' },
  { key: 'state', kind: 'status', get: queryState },
  { key: 'target' },
  { key: 'creator' },
  { key: 'executions', kind: 'number' },
  { key: 'expected', kind: 'number' },
  { key: 'errors', kind: 'number' },
  { key: 'created_at', header: 'CREATED', kind: 'time' },
  { key: 'expiration', header: 'EXPIRES', kind: 'time' },
];

/** One word for the query's state, as the list's filters name them (the server's `status` when given). */
export function queryState(q: DistributedQuery): string {
  if (q.status) return q.status.toLowerCase();
  if (q.deleted) return 'deleted';
  if (q.expired) return 'expired';
  if (q.completed) return 'completed';
  return q.active ? 'active' : 'inactive';
}

/** --wait: a duration, or 0 for "start it and return". */
export function parseWait(v: string): number {
  return v.trim() === '0' ? 0 : parseDuration(v);
}

interface RunOpts {
  target?: string[];
  wait: string;
  expireHours?: number;
  hidden?: boolean;
}

export function registerQuery(program: Command): void {
  const query = group(program, {
    name: 'query',
    summary: 'Run live (distributed) queries on nodes and read their results',
    examples: [
      'fleetctl query run "SELECT * FROM os_version" --target all --wait 30s',
      'fleetctl query run "SELECT name, pid FROM processes" --target platform:ubuntu --json',
      'fleetctl query list --status active',
      'fleetctl query results NAME -o csv > results.csv',
    ],
  });

  verb<RunOpts>(
    query,
    {
      name: 'run',
      summary: 'Run a query on nodes and stream their answers',
      description:
        'Start a distributed query on the target nodes (default: every node of the environment) and print\n' +
        'the answers as nodes send them, until every targeted node has answered or --wait passes.\n' +
        'Targets (repeatable, comma-separated): all, env:NAME, platform:NAME, tag:NAME, a node UUID or hostname.\n' +
        'At a terminal: a table of rows with their NODE, and a progress line on stderr. -o json/jsonl/yaml:\n' +
        'one object per node answer (uuid, hostname, status, error, rows). The query name goes to stderr.',
      examples: [
        'fleetctl query run "SELECT * FROM os_version" --target all --wait 30s --json',
        'fleetctl query run "SELECT * FROM uptime" --target platform:darwin --target tag:pci',
        'fleetctl query run "SELECT * FROM users" --target web-fra-00001-3f2a -o csv',
        'fleetctl query run "SELECT * FROM processes" --wait 0   # start it, read later with query results',
      ],
    },
    (cmd) => addRunOptions(cmd.argument('<sql>', 'the osquery SQL to run'), 'query', 'ask', 'answers').option('--hidden', 'hide the query from the default list'),
    async (ctx, [sql], o) => {
      const wait = parseWait(o.wait);
      if (!sql!.trim()) throw new UsageError('the query is empty');
      const lists = targetLists(o.target ?? ['all']);
      const env = ctx.requireEnv();
      const api = await ctx.api();
      const started = await api.queries.run(env, { query: sql, ...lists, exp_hours: o.expireHours, hidden: o.hidden || undefined });
      const name = started.query_name;
      const expected = started.expected ?? (await api.queries.get(env, name)).expected;
      ctx.io.err(`Query ${name} started on ${expected} node${expected === 1 ? '' : 's'} in ${env}\n`);
      if (wait === 0) {
        if (ctx.wantsData()) await printObject(ctx.io, ctx.output(), { name, env, expected });
        return;
      }
      const r = await streamResults(ctx, api, { env, name, expected, deadline: Date.now() + wait });
      if (r.interrupted) throw new InterruptedError();
      if (r.answered < r.expected) {
        ctx.io.err(`${r.expected - r.answered} of ${r.expected} nodes did not answer within ${o.wait}; the query stays active: fleetctl query results ${name}\n`);
      } else if (!ctx.wantsData() && ctx.io.stdoutIsTTY && r.rows === 0) ctx.io.err('No rows.\n');
    },
  );

  verb<{ status?: QueryListStatus; page?: number; pageSize?: number; limit?: number; all?: boolean }>(
    query,
    {
      name: 'list',
      watch: true,
      aliases: ['ls'],
      summary: 'List the live queries of an environment',
      description: 'List distributed queries, newest first: one page by default (--page, --page-size); --all streams every page.',
      examples: ['fleetctl query list', 'fleetctl query list --status completed --limit 20', 'fleetctl query list --all -o json'],
    },
    (cmd) =>
      cmd
        .addOption(choiceOption('--status <status>', 'only queries in this state (default: all)', QueryListStatuses))
        .option('--page <n>', 'page number', intArg(1))
        .option('--page-size <n>', `items per page (max ${PAGE_SIZE_MAX})`, intArg(1))
        .addOption(new Option('--limit <n>', 'fetch at most N queries across pages').argParser(intArg(1)).conflicts('all'))
        .addOption(new Option('--all', 'fetch every page').conflicts(['page'])),
    async (ctx, _args, o) => {
      const env = ctx.requireEnv();
      const api = await ctx.api();
      await printPagedList(ctx, o, {
        noun: 'queries',
        columns: QUERY_COLUMNS,
        schema: (await import('../../api/index.js')).DistributedQuery,
        fetchPage: (page, page_size) => api.queries.list(env, { status: o.status, page, page_size }),
        empty: `No ${o.status ? `${o.status} ` : ''}queries in ${env}`,
      });
    },
  );

  verb(
    query,
    {
      name: 'show',
      aliases: ['get'],
      summary: 'Show a live query',
      description: 'Show a distributed query: its SQL, targets, state and how many nodes answered. -o json prints the API object.',
      examples: ['fleetctl query show NAME', 'fleetctl query show NAME -o json --jq .expected'],
    },
    (cmd) => cmd.argument('<name>', 'query name'),
    async (ctx, [name]) => {
      const api = await ctx.api();
      const q = await api.queries.get(ctx.requireEnv(), name!);
      await printObject(ctx.io, { ...ctx.output(), schema: (await import('../../api/index.js')).DistributedQuery }, q, ctx.wantsData() ? [] : QUERY_DETAIL_COLUMNS);
    },
  );

  verb(
    query,
    {
      name: 'results',
      summary: 'Print the answers of a live query so far',
      description: 'Print every node answer received so far (table: one line per row with its NODE; -o json: one object per node answer).',
      examples: ['fleetctl query results NAME', 'fleetctl query results NAME -o jsonl | jq .rows'],
    },
    (cmd) => cmd.argument('<name>', 'query name'),
    async (ctx, [name]) => {
      const api = await ctx.api();
      const env = ctx.requireEnv();
      const r = await streamResults(ctx, api, { env, name: name!, expected: 0 });
      if (r.answered === 0 && ctx.io.stdoutIsTTY && !ctx.wantsData()) ctx.io.err(`No answers yet for ${name}.\n`);
    },
  );

  verb(
    query,
    {
      name: 'cancel',
      aliases: ['expire'],
      summary: 'Stop a live query',
      description: 'Expire a distributed query now: nodes that have not picked it up yet no longer will. Answers received are kept.',
      examples: ['fleetctl query cancel NAME'],
    },
    (cmd) => cmd.argument('<name>', 'query name'),
    async (ctx, [name]) => {
      const env = ctx.requireEnv();
      const api = await ctx.api();
      const r = await api.queries.action(env, 'cancel', name!);
      if (ctx.wantsData()) await printObject(ctx.io, ctx.output(), { name, env, action: 'cancel', message: r.message });
      else ctx.io.err(`Cancelled query ${name} in ${env}\n`);
    },
  );
}
