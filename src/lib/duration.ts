// Durations as users type them, apart from the Context so that option parsing loads nothing heavy.
import { UsageError } from '../errors.js';

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** "30", "30s", "2m", "2h", "500ms" -> milliseconds. */
export function parseDuration(s: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(s.trim());
  if (!m) throw new UsageError(`invalid duration "${s}": use seconds (30), or 30s, 2m, 2h, 500ms`);
  const ms = Number(m[1]) * UNIT_MS[m[2] ?? 's'];
  if (ms <= 0) throw new UsageError(`invalid duration "${s}": must be positive`);
  return ms;
}

const SPAN_UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400, w: 604800 };

/**
 * A span in whole seconds as operators write them: "3600", "90s", "30m", "1h", "7d", "2w";
 * `never` (or 0) gives 0 where `allowNever` (an enrollment window that never closes).
 */
export function parseSpan(s: string, o: { allowNever?: boolean; flag?: string } = {}): number {
  const v = s.trim().toLowerCase();
  const what = o.flag ? `${o.flag} "${s}"` : `duration "${s}"`;
  if (o.allowNever && (v === 'never' || v === '0')) return 0;
  const m = /^(\d+)(s|m|h|d|w)?$/.exec(v);
  if (!m) throw new UsageError(`invalid ${what}: use seconds (3600) or 30m, 1h, 7d, 2w${o.allowNever ? ', or never' : ''}`);
  const n = Number(m[1]) * SPAN_UNITS[m[2] ?? 's'];
  if (!Number.isSafeInteger(n) || n < 1) throw new UsageError(`invalid ${what}: must be positive${o.allowNever ? ' (or never)' : ''}`);
  return n;
}
