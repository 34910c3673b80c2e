// Timestamps for people: "3 minutes ago", "in 5 hours", "never".

/** RFC 3339 date-time, as the API sends (`2026-11-21T22:12:06.123Z`, or with an offset). */
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:?\d{2})$/;

export function isTimestamp(v: unknown): v is string {
  return typeof v === 'string' && RFC3339.test(v);
}

/** The API's "never" (contract.md 1): Go's zero time `0001-01-01T00:00:00Z`, or no value. */
export function isNever(v: unknown): boolean {
  if (v === null || v === undefined || v === '') return true;
  return typeof v === 'string' && v.startsWith('0001-01-01');
}

/**
 * A value as text outside JSON and YAML (piped tables, csv, key/value views): the API's zero time
 * reads "never". In a time column an empty value is "never" too; elsewhere only the zero time is
 * (an empty string in another column is just empty). JSON and YAML keep the API's value.
 */
export function neverAsWord(v: unknown, timeColumn = false): unknown {
  if (timeColumn ? isNever(v) : typeof v === 'string' && v.startsWith('0001-01-01T')) return 'never';
  return v;
}

function plural(n: number, unit: string): string {
  return `${n} ${unit}${n === 1 ? '' : 's'}`;
}

/**
 * `relativeTime('2026-11-21T22:09:06Z', now)` -> "3 minutes ago"; future times -> "in 5 hours";
 * the zero time or an empty value -> "never"; under a minute either way (clock skew) ->
 * "just now". Units are rounded to the nearest whole (4 min 40 s -> "5 minutes ago") and move
 * up at 60 minutes, 24 hours, 30 days, 12 months. Text that is not a time comes back unchanged.
 */
export function relativeTime(iso: string, now: Date = new Date()): string {
  if (isNever(iso)) return 'never';
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return iso;
  const diff = now.getTime() - t;
  const secs = Math.abs(diff) / 1000;
  let text: string;
  if (secs < 60) return 'just now';
  const minutes = Math.round(secs / 60);
  const hours = Math.round(secs / 3600);
  const days = Math.round(secs / 86400);
  const months = Math.round(days / 30);
  if (minutes < 60) text = plural(minutes, 'minute');
  else if (hours < 24) text = plural(hours, 'hour');
  else if (days < 30) text = plural(days, 'day');
  else if (months < 12) text = plural(Math.max(1, months), 'month');
  else text = plural(Math.max(1, Math.round(days / 365)), 'year');
  return diff >= 0 ? `${text} ago` : `in ${text}`;
}

/** How a table shows times: `relative` ("3 minutes ago"), `local` (the local clock), `rfc3339` (as sent). */
export const TIME_STYLES = ['relative', 'local', 'rfc3339'] as const;
export type TimeStyle = (typeof TIME_STYLES)[number];

// One process runs one command, so the style is set once (from --time) rather than threaded
// through every printer.
let timeStyle: TimeStyle = 'relative';

export function setTimeStyle(style: TimeStyle): void {
  timeStyle = style;
}

const pad = (n: number) => String(n).padStart(2, '0');

/** `2026-11-23 14:05:09` in the local time zone. */
export function localClock(d: Date): string {
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** A timestamp as a table shows it, in the chosen style; "never" for the zero time. */
export function tableTime(iso: string, now: Date = new Date(), style: TimeStyle = timeStyle): string {
  if (isNever(iso)) return 'never';
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return iso;
  if (style === 'local') return localClock(new Date(t));
  if (style === 'rfc3339') return iso;
  return relativeTime(iso, now);
}
