import { Option, type Command } from 'commander';
import { group, intArg, verb } from '../define.js';
import { LogTypes, PAGE_SIZE_MAX, Severities } from '../../api/constants.js';
import type { AuditLogEntry } from '../../api/index.js';
import type { FleetApi } from '../../client/index.js';
import { paginate } from '../../client/paginate.js';
import type { Context } from '../../context.js';
import { parseDuration } from '../../lib/duration.js';
import { UsageError } from '../../errors.js';
import {
  createListWriter,
  evalJq,
  printObject,
  selectFields,
  setTimeStyle,
  validateFields,
  type Column,
  type OutputOptions,
} from '../../output/index.js';
import type { AuditListQuery } from '../../client/resources/audit.js';
import { follow } from './follow.js';
import { printPagedList } from '../paged-list.js';

const nameOf = (table: Record<string, number>, v: number) => Object.keys(table).find((k) => table[k] === v) ?? String(v);
export const logTypeName = (t: number) => nameOf(LogTypes, t);
export const severityName = (s: number) => nameOf(Severities, s);

/** Table columns; `type`, `severity` and `env` show names, while json keeps the API's integers and UUID. */
function auditColumns(envNames: Map<string, string>): Column<AuditLogEntry>[] {
  return [
    { key: 'id', header: 'ID', kind: 'number' },
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
  if (base.format === 'yaml' && base.jq === undefined)
    throw new UsageError('--follow prints a stream: use -o jsonl, json (printed as jsonl), csv or table');
  // A JSON array would never close: a stream of entries is JSON lines.
  const out: OutputOptions = {
    ...base,
    format: base.format === 'json' ? 'jsonl' : base.format,
    schema: (await import('../../api/index.js')).AuditLogEntry,
  };
  if (out.fields) validateFields(out.fields, undefined, columns, out.schema);
  // A followed log reads by the clock: "just now" on every new line says nothing.
  if (!ctx.globals.time) setTimeStyle('local');
  let emit: (entries: AuditLogEntry[]) => Promise<void>;
  if (out.jq !== undefined) {
    const jq = out.jq;
    emit = async (entries) => {
      for (const e of entries) {
        const text = await evalJq(out.fields ? selectFields(e, out.fields, columns) : e, jq);
        if (text) ctx.io.out(text);
      }
    };
  } else {
    // A stream: the terminal's spare width goes to the LINE column, so later, longer lines fit.
    const writer = createListWriter(ctx.io, out, columns, { stream: true });
    emit = (entries) => writer.write(entries);
  }

  const fetchPage = (page: number, page_size: number) => api.audit.list({ ...query, page, page_size });
  const backlog: AuditLogEntry[] = [];
  const limit = o.all ? undefined : (o.limit ?? FOLLOW_BACKLOG);
  for await (const items of paginate(fetchPage, { pageSize: Math.min(limit ?? PAGE_SIZE_MAX, PAGE_SIZE_MAX), limit }))
    backlog.push(...items);
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
      pager: true,
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
      const filtered = Object.values(query).some((v) => v !== undefined);
      await printPagedList(ctx, o, {
        noun: 'entries',
        columns,
        schema: (await import('../../api/index.js')).AuditLogEntry,
        fetchPage: (page, page_size) => api.audit.list({ ...query, page, page_size }),
        empty: `No audit entries${filtered ? ' match' : ''}`,
      });
    },
  );
  verb(
    audit,
    {
      name: 'show',
      aliases: ['get'],
      summary: 'Show one audit entry by its id',
      description:
        'Show one audit entry (the ID column of `audit list`). Non-super-admins can read only their own entries. -o json prints the API object.',
      examples: ['fleetctl audit show 42', 'fleetctl audit show 42 -o json'],
    },
    (cmd) => cmd.argument('<id>', 'entry id (the ID column of audit list)'),
    async (ctx, [id]) => {
      if (!/^[1-9]\d{0,15}$/.test(id)) throw new UsageError(`"${id}" is not an audit entry id (a positive number)`);
      const api = await ctx.api();
      api.need('audit-show');
      const entry = await api.audit.get(Number(id));
      const columns = auditColumns(await envNames(api));
      await printObject(
        ctx.io,
        { ...ctx.output(), schema: (await import('../../api/index.js')).AuditLogEntry },
        entry,
        ctx.wantsData() ? [] : columns,
      );
    },
  );
}
