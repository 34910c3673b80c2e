// `fleetctl query`: distributed (live) queries. run streams answers as nodes send them;
// list/show/results/cancel follow osctrl-api's /api/v1/queries/{env} endpoints.
import { Option, type Command } from 'commander';
import { choiceOption, group, intArg, verb } from '../define.js';
import { PAGE_SIZE_MAX, QueryListStatuses } from '../../api/constants.js';
import type { DistributedQuery, QueryListStatus } from '../../api/index.js';
import { printPagedList } from '../paged-list.js';
import { CliError, ExitCode, InterruptedError, UsageError, mapError } from '../../errors.js';
import { printList, printObject, safeText, validateFields, type Column } from '../../output/index.js';
import { paginate } from '../../client/paginate.js';
import { addRunOptions, targetLists, TARGET_HELP, type RunFlags } from './targets.js';
import { streamResults, type StreamResult } from './stream.js';
import { LiveRun } from './live-run.js';

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

export { parseWait } from './live-run.js';

interface RunOpts extends RunFlags {
  hidden?: boolean;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/**
 * How the run ended, in one line, and its exit code: 0 when every target answered without an
 * error, 9 (incomplete) when some did not answer or answered with an error (documented).
 */
function summary(r: StreamResult, wait: string, fate: string): { line?: string; incomplete: boolean } {
  const missing = Math.max(0, r.expected - r.answered);
  const parts: string[] = [];
  if (missing > 0) {
    const offline = r.online !== undefined ? Math.max(0, missing - (r.onlinePending ?? 0)) : undefined;
    const why = r.onlineDone ? 'every online target answered; the others are offline' : `not within ${wait}`;
    parts.push(
      `${missing} of ${plural(r.expected, 'target')} did not answer (${why}${offline !== undefined && !r.onlineDone ? `; ${offline} offline` : ''})`,
    );
  }
  if (r.errors > 0) parts.push(`${r.errors} of ${r.answered} answered with an error`);
  if (parts.length === 0) return { incomplete: false };
  return { line: `${parts.join('; ')}${fate ? `; ${fate}` : ''}`, incomplete: true };
}

export function registerQuery(program: Command): void {
  const query = group(program, {
    name: 'query',
    summary: 'Run live (distributed) queries on nodes and read their results',
    examples: [
      'fleetctl query run "SELECT * FROM os_version" --target all --wait 30s',
      'fleetctl query run "SELECT name, pid FROM processes" --target platform:linux --json',
      'fleetctl query list --status active',
      'fleetctl query results logged_in_users -o csv > results.csv',
    ],
  });

  registerQueryRun(query);

  registerQueryList(query);

  registerQueryShowAndResults(query);

  registerQueryCancel(query);
}

function registerQueryRun(query: Command): void {
  verb<RunOpts>(
    query,
    {
      name: 'run',
      summary: 'Run a query on nodes and stream their answers',
      description:
        'Start a distributed query on the target nodes (default: every node of the environment) and print\n' +
        'the answers as nodes send them, until every targeted node has answered, --wait passes, or with\n' +
        '--exit every online target has answered (offline nodes are not waited for).\n\n' +
        `Targets (--target, repeatable, comma-separated): ${TARGET_HELP}. Several targets are a union: a node\n` +
        'matching any of them is targeted (--target platform:darwin --target tag:pci asks every darwin node and\n' +
        'every pci node).\n\n' +
        'The query is bounded: it is stopped on the server when the command ends, fails or is interrupted\n' +
        '(Ctrl-C), answers kept; with --detach it stays active until it expires (--expire, default 24h).\n\n' +
        'At a terminal: a table of rows with their NODE, and a progress line on stderr (answered/targeted, and\n' +
        'how many targets are online). -o json/jsonl/yaml: one object per node answer (uuid, hostname, status,\n' +
        'error, rows). The query name goes to stderr. Exit 0 when every target answered without an error, 9 when\n' +
        'some did not answer or answered with an error, 130 when interrupted.',
      examples: [
        'fleetctl query run "SELECT * FROM os_version" --target status:active --exit --json',
        'fleetctl query run "SELECT * FROM uptime" --target platform:darwin --target tag:pci',
        'fleetctl query run "SELECT * FROM users" --target db-sfo-00003-4206 -o csv',
        'fleetctl query run "SELECT * FROM listening_ports" --target tag:pci --wait 5m',
        'fleetctl query run "SELECT * FROM processes" --detach --wait 0 --expire 2h   # start it, read later with query results',
      ],
    },
    (cmd) =>
      addRunOptions(cmd.argument('<sql>', 'the osquery SQL to run'), 'query', 'ask', 'answers').option(
        '--hidden',
        'hide the query from the default list',
      ),
    async (ctx, [sql], o) => {
      if (!sql.trim()) throw new UsageError('the query is empty');
      const lists = targetLists(o.target ?? ['all']);
      // A --fields typo is refused before a query is started on a fleet (machine formats: the API's items).
      const out = ctx.output();
      if (out.fields && ctx.wantsData() && out.format !== 'csv')
        validateFields(out.fields, undefined, [], (await import('../../api/index.js')).QueryResult);
      const env = ctx.requireEnv();
      const api = await ctx.api();
      if (lists.status_list || lists.health_list || lists.risk_list) api.need('derived-targets');
      const run = new LiveRun(ctx, api, env, 'query', o);
      const started = await api.queries.run(env, { query: sql, ...lists, ...run.expiryBody(), hidden: o.hidden || undefined });
      const name = started.query_name;
      run.begin(name);
      let r: StreamResult;
      try {
        const expected = started.expected ?? (await api.queries.get(env, name)).expected;
        ctx.io.err(`Query ${name} started on ${plural(expected, 'node')} in ${env}\n`);
        if (run.waitMs === 0) {
          await run.end(name, 'none');
          if (ctx.wantsData()) await printObject(ctx.io, ctx.output(), { name, env, expected });
          return;
        }
        r = await streamResults(ctx, api, { env, name, expected, deadline: Date.now() + run.waitMs, exitWhenOnlineAnswered: o.exit, run });
      } catch (e) {
        await run.end(name, 'cancel');
        throw e;
      }
      if (r.interrupted) {
        await run.end(name, 'cancel');
        throw new InterruptedError();
      }
      const fate = run.fate(await run.end(name, r.answered < r.expected ? 'complete' : 'none'), name);
      const s = summary(r, o.wait, fate);
      if (s.incomplete)
        throw new CliError(
          s.line!,
          ExitCode.incomplete,
          r.answered < r.expected && !o.exit ? 'offline targets are not waited for with --exit; --wait waits longer' : undefined,
        );
      if (!ctx.wantsData() && ctx.io.stdoutIsTTY && r.rows === 0) ctx.io.err('No rows.\n');
    },
  );
}

function registerQueryList(query: Command): void {
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
}

function registerQueryShowAndResults(query: Command): void {
  verb(
    query,
    {
      name: 'show',
      aliases: ['get'],
      summary: 'Show a live query',
      description: 'Show a distributed query: its SQL, targets, state and how many nodes answered. -o json prints the API object.',
      examples: ['fleetctl query show osquery_versions', 'fleetctl query show osquery_versions -o json --jq .expected'],
    },
    (cmd) => cmd.argument('<name>', 'query name'),
    async (ctx, [name]) => {
      const api = await ctx.api();
      const q = await api.queries.get(ctx.requireEnv(), name);
      await printObject(
        ctx.io,
        { ...ctx.output(), schema: (await import('../../api/index.js')).DistributedQuery },
        q,
        ctx.wantsData() ? [] : QUERY_DETAIL_COLUMNS,
      );
    },
  );

  verb(
    query,
    {
      name: 'results',
      summary: 'Print the answers of a live query so far',
      description: 'Print every node answer received so far (table: one line per row with its NODE; -o json: one object per node answer).',
      examples: ['fleetctl query results logged_in_users', 'fleetctl query results logged_in_users -o jsonl | jq .rows'],
    },
    (cmd) => cmd.argument('<name>', 'query name'),
    async (ctx, [name]) => {
      const api = await ctx.api();
      const env = ctx.requireEnv();
      const r = await streamResults(ctx, api, { env, name: name, expected: 0 });
      if (r.answered === 0 && ctx.io.stdoutIsTTY && !ctx.wantsData()) ctx.io.err(`No answers yet for ${name}.\n`);
    },
  );
}

function registerQueryCancel(query: Command): void {
  verb<{ allMine?: boolean }>(
    query,
    {
      name: 'cancel',
      aliases: ['expire'],
      summary: 'Stop live queries',
      description:
        'Expire distributed queries now: nodes that have not picked them up yet no longer will. Answers received\n' +
        'are kept. Name the queries, or --all-mine for every active query you started in the environment.\n' +
        "Each is cancelled even when another fails; the exit code is the first failure's.",
      examples: [
        'fleetctl query cancel listening_ports',
        'fleetctl query cancel osquery_versions logged_in_users',
        'fleetctl query cancel --all-mine',
      ],
    },
    (cmd) => cmd.argument('[names...]', 'query names').option('--all-mine', 'every active query you started in the environment'),
    async (ctx, names, o) => {
      if (o.allMine && names.length > 0) throw new UsageError('name queries or pass --all-mine, not both');
      if (!o.allMine && names.length === 0) throw new UsageError('no query: name one or more, or pass --all-mine');
      const env = ctx.requireEnv();
      const api = await ctx.api();
      let targets = [...new Set(names)];
      if (o.allMine) {
        const me = (await api.users.me()).username;
        targets = [];
        for await (const page of paginate((page, page_size) => api.queries.list(env, { status: 'active', page, page_size }), {
          pageSize: PAGE_SIZE_MAX,
        })) {
          for (const q of page) if (q.creator === me) targets.push(q.name);
        }
        if (targets.length === 0) {
          if (ctx.wantsData()) await printList(ctx.io, ctx.output(), [], []);
          else ctx.io.err(`No active queries of yours in ${env}.\n`);
          return;
        }
      }
      const results: { name: string; env: string; action: 'cancel'; cancelled: boolean; message: string }[] = [];
      // Boxed: the first error is rethrown as it came (its class decides the exit code).
      let first: { error: unknown } | undefined;
      for (const name of targets) {
        try {
          const r = await api.queries.action(env, 'cancel', name);
          results.push({ name, env, action: 'cancel', cancelled: true, message: r.message });
          if (!ctx.wantsData()) ctx.io.err(`Cancelled query ${name} in ${env}\n`);
        } catch (e) {
          first ??= { error: e };
          const m = mapError(e);
          results.push({ name, env, action: 'cancel', cancelled: false, message: m.message });
          if (targets.length > 1) ctx.io.err(`error: ${safeText(name)}: ${safeText(m.message)}\n`);
        }
      }
      if (ctx.wantsData()) {
        if (results.length === 1 && !o.allMine) await printObject(ctx.io, ctx.output(), results[0]);
        else await printList(ctx.io, ctx.output(), results, []);
      }
      if (first) {
        if (targets.length === 1) throw first.error;
        const m = mapError(first.error);
        throw new CliError(`${results.filter((r) => !r.cancelled).length} of ${targets.length} cancellations failed`, m.exitCode, m.hint);
      }
    },
  );
}
