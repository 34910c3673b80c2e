// Turning values into the text of one table cell, and measuring/truncating that text.
import { isPlainObject } from './fields.js';

import { safeCell } from './sanitize.js';

/** Control characters (and newlines/tabs) would break a TSV row or let server data drive the terminal. */
export const sanitize = safeCell;

/**
 * Text of a value in a table cell (and in the key/value view):
 * null/undefined -> '', booleans -> true/false, arrays of objects that all have a `name`
 * (tags) -> their names comma-joined, arrays of scalars -> comma-joined, anything else that
 * is an object -> compact JSON. `sep` is ', ' on a terminal and ',' when piped.
 */
export function cellText(v: unknown, sep = ', '): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'string') return sanitize(v);
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  if (v instanceof Date) return v.toISOString();
  const list = Array.isArray(v) ? listText(v, sep) : undefined;
  return sanitize(list ?? JSON.stringify(v) ?? '');
}

/**
 * A list as one cell (table, tsv, csv): objects that all have a `name` (tags) -> their names,
 * scalars -> themselves, joined by `sep`; undefined for other lists (they stay JSON).
 */
export function listText(v: readonly unknown[], sep: string): string | undefined {
  if (v.length > 0 && v.every((x) => isPlainObject(x) && typeof x.name === 'string')) {
    return v.map((x) => (x as { name: string }).name).join(sep);
  }
  if (v.every((x) => x === null || ['string', 'number', 'boolean'].includes(typeof x))) {
    return v.map((x) => (x === null ? '' : String(x as string | number | boolean))).join(sep);
  }
  return undefined;
}

function charWidth(cp: number, ch: string): number {
  if (cp === 0x200d || (cp >= 0xfe00 && cp <= 0xfe0f) || /\p{Mn}|\p{Me}/u.test(ch)) return 0;
  if (
    (cp >= 0x1100 && cp <= 0x115f) ||
    (cp >= 0x2e80 && cp <= 0xa4cf && cp !== 0x303f) ||
    (cp >= 0xac00 && cp <= 0xd7a3) ||
    (cp >= 0xf900 && cp <= 0xfaff) ||
    (cp >= 0xfe30 && cp <= 0xfe4f) ||
    (cp >= 0xff00 && cp <= 0xff60) ||
    (cp >= 0xffe0 && cp <= 0xffe6) ||
    (cp >= 0x1f300 && cp <= 0x1faff) ||
    (cp >= 0x20000 && cp <= 0x3fffd)
  ) {
    return 2;
  }
  return 1;
}

/** Columns a string takes on a terminal (wide CJK/emoji count 2, combining marks 0). No ANSI expected. */
export function displayWidth(s: string): number {
  let w = 0;
  for (const ch of s) w += charWidth(ch.codePointAt(0) ?? 0, ch);
  return w;
}

/** Cuts `s` to at most `width` columns, ending in '…' when something was cut. */
export function truncate(s: string, width: number): string {
  if (width <= 0) return '';
  if (displayWidth(s) <= width) return s;
  let out = '';
  let w = 0;
  for (const ch of s) {
    const cw = charWidth(ch.codePointAt(0) ?? 0, ch);
    if (w + cw > width - 1) break;
    out += ch;
    w += cw;
  }
  return `${out}…`;
}

export function padEnd(s: string, width: number): string {
  const w = displayWidth(s);
  return w >= width ? s : s + ' '.repeat(width - w);
}

export function padStart(s: string, width: number): string {
  const w = displayWidth(s);
  return w >= width ? s : ' '.repeat(width - w) + s;
}
