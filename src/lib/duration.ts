// Durations as users type them, apart from the Context so that option parsing loads nothing heavy.
import { UsageError } from '../errors.js';

/** "30", "30s", "2m", "500ms" -> milliseconds. */
export function parseDuration(s: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(s.trim());
  if (!m) throw new UsageError(`invalid duration "${s}": use seconds (30), or 30s, 2m, 500ms`);
  const n = Number(m[1]);
  const ms = m[2] === 'ms' ? n : m[2] === 'm' ? n * 60_000 : n * 1000;
  if (ms <= 0) throw new UsageError(`invalid duration "${s}": must be positive`);
  return ms;
}
