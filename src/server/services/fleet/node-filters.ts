// Node filters on derived state (issue 20): `?health=` and `?risk=` of the nodes list, and the
// `health_list`/`risk_list`/`status_list` targets of live queries and carves. deriveHealth
// (node-health.ts) decides a node's health and risk in JS for display; these predicates decide
// the same in SQL from the same inputs, so a filtered list and the nodes it shows always agree:
//   N never seen (last_seen null)          A inactive: last_seen < now - inactive_hours
//   S stale: last_seen < now - 3 x config_interval    V config_invalid: config_valid = 0
//   O outdated: osquery_version_key below the fleet's newest major.minor (isOutdatedKey)
// health: unknown = N; unhealthy = !N & (A | V); degraded = !N & !A & !V & (S | O); healthy = the rest.
// risk:   unknown = N; high = !N & (V | A & O); medium = !N & !V & (A xor O); low = !N & !V & !A & !O.
// Every predicate is a range on last_seen plus columns of the node_seen_env_health index
// (environment_id, last_seen, config_valid, osquery_version_key), so counts read the index only:
// they name node_seen's columns (its copies of config_valid and osquery_version_key, migration
// 013), and a list joins node_seen to nodes (fleet/nodes.ts).
import type { Expression, ExpressionBuilder, SqlBool } from 'kysely';
import type { DB, EnvironmentRow } from '../../store/schema.js';
import type { HealthStatuses, NodeStatuses, RiskLevels } from '../../../api/constants.js';
import { OUTDATED_KEY_MIN, outdatedBelow } from './node-health.js';

export type HealthStatus = (typeof HealthStatuses)[number];
export type RiskLevel = (typeof RiskLevels)[number];
export type NodeStatusFilter = Exclude<(typeof NodeStatuses)[number], 'all'>;

/** The instants and version key the predicates compare with, for one environment at one moment. */
export interface HealthBounds {
  /** last_seen before this: inactive. */
  inactiveBefore: string;
  /** last_seen before this: stale check-in. */
  staleBefore: string;
  /** osquery_version_key below this: outdated (undefined: nothing is). */
  outdatedBelow?: string;
}

export function healthBounds(
  nowMs: number,
  inactiveHours: number,
  env: Pick<EnvironmentRow, 'config_interval'>,
  newestOsqueryVersion: string,
): HealthBounds {
  return {
    inactiveBefore: new Date(nowMs - inactiveHours * 3600_000).toISOString(),
    staleBefore: new Date(nowMs - 3 * env.config_interval * 1000).toISOString(),
    outdatedBelow: outdatedBelow(newestOsqueryVersion),
  };
}

/** An expression builder over node_seen, alone or joined to nodes (onSeen() casts the joined one). */
export type SeenEB = ExpressionBuilder<DB, 'node_seen'>;
type EB = SeenEB;
/** The same builder, over a query that joins node_seen: the predicates name only its columns. */
export const onSeen = (eb: ExpressionBuilder<DB, 'nodes' | 'node_seen'>): SeenEB => eb;
type Pred = Expression<SqlBool>;

function parts(eb: EB, b: HealthBounds) {
  // node_seen.last_seen is '' for a node never seen (migration 017_node_seen): before every time.
  const seen = eb('node_seen.last_seen', '>', '');
  const never = eb('node_seen.last_seen', '=', '');
  const inactive = eb('node_seen.last_seen', '<', b.inactiveBefore);
  const active = eb('node_seen.last_seen', '>=', b.inactiveBefore);
  const invalid = eb('node_seen.config_valid', '=', 0);
  const valid = eb('node_seen.config_valid', '!=', 0);
  const stale = eb('node_seen.last_seen', '<', b.staleBefore);
  const fresh = eb('node_seen.last_seen', '>=', b.staleBefore);
  const below = b.outdatedBelow;
  const outdated: Pred = below
    ? eb.and([
        eb('node_seen.osquery_version_key', 'like', '%.%'),
        eb('node_seen.osquery_version_key', '>=', OUTDATED_KEY_MIN),
        eb('node_seen.osquery_version_key', '<', below),
      ])
    : (eb.lit(false) as unknown as Pred);
  const current: Pred = below ? eb.not(outdated) : (eb.lit(true) as unknown as Pred);
  return { seen, never, inactive, active, invalid, valid, stale, fresh, outdated, current };
}

export function healthWhere(eb: EB, status: HealthStatus, b: HealthBounds): Pred {
  const p = parts(eb, b);
  switch (status) {
    case 'unknown':
      return p.never;
    case 'unhealthy':
      return eb.and([p.seen, eb.or([p.inactive, p.invalid])]);
    case 'degraded':
      return eb.and([p.active, p.valid, eb.or([p.stale, p.outdated])]);
    case 'healthy':
      return eb.and([p.active, p.valid, p.fresh, p.current]);
  }
}

export function riskWhere(eb: EB, level: RiskLevel, b: HealthBounds): Pred {
  const p = parts(eb, b);
  switch (level) {
    case 'unknown':
      return p.never;
    case 'high':
      return eb.and([p.seen, eb.or([p.invalid, eb.and([p.inactive, p.outdated])])]);
    case 'medium':
      return eb.and([p.seen, p.valid, eb.or([eb.and([p.inactive, p.current]), eb.and([p.active, p.outdated])])]);
    case 'low':
      return eb.and([p.active, p.valid, p.current]);
  }
}

export function statusWhere(eb: EB, status: NodeStatusFilter, b: Pick<HealthBounds, 'inactiveBefore'>): Pred {
  // Never seen ('') is before the cutoff: inactive.
  return status === 'active' ? eb('node_seen.last_seen', '>=', b.inactiveBefore) : eb('node_seen.last_seen', '<', b.inactiveBefore);
}

/**
 * Online (issue 20): seen within 3 distributed intervals, and never less than the last 10
 * seconds. An agent asks for live queries every interval, so one that missed two in a row is not
 * coming. The interval is the node's own when known (issue 26: nodes.distributed_interval, what
 * its last configuration told it), else the environment's query_interval.
 */
export const ONLINE_INTERVALS = 3;
export const ONLINE_MIN_SECONDS = 10;

export function onlineSince(env: Pick<EnvironmentRow, 'query_interval'>, nowMs: number): string {
  return new Date(nowMs - Math.max(ONLINE_INTERVALS * env.query_interval, ONLINE_MIN_SECONDS) * 1000).toISOString();
}
