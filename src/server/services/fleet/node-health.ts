// Derived node fields (contract.md 4.11): platform bucket, health, posture and uptime.
// Pure functions: the rules are unit-tested without a database.
import type { Health, Uptime } from '../../../api/index.js';
import { NEVER } from '../../../api/index.js';

export { platformBucket } from '../../../lib/platforms.js';

/** "5.12.1" -> "00005.00012.00001": sorts like the version numbers. */
export function versionKey(version: string): string {
  return version
    .split(/[.\-+]/)
    .slice(0, 4)
    .map((part) => (/^\d+$/.test(part) ? part.padStart(5, '0') : part))
    .join('.');
}

function majorMinor(version: string): [number, number] | null {
  const m = /^(\d+)\.(\d+)/.exec(version);
  return m ? [Number(m[1]), Number(m[2])] : null;
}

/**
 * The version key below which a node's osquery is outdated: the newest version's major.minor
 * (`5.12.3` -> the key of `5.12`); undefined when the newest does not parse (then nothing is).
 */
export function outdatedBelow(newest: string): string | undefined {
  const b = majorMinor(newest);
  return b ? versionKey(`${b[0]}.${b[1]}`) : undefined;
}

/**
 * Outdated, on the stored key: the same comparison SQL makes for `?health=`/`?risk=` filters
 * (node-filters.ts), so a listed node and its filter always agree. A key that is not
 * `major.minor...` (no version, `5`, `abc`) is never outdated.
 */
export function isOutdatedKey(key: string, below: string | undefined): boolean {
  return below !== undefined && key.includes('.') && key >= OUTDATED_KEY_MIN && key < below;
}
export const OUTDATED_KEY_MIN = '00000.00000';

/** Older than the newest version by a minor release or more. */
export function isOutdated(version: string, newest: string): boolean {
  return isOutdatedKey(versionKey(version), outdatedBelow(newest));
}

export interface HealthInput {
  lastSeen: string | null;
  configValid: boolean;
  osqueryVersion: string;
  configIntervalSeconds: number;
}

export interface HealthContext {
  nowMs: number;
  inactiveHours: number;
  newestOsqueryVersion: string;
}

const SIGNAL_TEXT: Record<string, string> = {
  inactive: 'has not checked in within the inactive window',
  stale_checkin: 'missed three or more config check-ins',
  config_invalid: 'reports an invalid osquery configuration',
  osquery_outdated: 'runs an osquery release older than the newest in the fleet',
};

export function isActive(lastSeen: string | null, nowMs: number, inactiveHours: number): boolean {
  if (!lastSeen) return false;
  return Date.parse(lastSeen) >= nowMs - inactiveHours * 3600_000;
}

export function deriveHealth(node: HealthInput, ctx: HealthContext): { health: Health; risk_level: string } {
  const signals: string[] = [];
  const never = !node.lastSeen;
  if (!isActive(node.lastSeen, ctx.nowMs, ctx.inactiveHours)) signals.push('inactive');
  if (!never && Date.parse(node.lastSeen!) < ctx.nowMs - 3 * node.configIntervalSeconds * 1000) signals.push('stale_checkin');
  if (!node.configValid) signals.push('config_invalid');
  if (isOutdated(node.osqueryVersion, ctx.newestOsqueryVersion)) signals.push('osquery_outdated');

  if (never) {
    return {
      health: { status: 'unknown', reason: 'Node has never checked in.', signals },
      risk_level: 'unknown',
    };
  }
  const severe = signals.includes('inactive') || signals.includes('config_invalid');
  const status = severe ? 'unhealthy' : signals.length > 0 ? 'degraded' : 'healthy';
  const reason = signals.length === 0 ? 'All checks passed.' : `Node ${signals.map((s) => SIGNAL_TEXT[s]).join('; ')}.`;
  // Risk: an invalid config or an inactive outdated node is high; inactive or outdated alone is
  // medium; a late check-in alone is low.
  const medium = ['inactive', 'osquery_outdated'].filter((s) => signals.includes(s)).length;
  const risk_level = signals.includes('config_invalid') || medium >= 2 ? 'high' : medium === 1 ? 'medium' : 'low';
  return { health: { status, reason, signals }, risk_level };
}

export function uptime(totalSeconds: number, lastSeen: string | null): Uptime {
  const t = Math.max(0, Math.floor(totalSeconds));
  return {
    days: Math.floor(t / 86400),
    hours: Math.floor((t % 86400) / 3600),
    minutes: Math.floor((t % 3600) / 60),
    seconds: t % 60,
    total_seconds: t,
    last_seen: lastSeen ?? NEVER,
  };
}
