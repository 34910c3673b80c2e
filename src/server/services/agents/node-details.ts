// Host details kept fresh (issue 27): osquery reports its host's details once, at enroll. Every
// --detail-refresh (default an hour, as Fleet; per environment `detail_refresh`) the server adds
// the same tables to a node's distributed read as queries of its own, and the answers rewrite the
// node's row: hostname, OS and osquery versions, hardware, uptime, and so its health and risk.
// A renamed host is then found by its new name (the search index follows the row).
import type { CompiledQuery, QueryResult } from 'kysely';
import type { Deps } from '../../context.js';
import type { EnvironmentRow, NodeRow } from '../../store/schema.js';
import { platformBucket, versionKey } from '../fleet/node-health.js';

/** The queries, named so that no live query can take the name (live queries are query_..., carve_...). */
export const DETAIL_QUERIES = {
  fleetctl_details_osquery_info: 'SELECT * FROM osquery_info;',
  fleetctl_details_system_info: 'SELECT * FROM system_info;',
  fleetctl_details_os_version: 'SELECT * FROM os_version;',
  fleetctl_details_platform_info: 'SELECT * FROM platform_info;',
  fleetctl_details_uptime: 'SELECT * FROM uptime;',
} as const;
type DetailName = keyof typeof DETAIL_QUERIES;
const PREFIX = 'fleetctl_details_';
export const isDetailQuery = (name: string): name is DetailName => name.startsWith(PREFIX) && name in DETAIL_QUERIES;

/** Asked and not answered: asked again after this long (or the interval, if shorter). */
const ASK_AGAIN_MS = 10 * 60_000;
/** Nodes never refreshed since the upgrade (details_at null) are spread over this long, not asked at once. */
const FIRST_SPREAD_MS = 10 * 60_000;
/** Nodes remembered as asked, per process (bounded: a fleet's worth). */
const MAX_ASKED = 1_000_000;

const obj = (v: unknown): Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
/**
 * A short single-line text from agent input (hostile input must not bloat rows or break lines).
 * NULs go (osquery pads cpu_brand with them: 40 NULs after "AMD EPYC"), other control characters
 * become spaces, and the ends are trimmed (issue 26). Enroll and the detail refresh read hosts the same way.
 */
export const detailText = (v: unknown, max = 255): string =>
  typeof v === 'string' || typeof v === 'number'
    ? String(v)
        .replace(/\0+/g, '')
        // eslint-disable-next-line no-control-regex -- the control characters are what it removes
        .replace(/[\x01-\x1f\x7f]/g, ' ')
        .trim()
        .slice(0, max)
    : '';

/** A table's row as stored in system_info: values as text, NULs removed (osquery's padding), at most 200 columns. */
export function cleanGroup(v: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(obj(v)).slice(0, 200))
    out[k.slice(0, 128)] = typeof x === 'string' ? x.replace(/\0+/g, '').trim() : x;
  return out;
}

/** What the agent door knows of a node to decide (AgentNode: a small part of its row). */
export interface DetailsOf {
  id: number;
  details_at: string | null;
}

/**
 * Which nodes are due, per process. A node is due when its details are older than its
 * environment's interval; once asked it is not asked again for ASK_AGAIN_MS (the answer comes
 * with the next distributed write, seconds later). With several replicas a node may be asked by
 * two of them: the answers just rewrite the row twice.
 */
export class DetailRefresh {
  private readonly asked = new Map<number, number>();
  private readonly startedAt: number;

  constructor(private readonly deps: Deps) {
    this.startedAt = deps.now().getTime();
  }

  intervalMs(env: EnvironmentRow): number {
    return (env.detail_refresh || this.deps.config.detailRefreshSeconds) * 1000;
  }

  /** The detail queries to add to this node's distributed read, or undefined (no SQL: a check of what is cached). */
  due(env: EnvironmentRow, node: DetailsOf): Record<string, string> | undefined {
    if (!env.query_tls) return undefined;
    const now = this.deps.now().getTime();
    const interval = this.intervalMs(env);
    const last = node.details_at ? Date.parse(node.details_at) : NaN;
    const dueAt = Number.isNaN(last)
      ? this.startedAt + (node.id % Math.ceil(Math.min(interval, FIRST_SPREAD_MS) / 1000)) * 1000
      : last + interval;
    if (now < dueAt) return undefined;
    const asked = this.asked.get(node.id);
    if (asked !== undefined && now - asked < Math.min(interval, ASK_AGAIN_MS)) return undefined;
    if (this.asked.size >= MAX_ASKED) this.asked.clear();
    this.asked.set(node.id, now);
    return { ...DETAIL_QUERIES };
  }

  /** The node answered (or was refreshed elsewhere): forget that it was asked. */
  answered(nodeId: number): void {
    this.asked.delete(nodeId);
  }
}

/** The columns of a node row that host details decide (enroll and refresh read them the same way). */
export type DetailColumns = Partial<
  Pick<
    NodeRow,
    | 'hostname'
    | 'localname'
    | 'platform'
    | 'platform_bucket'
    | 'platform_version'
    | 'osquery_version'
    | 'osquery_version_key'
    | 'cpu'
    | 'memory'
    | 'hardware_serial'
    | 'config_valid'
    | 'uptime_seconds'
  >
>;

/**
 * The columns osquery's tables say, from whichever of them are given (a table not answered
 * changes nothing). `d` has osquery's table names: osquery_info, system_info, os_version,
 * platform_info (the BIOS), uptime.
 */
export function detailColumns(d: Record<string, unknown>): DetailColumns {
  const sys = obj(d.system_info);
  const os = obj(d.os_version);
  const osq = obj(d.osquery_info);
  const out: DetailColumns = {};
  if (d.system_info !== undefined) {
    const hostname = detailText(sys.hostname) || detailText(sys.computer_name);
    if (hostname) out.hostname = hostname;
    const local = detailText(sys.local_hostname) || detailText(sys.computer_name) || hostname;
    if (local) out.localname = local;
    out.cpu = detailText(sys.cpu_brand);
    out.memory = detailText(sys.physical_memory, 32);
    out.hardware_serial = detailText(sys.hardware_serial);
  }
  if (d.os_version !== undefined || d.osquery_info !== undefined) {
    const platform = detailText(os.platform, 64) || detailText(osq.build_platform, 64);
    if (platform) {
      out.platform = platform;
      out.platform_bucket = platformBucket(platform);
    }
  }
  if (d.os_version !== undefined) out.platform_version = detailText(os.version, 64);
  if (d.osquery_info !== undefined) {
    const v = detailText(osq.version, 64);
    if (v) {
      out.osquery_version = v;
      out.osquery_version_key = versionKey(v);
    }
    // osquery's own word on the configuration it runs (health's config_invalid signal).
    if (osq.config_valid !== undefined) out.config_valid = detailText(osq.config_valid) === '0' ? 0 : 1;
  }
  if (d.uptime !== undefined) {
    const s = Number(detailText(obj(d.uptime).total_seconds, 20));
    if (Number.isSafeInteger(s) && s >= 0) out.uptime_seconds = s;
  }
  return out;
}

/** The system_info JSON of the row (api-spec 2.6: bios, os, osquery, system), with the parts answered replaced. */
export function mergedSystemInfo(stored: string, d: Record<string, unknown>): string {
  let info: Record<string, unknown> = {};
  try {
    info = obj(JSON.parse(stored || '{}'));
  } catch {
    /* a row from before: replaced by what was answered */
  }
  // osquery's platform_info table is the BIOS; the other parts keep osquery's table names.
  if (d.platform_info !== undefined) info.bios = cleanGroup(d.platform_info);
  if (d.os_version !== undefined) info.os = cleanGroup(d.os_version);
  if (d.osquery_info !== undefined) info.osquery = cleanGroup(d.osquery_info);
  if (d.system_info !== undefined) info.system = cleanGroup(d.system_info);
  return JSON.stringify(info).slice(0, 64 * 1024);
}

const TABLE_OF: Record<DetailName, string> = {
  fleetctl_details_osquery_info: 'osquery_info',
  fleetctl_details_system_info: 'system_info',
  fleetctl_details_os_version: 'os_version',
  fleetctl_details_platform_info: 'platform_info',
  fleetctl_details_uptime: 'uptime',
};

/**
 * A distributed write's detail answers (the names of DETAIL_QUERIES), taken out of `queries` and
 * `statuses` so the live queries never see them, and written to the node's row. Returns the new
 * hostname when it changed (the agent door's cached node follows), else undefined. A query that
 * failed on the host (a table this platform lacks) leaves its part as it was.
 */
export async function recordDetails(
  deps: Deps,
  node: { id: number; hostname: string },
  queries: Record<string, unknown>,
  statuses: Record<string, unknown>,
  write: (q: CompiledQuery) => Promise<QueryResult<unknown>> = (q) => deps.db.executeQuery(q),
): Promise<{ answered: boolean; hostname?: string }> {
  const d: Record<string, unknown> = {};
  let answered = false;
  for (const name of Object.keys(DETAIL_QUERIES) as DetailName[]) {
    if (!(name in queries) && !(name in statuses)) continue;
    answered = true;
    const rows = queries[name];
    const ok = (Number(statuses[name] ?? 0) || 0) === 0;
    delete queries[name];
    delete statuses[name];
    if (ok && Array.isArray(rows) && rows.length > 0) d[TABLE_OF[name]] = rows[0];
  }
  if (!answered) return { answered };
  const ts = deps.now().toISOString();
  const row = await deps.db.selectFrom('nodes').select(['system_info', 'hostname']).where('id', '=', node.id).executeTakeFirst();
  if (!row) return { answered };
  const cols = detailColumns(d);
  // Written by the agent door's group commit (off the event loop on SQLite), as enrolls are.
  await write(
    deps.db
      .updateTable('nodes')
      .set({ ...cols, system_info: mergedSystemInfo(row.system_info, d), details_at: ts, updated_at: ts })
      .where('id', '=', node.id)
      .compile(),
  );
  return { answered, hostname: cols.hostname !== undefined && cols.hostname !== row.hostname ? cols.hostname : undefined };
}
