// Points in time as users type them for --since and --until (issue 30): an age ("10m", "1h",
// "2d": that long before now, as `kubectl logs --since` and `journalctl --since`), or a time
// ("2026-11-25T10:00:00Z", "2026-11-25 10:00", "2026-11-25": local time when it has no zone).
import { UsageError } from '../errors.js';

const UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** `10m` -> milliseconds, or undefined when the text is not an age. */
export function parseAge(s: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)(s|m|h|d|w)$/.exec(s.trim());
  return m ? Number(m[1]) * UNITS[m[2]] : undefined;
}

/** The time `s` names, as RFC 3339 UTC; `flag` names the option in the error. */
export function parseTimeArg(s: string, flag: string, now: Date = new Date()): string {
  const age = parseAge(s);
  if (age !== undefined) return new Date(now.getTime() - age).toISOString();
  const text = s.trim();
  // A date alone, or a date and a clock without a zone: the local time (what `date` prints).
  const local = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3})\d*)?)?)?$/.exec(text);
  let t: number;
  if (local) {
    const [, y, mo, d, h = '0', mi = '0', se = '0', ms = '0'] = local;
    t = new Date(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(se), Number(ms.padEnd(3, '0'))).getTime();
  } else if (/^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:?\d{2})$/.test(text)) {
    t = Date.parse(text.replace(' ', 'T'));
  } else t = NaN;
  if (Number.isNaN(t)) {
    throw new UsageError(
      `invalid ${flag} "${s}": give an age (30s, 10m, 1h, 2d, 1w) or a time (2026-11-25T10:00:00Z, 2026-11-25 10:00, 2026-11-25)`,
    );
  }
  return new Date(t).toISOString();
}
