// Tables. On a terminal: header row (bold with colors), widths fitted to io.columns, relative
// times, colored statuses. Piped: tab-separated raw values, no color. Unlike gh (which drops
// the header when piped) the piped form KEEPS the header row, so `cut`/`awk`/spreadsheets can
// tell the columns apart and adding a column never silently shifts a script's data; scripts
// that want bare rows pass --no-headers.
import { cellText, displayWidth, sanitize, truncate } from './cell.js';
import { colorStatus, type Colors } from './color.js';
import { isPlainObject, lookupPath } from './fields.js';
import { defaultHeader, type Column, type ColumnKind } from './format.js';
import { isNever, isTimestamp, neverAsWord, relativeTime, tableTime } from './time.js';

export interface ResolvedColumn<T> {
  key: string;
  header: string;
  kind: ColumnKind | undefined;
  id?: boolean;
  drop?: number;
  /** A width known before the rows (a stream's hint): the column is at least this wide. */
  minWidth?: number;
  value(row: T): unknown;
}

function fromDeclared<T>(c: Column<T>): ResolvedColumn<T> {
  const get = c.get;
  return {
    key: c.key,
    header: sanitize(c.header ?? defaultHeader(c.key)),
    kind: c.kind,
    id: c.id,
    drop: c.drop,
    value: get ? (row) => get(row) : (row) => lookupPath(row, c.key).value,
  };
}

function fromKey<T>(key: string): ResolvedColumn<T> {
  return { key, header: sanitize(defaultHeader(key)), kind: undefined, value: (row) => lookupPath(row, key).value };
}

/**
 * The columns a table or csv shows: the --fields (declared columns keep their header, kind and
 * getter), else the declared columns, else the top-level keys of the first row.
 */
export function resolveColumns<T>(
  columns: readonly Column<T>[],
  fields: readonly string[] | undefined,
  sample: unknown,
): ResolvedColumn<T>[] {
  if (fields && fields.length > 0) {
    // Columns the user named are never dropped.
    return fields.map((f) => {
      const c = columns.find((d) => d.key === f);
      return c ? { ...fromDeclared(c), drop: undefined } : fromKey<T>(f);
    });
  }
  if (columns.length > 0) return columns.map(fromDeclared);
  if (isPlainObject(sample)) return Object.keys(sample).map((k) => fromKey<T>(k));
  if (sample === undefined) return [];
  // A list of scalars (or arrays): one VALUE column.
  return [{ key: 'value', header: 'VALUE', kind: undefined, value: (row) => row }];
}

/** Cell text on a terminal: relative times, comma-space joined lists. */
export function ttyCellText(kind: ColumnKind | undefined, v: unknown, now: Date): string {
  if (kind === 'time' || (kind === undefined && isTimestamp(v))) {
    if (isNever(v)) return 'never';
    if (typeof v === 'string') return sanitize(tableTime(v, now));
    if (v instanceof Date) return tableTime(v.toISOString(), now);
  }
  return cellText(v, ', ');
}

/** Cell text when piped: the raw value ("never" for the zero time), lists joined with a bare comma. */
export function plainCellText(v: unknown, kind?: ColumnKind): string {
  return cellText(neverAsWord(v, kind === 'time'), ',');
}

export const COLUMN_GAP = 2;
const MIN_WIDTH = 5;

/** Largest common cap for `natural` so that the capped widths sum to at most `available`. */
function waterFill(natural: readonly number[], available: number): number[] | undefined {
  const sum = (cap: number) => natural.reduce((s, w) => s + Math.min(w, cap), 0);
  if (sum(Infinity) <= available) return [...natural];
  let lo = MIN_WIDTH;
  let hi = Math.max(...natural);
  if (sum(lo) > available) return undefined;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (sum(mid) <= available) lo = mid;
    else hi = mid - 1;
  }
  const widths = natural.map((w) => Math.min(w, lo));
  let spare = available - sum(lo);
  for (let i = 0; i < widths.length && spare > 0; i++) {
    if ((natural[i] ?? 0) > (widths[i] ?? 0)) {
      widths[i] = (widths[i] ?? 0) + 1;
      spare--;
    }
  }
  return widths;
}

/**
 * Widths that fit `total` terminal columns. When the natural widths are too wide, the widest
 * columns are cut down to a common cap (narrower ones keep their width) and what is left over
 * goes back one column at a time. Columns marked `shrinkFirst` (free text: names, ids) are cut
 * before the others (times, statuses, numbers stay readable); only if that is not enough are
 * all columns capped. Never below MIN_WIDTH: with too many columns for the terminal, lines
 * overflow rather than become unreadable.
 */
export function fitWidths(natural: readonly number[], total: number, shrinkFirst?: readonly boolean[]): number[] {
  const n = natural.length;
  if (n === 0) return [];
  const available = total - COLUMN_GAP * (n - 1);
  if (natural.reduce((s, w) => s + w, 0) <= available) return [...natural];
  if (shrinkFirst && shrinkFirst.some(Boolean) && !shrinkFirst.every(Boolean)) {
    const fixed = natural.reduce((s, w, i) => (shrinkFirst[i] ? s : s + w), 0);
    const idx = natural.map((_, i) => i).filter((i) => shrinkFirst[i]);
    const fitted = waterFill(
      idx.map((i) => natural[i] ?? 0),
      available - fixed,
    );
    if (fitted) {
      const widths = [...natural];
      idx.forEach((i, j) => (widths[i] = fitted[j] ?? 0));
      return widths;
    }
  }
  return waterFill(natural, available) ?? natural.map((w) => Math.min(w, MIN_WIDTH));
}

export interface TtyTableStyle {
  colors: Colors;
  now: Date;
}

interface TtyCell {
  text: string;
  /** Status value to color by, for `kind: 'status'`. */
  status?: string;
}

export function ttyCells<T>(cols: readonly ResolvedColumn<T>[], row: T, now: Date): TtyCell[] {
  return cols.map((c) => {
    const v = c.value(row);
    const text = ttyCellText(c.kind, v, now);
    return c.kind === 'status' ? { text, status: text } : { text };
  });
}

/** Narrowest a cut column may get before dropping columns is better than cutting it further. */
const READABLE = 8;

/**
 * Widths of header + rows, fitted to the terminal; 0 means the column is dropped. Identifiers
 * (`id`) and numbers are never cut. When the rest cannot fit readably (each cut column at least READABLE
 * wide), the droppable columns go, highest `drop` first; when nothing is left to drop, the
 * other columns are cut and, if the identifiers alone are too wide, the line overflows. With
 * `wide`, every column at its full width.
 */
export function layoutTable<T>(
  cols: readonly ResolvedColumn<T>[],
  rows: readonly TtyCell[][],
  withHeader: boolean,
  columns: number,
  wide = false,
): number[] {
  const natural = cols.map((c, i) => {
    let w = Math.max(withHeader ? displayWidth(c.header) : 0, c.minWidth ?? 0);
    for (const r of rows) w = Math.max(w, displayWidth(r[i]?.text ?? ''));
    return Math.max(w, 1);
  });
  if (wide) return natural;
  const shown = cols.map(() => true);
  const dropOrder = cols
    .map((c, i) => ({ i, rank: c.drop }))
    .filter((d): d is { i: number; rank: number } => d.rank !== undefined)
    .sort((a, b) => b.rank - a.rank)
    .map((d) => d.i);
  for (;;) {
    const idx = cols.map((_, i) => i).filter((i) => shown[i]);
    const widths = fitShown(
      idx.map((i) => natural[i]),
      idx.map((i) => neverCut(cols[i])),
      idx.map((i) => cols[i].kind === undefined || cols[i].kind === 'text'),
      columns,
    );
    const readable = widths.every((w, j) => w >= Math.min(natural[idx[j]], READABLE));
    const fits = widths.reduce((s, w) => s + w, 0) + COLUMN_GAP * (idx.length - 1) <= columns;
    if ((fits && readable) || dropOrder.length === 0) {
      const out = cols.map(() => 0);
      idx.forEach((i, j) => (out[i] = widths[j]!));
      return out;
    }
    shown[dropOrder.shift()!] = false;
  }
}

/**
 * A stream's widths (issue 20): the first batch fixed them, but later rows may be longer, and a
 * terminal table cuts free text at its column's width. So the room the first batch left unused is
 * given to the free-text columns now: each middle one grows by up to its own width or 16 columns,
 * whichever is more, from at most half of that room, and the last one (never padded) reaches the
 * terminal's edge. Identifiers and numbers are never cut anyway.
 */
const STREAM_GROWTH = 16;

export function growForStream<T>(cols: readonly ResolvedColumn<T>[], widths: readonly number[], columns: number): number[] {
  const out = [...widths];
  const shown = out.map((w, i) => (w > 0 ? i : -1)).filter((i) => i >= 0);
  if (shown.length === 0) return out;
  let spare = columns - out.reduce((s, w) => s + w, 0) - COLUMN_GAP * (shown.length - 1);
  if (spare <= 0) return out;
  const text = (i: number) => !neverCut(cols[i]) && (cols[i].kind === undefined || cols[i].kind === 'text');
  const last = shown[shown.length - 1];
  const middle = shown.filter((i) => i !== last && text(i));
  const growth = (i: number) => Math.max(out[i], STREAM_GROWTH);
  const wanted = middle.reduce((s, i) => s + growth(i), 0);
  if (wanted > 0) {
    // Shared in proportion to what each may take, leaving at least half of the room for the last column.
    const share = Math.min(1, spare / 2 / wanted);
    for (const i of middle) {
      const add = Math.floor(growth(i) * share);
      out[i] = out[i] + add;
      spare -= add;
    }
  }
  if (text(last)) out[last] = out[last] + spare;
  return out;
}

/** Identifiers and numbers: a cut one would read as another value. */
function neverCut(c: { id?: boolean; kind?: ColumnKind }): boolean {
  return !!c.id || c.kind === 'number';
}

/** fitWidths over the non-identifier columns, in the room the identifiers leave. */
function fitShown(natural: number[], ids: boolean[], shrinkFirst: boolean[], total: number): number[] {
  const free = natural.map((_, i) => i).filter((i) => !ids[i]);
  if (free.length === 0) return natural;
  const idWidth = natural.reduce((s, w, i) => (ids[i] ? s + w : s), 0);
  const room = total - idWidth - COLUMN_GAP * (natural.length - free.length);
  const fitted = fitWidths(
    free.map((i) => natural[i]),
    room,
    free.map((i) => shrinkFirst[i]),
  );
  const widths = [...natural];
  free.forEach((i, j) => (widths[i] = fitted[j]!));
  return widths;
}

function renderLine(all: { text: string; width: number; right: boolean; id?: boolean; paint?: (s: string) => string }[]): string {
  const out: string[] = [];
  const parts = all.filter((p) => p.width > 0); // width 0: dropped for the terminal's width
  parts.forEach((p, i) => {
    // An identifier longer than its column (a later batch of a stream) overflows, never cut.
    const cut = p.id ? p.text : truncate(p.text, p.width);
    const last = i === parts.length - 1;
    const painted = p.paint ? p.paint(cut) : cut;
    const pad = Math.max(0, p.width - displayWidth(cut));
    if (p.right) out.push(' '.repeat(pad) + painted);
    else out.push(last ? painted : painted + ' '.repeat(pad));
  });
  return `${out.join(' '.repeat(COLUMN_GAP)).trimEnd()}\n`;
}

export function ttyHeaderLine<T>(cols: readonly ResolvedColumn<T>[], widths: readonly number[], c: Colors): string {
  return renderLine(
    cols.map((col, i) => ({
      text: col.header,
      width: widths[i] ?? 0,
      right: col.kind === 'number',
      paint: (s: string) => c.bold(s),
    })),
  );
}

export function ttyRowLine<T>(cols: readonly ResolvedColumn<T>[], cells: readonly TtyCell[], widths: readonly number[], c: Colors): string {
  return renderLine(
    cols.map((col, i) => {
      const cell = cells[i] ?? { text: '' };
      const status = cell.status;
      return {
        text: cell.text,
        width: widths[i] ?? 0,
        right: col.kind === 'number',
        id: neverCut(col),
        paint: status !== undefined ? (s: string) => colorStatus(c, status, s) : undefined,
      };
    }),
  );
}

export function tsvHeaderLine<T>(cols: readonly ResolvedColumn<T>[]): string {
  return `${cols.map((c) => sanitize(c.header)).join('\t')}\n`;
}

export function tsvRowLine<T>(cols: readonly ResolvedColumn<T>[], row: T): string {
  return `${cols.map((c) => plainCellText(c.value(row), c.kind)).join('\t')}\n`;
}

// ---- single objects: FIELD  value ----

interface Entry {
  key: string;
  value: unknown;
  kind: ColumnKind | undefined;
}

function flattenInto(out: Entry[], key: string, value: unknown, kind: ColumnKind | undefined): void {
  if (isPlainObject(value)) {
    const keys = Object.keys(value);
    if (keys.length === 0) out.push({ key, value: '', kind });
    for (const k of keys) flattenInto(out, key === '' ? k : `${key}.${k}`, value[k], undefined);
    return;
  }
  out.push({ key, value, kind });
}

/**
 * The key/value entries of one object: the given columns (their keys, in order), else every
 * field; nested objects become dotted keys (`health.status`).
 */
export function objectEntries<T>(obj: T, cols: readonly ResolvedColumn<T>[] | undefined): Entry[] {
  const out: Entry[] = [];
  if (cols && cols.length > 0) {
    for (const c of cols) flattenInto(out, c.key, c.value(obj), c.kind);
  } else if (isPlainObject(obj)) {
    flattenInto(out, '', obj, undefined);
  } else {
    out.push({ key: 'value', value: obj, kind: undefined });
  }
  return out;
}

/** Terminal view: padded field names, then values (times as "raw (relative)"), not truncated. */
export function renderObjectTTY<T>(obj: T, cols: readonly ResolvedColumn<T>[] | undefined, style: TtyTableStyle): string {
  const entries = objectEntries(obj, cols);
  const keyWidth = Math.max(0, ...entries.map((e) => displayWidth(sanitize(e.key))));
  const c = style.colors;
  let text = '';
  for (const e of entries) {
    let value: string;
    if (e.kind === 'time' || (e.kind === undefined && isTimestamp(e.value))) {
      value = isNever(e.value)
        ? 'never'
        : typeof e.value === 'string'
          ? `${sanitize(e.value)} (${relativeTime(e.value, style.now)})`
          : cellText(e.value, ', ');
    } else {
      value = cellText(e.value, ', ');
    }
    if (e.kind === 'status') value = colorStatus(c, value, value);
    const key = sanitize(e.key);
    const pad = ' '.repeat(keyWidth - displayWidth(key));
    text += value === '' ? `${c.bold(key)}\n` : `${c.bold(key)}${pad}  ${value}\n`;
  }
  return text;
}

/** Piped view: `key<TAB>value` lines, raw values. */
export function renderObjectPlain<T>(obj: T, cols: readonly ResolvedColumn<T>[] | undefined): string {
  return objectEntries(obj, cols)
    .map((e) => `${sanitize(e.key)}\t${plainCellText(e.value, e.kind)}\n`)
    .join('');
}
