// A node row as the API shows it: health, posture, tags and system_info, with what they are
// measured against (the environment's inactivity hours, the fleet's newest osquery).
import type { Deps } from '../../context.js';
import type { EnvironmentRow, NodeRow, TagRow } from '../../store/schema.js';
import { NEVER, SystemInfo, type Node, type Tag } from '../../../api/index.js';
import { readGenerations, type Generations } from '../../store/node-index.js';
import { cachedCount } from './node-counts.js';
import { deriveHealth, uptime } from './node-health.js';
import { inactiveHours } from '../environments/settings-values.js';
import { toTag } from './tag-shape.js';
import { healthBounds, type HealthBounds } from './node-filters.js';

/** What health and risk filters compare with in `env` now (live-query targets use it too). */
export async function healthBoundsOf(deps: Deps, env: EnvironmentRow): Promise<HealthBounds> {
  const ctx = await shapeContext(deps, env, await readGenerations(deps.db, deps.readNow));
  return healthBounds(ctx.nowMs, ctx.inactiveHours, env, ctx.newestOsqueryVersion);
}

/** The newest osquery version in the fleet (for the outdated signal), counted once per generation. */
async function newestOsqueryVersion(deps: Deps, generation: number): Promise<string> {
  return cachedCount(deps.db, 'newest-osquery', generation, '', async () => {
    const row = await deps.db
      .selectFrom('nodes')
      .select('osquery_version')
      .orderBy('osquery_version_key', 'desc')
      .limit(1)
      .executeTakeFirst();
    return row?.osquery_version ?? '';
  });
}

/** Shared context for shaping node rows into API nodes. */
export type ShapeContext = Awaited<ReturnType<typeof shapeContext>>;
export async function shapeContext(deps: Deps, env: EnvironmentRow, gens: Generations) {
  const [hours, newest] = await Promise.all([inactiveHours(deps, env.id, gens.config), newestOsqueryVersion(deps, gens.counts)]);
  return { nowMs: deps.now().getTime(), inactiveHours: hours, newestOsqueryVersion: newest, env };
}

export function toNode(
  r: NodeRow,
  tags: Tag[],
  ctx: Awaited<ReturnType<typeof shapeContext>>,
  withKey: boolean,
  systemInfo?: SystemInfo,
): Node {
  const { health, risk_level } = deriveHealth(
    {
      lastSeen: r.last_seen,
      configValid: !!r.config_valid,
      osqueryVersion: r.osquery_version,
      configIntervalSeconds: ctx.env.config_interval,
    },
    ctx,
  );
  const node: Node = {
    id: r.id,
    uuid: r.uuid,
    hostname: r.hostname,
    localname: r.localname,
    ip_address: r.ip_address,
    country_code: r.country_code,
    platform: r.platform,
    platform_version: r.platform_version,
    osquery_user: r.osquery_user,
    osquery_version: r.osquery_version,
    cpu: r.cpu,
    memory: r.memory,
    hardware_serial: r.hardware_serial,
    config_hash: r.config_hash,
    config_fetched_at: r.config_fetched_at ?? NEVER,
    daemon_hash: r.daemon_hash,
    extra_data: r.extra_data,
    bytes_received: Number(r.bytes_received),
    environment: ctx.env.name,
    environment_id: r.environment_id,
    user_id: r.user_id,
    username: r.username,
    last_seen: r.last_seen ?? '0001-01-01T00:00:00Z',
    created_at: r.created_at,
    updated_at: r.updated_at,
    health,
    posture: { risk_level },
    tags,
    uptime: uptime(Number(r.uptime_seconds), r.last_seen),
    system_info: systemInfo ?? parseSystemInfo(r),
  };
  if (withKey) node.node_key = r.node_key;
  return node;
}

/** A column osquery sent: its text (osquery sends strings; numbers and nested values as they read). */
const columnText = (v: unknown): string => (typeof v === 'string' ? v : (JSON.stringify(v) ?? ''));

/**
 * The stored system_info in the API's shape: every group and key present (empty string when the
 * agent did not report it), nothing else. Agents report what osquery's tables give, which is not
 * always every key the API lists, and a missing one must not fail the response schema.
 */
export const parseSystemInfo = (r: NodeRow): SystemInfo => {
  let raw: unknown;
  try {
    raw = JSON.parse(r.system_info || '{}');
  } catch {
    raw = {};
  }
  const src = (raw && typeof raw === 'object' ? raw : {}) as Record<string, Record<string, unknown> | undefined>;
  const out: Record<string, Record<string, string>> = {};
  for (const [group, schema] of Object.entries(SystemInfo.properties)) {
    const given = src[group] && typeof src[group] === 'object' ? src[group]! : {};
    // NUL padding from older rows (osquery pads cpu_brand with NULs) never reaches a client (issue 26).
    out[group] = Object.fromEntries(
      Object.keys((schema as { properties: object }).properties).map((k) => [
        k,
        given[k] == null ? '' : columnText(given[k]).replace(/\0+/g, '').trim(),
      ]),
    );
  }
  // What osquery reported at enroll ("0": it had no configuration yet) is not news once it has
  // fetched one: the node's own config_valid (issue 26).
  if (out.osquery && 'config_valid' in out.osquery) out.osquery.config_valid = r.config_valid ? '1' : '0';
  return out as SystemInfo;
};

export async function tagsByNode(deps: Deps, nodeIds: number[]): Promise<Map<number, Tag[]>> {
  const out = new Map<number, Tag[]>();
  if (nodeIds.length === 0) return out;
  const rows = await deps.db
    .selectFrom('node_tags')
    .innerJoin('tags', 'tags.id', 'node_tags.tag_id')
    .selectAll('tags')
    .select('node_tags.node_id')
    .where('node_tags.node_id', 'in', nodeIds)
    .orderBy('tags.name')
    .execute();
  for (const r of rows) {
    const list = out.get(r.node_id) ?? [];
    list.push(toTag(r as TagRow));
    out.set(r.node_id, list);
  }
  return out;
}
