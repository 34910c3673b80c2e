// What the schedule verbs do (loaded only by them).
import type { Context } from '../../context.js';
import type { OsqueryConfigView, ScheduledQuery } from '../../api/index.js';
import { CliError, ExitCode, UsageError } from '../../errors.js';
import { printList, printObject, type Column } from '../../output/index.js';
import { ConfigError, pathOf, scheduledQuery } from '../../lib/osquery-config.js';
import { confirmDestructive } from '../confirm.js';
import type { QueryOpts } from './options.js';

/** One scheduled query as the verbs show it: osquery's defaults filled in for the flags. */
export interface QueryRow {
  name: string;
  interval: number;
  platform: string;
  snapshot: boolean;
  removed: boolean;
  version: string;
  shard: number | null;
  denylist: boolean;
  description: string;
  query: string;
}

const COLUMNS: Column<QueryRow>[] = [
  { key: 'name', header: 'NAME' },
  { key: 'interval', header: 'INTERVAL', kind: 'number' },
  { key: 'platform', header: 'PLATFORM' },
  { key: 'snapshot', header: 'SNAPSHOT', kind: 'bool' },
  { key: 'removed', header: 'REMOVED', kind: 'bool' },
  { key: 'version', header: 'VERSION' },
  { key: 'query', header: 'QUERY' },
];

const DETAIL: Column<QueryRow>[] = [
  { key: 'name' },
  { key: 'query' },
  { key: 'interval', kind: 'number' },
  { key: 'platform' },
  { key: 'snapshot', kind: 'bool' },
  { key: 'removed', kind: 'bool' },
  { key: 'version' },
  { key: 'shard' },
  { key: 'denylist', kind: 'bool' },
  { key: 'description' },
];

const row = (name: string, q: ScheduledQuery): QueryRow => ({
  name,
  interval: q.interval,
  platform: q.platform ?? '',
  snapshot: q.snapshot ?? false,
  removed: q.removed ?? true,
  version: q.version ?? '',
  shard: q.shard ?? null,
  denylist: q.denylist ?? true,
  description: q.description ?? '',
  query: q.query,
});

/** The queries addressed (the schedule, or a pack's), read with the hash to write back against. */
interface Target {
  view: OsqueryConfigView;
  queries: Record<string, ScheduledQuery>;
  label: string;
  /** Where a query's fields sit, for messages: schedule.NAME or packs.P.queries.NAME. */
  base: string;
  write(queries: Record<string, ScheduledQuery>): Promise<OsqueryConfigView>;
}

async function target(ctx: Context, env: string, pack: string | undefined): Promise<Target> {
  const api = await ctx.api();
  if (!pack) {
    const view = await api.config.get(env, 'schedule');
    return {
      view,
      queries: { ...(view.schedule ?? {}) },
      label: `the schedule of ${view.environment}`,
      base: 'schedule',
      write: (queries) => api.config.put(env, 'schedule', queries, { ifMatch: view.hash }),
    };
  }
  const view = await api.config.get(env, 'packs');
  const packs = { ...(view.packs ?? {}) };
  const p = packs[pack];
  if (p === undefined)
    throw new CliError(
      `no pack "${pack}" in ${view.environment}`,
      ExitCode.notFound,
      `run \`fleetctl env config ${env} packs\` to see them`,
    );
  if (typeof p === 'string')
    throw new UsageError(`pack "${pack}" of ${view.environment} is a local pack (${p}): its queries are in that file on the agents`);
  return {
    view,
    queries: { ...p.queries },
    label: `pack ${pack} of ${view.environment}`,
    base: `${pathOf('packs', pack)}.queries`,
    write: (queries) => api.config.put(env, 'packs', { ...packs, [pack]: { ...p, queries } }, { ifMatch: view.hash }),
  };
}

function notFound(t: Target, name: string, env: string): CliError {
  return new CliError(`no scheduled query "${name}" in ${t.label}`, ExitCode.notFound, `run \`fleetctl schedule list ${env}\` to see them`);
}

export async function list(ctx: Context, env: string, o: QueryOpts): Promise<void> {
  const t = await target(ctx, env, o.pack);
  const rows = Object.entries(t.queries).map(([n, q]) => row(n, q));
  await printList(ctx.io, ctx.output(), rows, COLUMNS);
  if (rows.length === 0 && ctx.io.stdoutIsTTY && !ctx.wantsData()) ctx.io.err(`No scheduled queries in ${t.label}.\n`);
}

export async function show(ctx: Context, env: string, name: string, o: QueryOpts): Promise<void> {
  const t = await target(ctx, env, o.pack);
  const q = t.queries[name];
  if (!q) throw notFound(t, name, env);
  await printObject(ctx.io, ctx.output(), row(name, q), ctx.wantsData() ? [] : DETAIL);
}

async function sqlOf(ctx: Context, o: QueryOpts): Promise<string | undefined> {
  if (o.query !== undefined && o.queryFile !== undefined) throw new UsageError('give the SQL once: --query or --query-file');
  if (o.queryFile === undefined) return o.query;
  const { readInput } = await import('../read-input.js');
  return (await readInput(ctx.io, o.queryFile, '--query-file')).trim();
}

/** The query with the options given laid over `base`, checked as the server will check it. */
function merged(base: Partial<ScheduledQuery>, sql: string | undefined, o: QueryOpts, path: string): ScheduledQuery {
  const q: Record<string, unknown> = { ...base };
  if (sql !== undefined) q.query = sql;
  if (o.interval !== undefined) q.interval = o.interval;
  if (o.platform !== undefined) q.platform = o.platform;
  if (o.minVersion !== undefined) q.version = o.minVersion;
  if (o.shard !== undefined) q.shard = o.shard;
  if (o.description !== undefined) q.description = o.description;
  for (const f of ['snapshot', 'removed', 'denylist'] as const) {
    const v = o[f];
    if (v === undefined) continue;
    // osquery's defaults (snapshot false, removed and denylist true) are left unwritten.
    if (v === (f === 'snapshot' ? false : true)) delete q[f];
    else q[f] = v;
  }
  try {
    return scheduledQuery(path, q);
  } catch (e) {
    if (e instanceof ConfigError) throw new CliError(e.message);
    throw e;
  }
}

function done(ctx: Context, what: string, before: OsqueryConfigView, after: OsqueryConfigView): void {
  ctx.io.err(
    `${what} (config hash ${before.hash.slice(0, 12)} -> ${after.hash.slice(0, 12)}; agents get it at their next config refresh)\n`,
  );
}

export async function add(ctx: Context, env: string, name: string, o: QueryOpts): Promise<void> {
  const sql = await sqlOf(ctx, o);
  if (sql === undefined) throw new UsageError('the SQL is required: --query SQL or --query-file FILE');
  const t = await target(ctx, env, o.pack);
  if (t.queries[name])
    throw new CliError(
      `scheduled query "${name}" already exists in ${t.label}`,
      ExitCode.conflict,
      `change it with \`fleetctl schedule edit ${env} ${name} ...\``,
    );
  const q = merged({}, sql, o, pathOf(t.base, name));
  const after = await t.write({ ...t.queries, [name]: q });
  if (ctx.wantsData()) return printObject(ctx.io, ctx.output(), row(name, q));
  done(ctx, `Added ${name} to ${t.label}`, t.view, after);
}

export async function edit(ctx: Context, env: string, name: string, o: QueryOpts): Promise<void> {
  const sql = await sqlOf(ctx, o);
  const given =
    sql !== undefined ||
    ['interval', 'platform', 'minVersion', 'shard', 'description', 'snapshot', 'removed', 'denylist'].some(
      (k) => o[k as keyof QueryOpts] !== undefined,
    );
  if (!given)
    throw new UsageError(
      'nothing to change: give at least one of --query, --query-file, --interval, --platform, --min-version, --shard, --description, --[no-]snapshot, --[no-]removed, --[no-]denylist',
    );
  const t = await target(ctx, env, o.pack);
  const old = t.queries[name];
  if (!old) throw notFound(t, name, env);
  const q = merged(old, sql, o, pathOf(t.base, name));
  const after = await t.write({ ...t.queries, [name]: q });
  if (ctx.wantsData()) return printObject(ctx.io, ctx.output(), row(name, q));
  if (!after.changed?.length) ctx.io.err(`${name} in ${t.label} unchanged\n`);
  else done(ctx, `Changed ${name} in ${t.label}`, t.view, after);
}

export async function remove(ctx: Context, env: string, names: string[], o: QueryOpts): Promise<void> {
  const t = await target(ctx, env, o.pack);
  const missing = names.find((n) => !t.queries[n]);
  if (missing !== undefined) throw notFound(t, missing, env);
  await confirmDestructive(
    ctx,
    o.yes,
    `Remove ${names.length === 1 ? `scheduled query ${names[0]}` : `${names.length} scheduled queries (${names.join(', ')})`} from ${t.label}?`,
  );
  const rest = { ...t.queries };
  for (const n of names) delete rest[n];
  const after = await t.write(rest);
  if (ctx.wantsData()) return printObject(ctx.io, ctx.output(), { environment: after.environment, removed: names, hash: after.hash });
  done(ctx, `Removed ${names.join(', ')} from ${t.label}`, t.view, after);
}
