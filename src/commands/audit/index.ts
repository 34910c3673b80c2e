import { Option, type Command } from 'commander';
import { group, intArg, verb } from '../define.js';
import { LogTypes, PAGE_SIZE_MAX, Severities, type AuditLogEntry } from '../../api/index.js';
import { paginate, type FleetApi } from '../../client/index.js';
import { parseDuration, type Context } from '../../context.js';
import { UsageError } from '../../errors.js';
import { createListWriter, evalJq, printList, selectFields, validateFields, type Column, type OutputOptions } from '../../output/index.js';
import type { AuditListQuery } from '../../client/resources/audit.js';
import { follow } from './follow.js';

const nameOf = (table: Record<string, number>, v: number) => Object.keys(table).find((k) => table[k] === v) ?? String(v);
export const logTypeName = (t: number) => nameOf(LogTypes, t);
export const severityName = (s: number) => nameOf(Severities, s);

/** Table columns; `type`, `severity` and `env` show names, while json keeps the API's integers and UUID. */
function auditColumns(envNames: Map<string, string>): Column<AuditLogEntry>[] {
  return [
    { key: 'created_at', header: 'TIME', kind: 'time' },
    { key: 'username', header: 'USER' },
    { key: 'service', header: 'SERVICE' },
    { key: 'type', header: 'TYPE', get: (e) => logTypeName(e.log_type) },
    { key: 'severity', header: 'SEVERITY', kind: 'status', get: (e) => severityName(e.severity) },
    { key: 'env', header: 'ENV', get: (e) => (e.env_uuid ? (envNames.get(e.env_uuid.toLowerCase()) ?? e.env_uuid) : '') },
    { key: 'line', header: 'LINE' },
  ];
}

/** UUID -> name of the environments the caller can see (others stay UUIDs). */
async function envNames(api: FleetApi): Promise<Map<string, string>> {
  try {
    const map = await api.environments.map('uuid');
    return new Map(Object.values(map).map((e) => [e.uuid.toLowerCase(), e.name]));
  } catch {
    return new Map(); // names are a nicety: never fail a listing for them
  }
}

interface ListOpts {
  search?: string;
  service?: string;
  user?: string;
  page?: number;
  pageSize?: number;
  limit?: number;
  all?: boolean;
  follow?: boolean;
  interval: string;
}

/** How many entries --follow shows before it starts following, like `tail -f`. */
const FOLLOW_BACKLOG = 10;

async function runFollow(ctx: Context, api: FleetApi, query: AuditListQuery, o: ListOpts, columns: Column<AuditLogEntry>[]): Promise<void> {
  const intervalMs = parseDuration(o.interval);
  const base = ctx.output();
  if (base.format === 'yaml' && base.jq === undefined) throw new UsageError('--follow prints a stream: use -o jsonl, json (printed as jsonl), csv or table');
  // A JSON array would never close: a stream of entries is JSON lines.
  const out: OutputOptions = { ...base, format: base.format === 'json' ? 'jsonl' : base.format };
  let emit: (entries: AuditLogEntry[]) => Promise<void>;
  if (out.jq !== undefined) {
    const jq = out.jq;
    let checked = false;
    emit = async (entries) => {
      for (const e of entries) {
        if (out.fields && !checked) validateFields(out.fields, e, columns);
        checked = true;
        const text = await evalJq(out.fields ? selectFields(e, out.fields, columns) : e, jq);
        if (text) ctx.io.out(text);
      }
    };
  } else {
    const writer = createListWriter(ctx.io, out, columns);
    emit = (entries) => writer.write(entries);
  }

  const fetchPage = (page: number, page_size: number) => api.audit.list({ ...query, page, page_size });
  const backlog: AuditLogEntry[] = [];
  const limit = o.all ? undefined : (o.limit ?? FOLLOW_BACKLOG);
  for await (const items of paginate(fetchPage, { pageSize: Math.min(limit ?? PAGE_SIZE_MAX, PAGE_SIZE_MAX), limit })) backlog.push(...items);
  backlog.reverse(); // the server's newest-first order, turned around
  if (backlog.length > 0) await emit(backlog);
  if (ctx.io.stdoutIsTTY && !ctx.wantsData()) ctx.io.err(`Following new audit entries every ${o.interval}; Ctrl-C to stop.\n`);
  await follow({ fetchPage, afterId: backlog.reduce((m, e) => Math.max(m, e.id), 0), intervalMs, emit });
}

export function registerAudit(program: Command): void {
  const audit = group(program, {
    name: 'audit',
    summary: 'Read the API audit log',
    examples: ['fleetctl audit list', 'fleetctl audit list --user admin --service api --limit 100', 'fleetctl audit list --follow'],
  });

  verb<ListOpts>(
    audit,
    {
      name: 'list',
      aliases: ['ls'],
      summary: 'List audit log entries, newest first; --follow for new ones',
      description:
        'List audit entries newest first: one page without --limit/--all (--page, --page-size), or a stream of\n' +
        'pages with them. --env here filters the log by environment (all environments when not given).\n' +
        'Users who are not super-admins see only their own entries.\n\n' +
        `--follow prints the newest ${FOLLOW_BACKLOG} entries (or --limit N, or --all) oldest first, then polls every\n` +
        '--interval and prints new entries as they arrive until Ctrl-C, like `tail -f`. With -o json it\n' +
        'prints JSON lines (one entry a line); -o yaml is refused.',
      examples: [
        'fleetctl audit list',
        'fleetctl audit list -q "tag pci" --env prod --limit 200',
        'fleetctl audit list --user alice --all -o csv > alice-audit.csv',
        'fleetctl audit list --follow --service api',
        'fleetctl audit list --follow -o json | jq -c "select(.severity > 1)"',
      ],
    },
    (cmd) =>
      cmd
        .option('-q, --search <text>', 'substring of the entry text')
        .option('--service <name>', 'service that wrote the entry (exact)')
        .option('--user <username>', 'user (exact)')
        .option('--page <n>', 'page number', intArg(1))
        .option('--page-size <n>', `items per page (max ${PAGE_SIZE_MAX})`, intArg(1))
        .addOption(new Option('--limit <n>', 'fetch at most N entries across pages').argParser(intArg(1)).conflicts('all'))
        .addOption(new Option('--all', 'fetch every page').conflicts(['page']))
        .addOption(new Option('-f, --follow', 'keep printing new entries as they arrive').conflicts(['page']))
        .option('--interval <duration>', 'poll interval for --follow (2s, 500ms, 1m)', '2s'),
    async (ctx, _args, o) => {
      // The global --env, when given on the command line, filters; the profile's env and
      // FLEETCTL_ENV do not, since the audit log is not an env-scoped resource.
      const query: AuditListQuery = { q: o.search, service: o.service, username: o.user, env: ctx.globals.env };
      const api = await ctx.api();
      if (query.q) api.need('audit-search');
      const columns = auditColumns(await envNames(api));
      if (o.follow) return runFollow(ctx, api, query, o, columns);
      if (o.all || o.limit !== undefined) {
        const pageSize = Math.min(o.pageSize ?? PAGE_SIZE_MAX, o.limit ?? PAGE_SIZE_MAX, PAGE_SIZE_MAX);
        const writer = createListWriter(ctx.io, ctx.output(), columns);
        for await (const items of paginate((page, page_size) => api.audit.list({ ...query, page, page_size }), { pageSize, limit: o.limit })) {
          await writer.write(items);
        }
        await writer.end();
        return;
      }
      const page = await api.audit.list({ ...query, page: o.page, page_size: o.pageSize });
      await printList(ctx.io, ctx.output(), page.items, columns);
      if (ctx.io.stdoutIsTTY && !ctx.wantsData() && page.total_pages > 1) {
        const first = (page.page - 1) * page.page_size + 1;
        const more = page.page < page.total_pages ? `; next: --page ${page.page + 1}, or --all` : '';
        ctx.io.err(`Showing ${page.items.length ? `${first}-${first + page.items.length - 1}` : 'none'} of ${page.total_items} entries (page ${page.page} of ${page.total_pages})${more}\n`);
      }
    },
  );
}
