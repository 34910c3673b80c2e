// `env create`, `env edit`, `env delete` (issue 27): environments by the API instead of
// --create-env at start. Loaded only when one of them runs.
import type { Context } from '../../context.js';
import type { Environment, EnvironmentCreateBody, EnvironmentEditBody } from '../../api/index.js';
import { UsageError } from '../../errors.js';
import { printObject, type Column } from '../../output/index.js';
import { safeText } from '../../output/sanitize.js';
import { confirmDestructive } from '../confirm.js';
import { enrollmentOf } from './enrollment-state.js';

export interface EnvCreateOpts {
  agentHost?: string;
  enrollWindow?: number;
  config?: number;
  log?: number;
  query?: number;
  detailRefresh?: number;
  enroll?: boolean;
}

export interface EnvEditOpts extends Omit<EnvCreateOpts, 'enrollWindow'> {
  name?: string;
  followServer?: boolean;
}

/** What create and edit print: where agents connect, how enrollment stands, the intervals. */
export interface EnvSummary {
  name: string;
  uuid: string;
  hostname: string;
  hostname_pinned: boolean;
  enrollment: string;
  enroll_expire: string;
  accept_enrolls: boolean;
  config_interval: number;
  log_interval: number;
  query_interval: number;
  detail_refresh: number;
}

const SUMMARY_COLUMNS: Column<EnvSummary>[] = [
  { key: 'name' },
  { key: 'uuid' },
  { key: 'hostname', header: 'agent host' },
  { key: 'enrollment' },
  { key: 'config_interval', kind: 'number' },
  { key: 'log_interval', kind: 'number' },
  { key: 'query_interval', kind: 'number' },
  { key: 'detail_refresh', header: 'detail refresh (s, 0: server default)', kind: 'number' },
];

export const summaryOf = (e: Environment, expiryStops = true, now = new Date()): EnvSummary => ({
  name: e.name,
  uuid: e.uuid,
  hostname: e.hostname,
  hostname_pinned: e.hostname_pinned,
  enrollment: enrollmentOf(e, now, expiryStops).text,
  enroll_expire: e.enroll_expire,
  accept_enrolls: e.accept_enrolls,
  config_interval: e.config_interval,
  log_interval: e.log_interval,
  query_interval: e.query_interval,
  detail_refresh: e.detail_refresh,
});

function settable(o: EnvCreateOpts): Omit<EnvironmentCreateBody, 'name' | 'enroll_window'> {
  const body: Omit<EnvironmentCreateBody, 'name' | 'enroll_window'> = {};
  if (o.agentHost !== undefined) body.hostname = o.agentHost;
  if (o.config !== undefined) body.config_interval = o.config;
  if (o.log !== undefined) body.log_interval = o.log;
  if (o.query !== undefined) body.query_interval = o.query;
  if (o.detailRefresh !== undefined) body.detail_refresh = o.detailRefresh;
  if (o.enroll !== undefined) body.accept_enrolls = o.enroll;
  return body;
}

export async function runEnvCreate(ctx: Context, name: string, o: EnvCreateOpts): Promise<void> {
  const api = await ctx.api();
  if (o.enrollWindow !== undefined) api.need('enroll-window');
  if (o.detailRefresh !== undefined) api.need('detail-refresh');
  const body: EnvironmentCreateBody = { name, ...settable(o) };
  if (o.enrollWindow !== undefined) body.enroll_window = o.enrollWindow;
  const env = await api.environments.create(body);
  const s = summaryOf(env, api.traits.enrollExpiryStopsAgents);
  if (ctx.wantsData()) return printObject(ctx.io, ctx.output(), { ...env, secret: '' });
  await printObject(ctx.io, ctx.output(), s, SUMMARY_COLUMNS);
  ctx.io.err(`Created environment ${safeText(env.name)}. Enroll hosts with: fleetctl enroll show ${safeText(env.name)} enroll.sh\n`);
}

export async function runEnvEdit(ctx: Context, ref: string, o: EnvEditOpts): Promise<void> {
  if (o.followServer && o.agentHost !== undefined) throw new UsageError('--agent-host and --follow-server contradict each other: give one');
  const body: EnvironmentEditBody = settable(o);
  if (o.name !== undefined) body.name = o.name;
  if (o.followServer) body.hostname = '';
  if (Object.keys(body).length === 0) {
    throw new UsageError(
      'nothing to change: give --name, --agent-host, --follow-server, --config, --log, --query, --detail-refresh, --enroll or --no-enroll',
    );
  }
  const api = await ctx.api();
  if (o.detailRefresh !== undefined) api.need('detail-refresh');
  if (o.followServer) api.need('agent-host-follow');
  const env = await api.environments.edit(ref, body);
  if (ctx.wantsData()) return printObject(ctx.io, ctx.output(), { ...env, secret: '' });
  await printObject(ctx.io, ctx.output(), summaryOf(env, api.traits.enrollExpiryStopsAgents), SUMMARY_COLUMNS);
}

export async function runEnvDelete(ctx: Context, ref: string, o: { yes?: boolean }): Promise<void> {
  const api = await ctx.api();
  // Read first: the question names what goes, and a wrong name fails before anyone is asked.
  const env = await api.environments.get(ref);
  const page = await api.nodes.list(env.uuid, { page: 1, page_size: 1 });
  const n = page.total_items;
  await confirmDestructive(
    ctx,
    o.yes,
    `Delete environment ${safeText(env.name)} (${env.uuid}) with its ${n} node${n === 1 ? '' : 's'}, tags, live queries, carves, log sinks and settings? This cannot be undone`,
  );
  const r = await api.environments.remove(env.uuid);
  if (ctx.wantsData()) return printObject(ctx.io, ctx.output(), { name: env.name, uuid: env.uuid, nodes: n, message: r.message });
  ctx.io.err(`${safeText(r.message.replace(/^./, (c) => c.toUpperCase()))}.\n`);
}
