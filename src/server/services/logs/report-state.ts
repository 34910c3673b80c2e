// A scheduled query's current rows on one node (issue 30), built from the result lines osquery
// sends, whatever its log format:
// - a snapshot query (`action: "snapshot"`, its rows in `snapshot`): the last snapshot, whole;
// - a differential query, as events (`action: "added"|"removed"`, one row in `columns`) or as a
//   batch (`diffResults: {added, removed}`): the rows added and not removed since. osquery's first
//   run of a query (counter 0, or a new epoch) sends every row as added: the state starts again
//   from it, so an agent whose database was wiped does not leave yesterday's rows behind.
// Rows are matched by their columns (key order does not matter). Pure functions; the store's
// side is reports.ts.

export type Row = Record<string, unknown>;

/** A report keeps at most this many rows per node (a differential query without `removed` only grows). */
export const REPORT_MAX_ROWS = 10_000;
/** ...and this many bytes of them (JSON): the oldest go first, and the report says `truncated`. */
export const REPORT_MAX_BYTES = 1024 * 1024;

export interface ReportState {
  kind: 'snapshot' | 'differential';
  epoch: number;
  counter: number;
  /** Rows by their key, in the order they were first added; `n` counts identical rows. */
  rows: Map<string, { row: Row; n: number }>;
  truncated: boolean;
}

const isObj = (v: unknown): v is Row => typeof v === 'object' && v !== null && !Array.isArray(v);
const num = (v: unknown): number => {
  const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
  return Number.isFinite(n) ? n : 0;
};

/** A row's identity: its columns as JSON with the keys sorted. */
export function rowKey(r: Row): string {
  return JSON.stringify(
    Object.keys(r)
      .sort()
      .map((k) => [k, r[k]]),
  );
}

function fromRows(rows: Row[], kind: ReportState['kind'], epoch: number, counter: number): ReportState {
  const s: ReportState = { kind, epoch, counter, rows: new Map(), truncated: false };
  add(s, rows);
  return s;
}

function add(s: ReportState, rows: Row[]): void {
  for (const r of rows) {
    if (!isObj(r)) continue;
    const k = rowKey(r);
    const had = s.rows.get(k);
    if (had) had.n++;
    else s.rows.set(k, { row: r, n: 1 });
  }
}

function remove(s: ReportState, rows: Row[]): void {
  for (const r of rows) {
    if (!isObj(r)) continue;
    const k = rowKey(r);
    const had = s.rows.get(k);
    if (!had) continue;
    if (--had.n === 0) s.rows.delete(k);
  }
}

/** The state as stored (reports.ts): rows repeated by their count. */
export function stateRows(s: ReportState): Row[] {
  const out: Row[] = [];
  for (const { row, n } of s.rows.values()) for (let i = 0; i < n; i++) out.push(row);
  return out;
}

export function stateFromStored(kind: string, epoch: number, counter: number, rowsJson: string, truncated: boolean): ReportState {
  let rows: Row[] = [];
  try {
    const parsed = JSON.parse(rowsJson) as unknown;
    if (Array.isArray(parsed)) rows = parsed.filter(isObj);
  } catch {
    rows = [];
  }
  const s = fromRows(rows, kind === 'snapshot' ? 'snapshot' : 'differential', epoch, counter);
  s.truncated = truncated;
  return s;
}

/**
 * The state after one result entry (as osquery sent it, parsed), or `state` unchanged when the
 * entry holds no rows this understands.
 */
export function applyEntry(state: ReportState | undefined, e: unknown): ReportState | undefined {
  if (!isObj(e)) return state;
  const epoch = num(e.epoch);
  const counter = num(e.counter);
  if (Array.isArray(e.snapshot) || e.action === 'snapshot')
    return fromRows(Array.isArray(e.snapshot) ? (e.snapshot as Row[]) : [], 'snapshot', epoch, counter);
  const diff = isObj(e.diffResults) ? e.diffResults : undefined;
  const event = (e.action === 'added' || e.action === 'removed') && isObj(e.columns);
  if (!diff && !event) return state;
  // A first run (counter 0 after a later one), a new epoch, or a query that was a snapshot: start again.
  let s = state;
  if (!s || s.kind !== 'differential' || s.epoch !== epoch || (counter === 0 && s.counter !== 0) || counter < s.counter) {
    s = fromRows([], 'differential', epoch, counter);
  }
  s.counter = counter;
  if (diff) {
    remove(s, Array.isArray(diff.removed) ? (diff.removed as Row[]) : []);
    add(s, Array.isArray(diff.added) ? (diff.added as Row[]) : []);
  } else if (e.action === 'added') add(s, [e.columns as Row]);
  else remove(s, [e.columns as Row]);
  return s;
}

/** The rows to store, within the bounds (the oldest let go first); `truncated` says whether any were. */
export function boundedRows(s: ReportState): { json: string; count: number; truncated: boolean } {
  let rows = stateRows(s);
  let cut = false;
  if (rows.length > REPORT_MAX_ROWS) {
    rows = rows.slice(rows.length - REPORT_MAX_ROWS);
    cut = true;
  }
  let json = JSON.stringify(rows);
  if (json.length > REPORT_MAX_BYTES) {
    // Drop from the oldest until the JSON fits: measured row by row, once.
    const sizes = rows.map((r) => JSON.stringify(r).length + 1);
    let total = json.length;
    let from = 0;
    while (total > REPORT_MAX_BYTES && from < rows.length) total -= sizes[from++];
    rows = rows.slice(from);
    json = JSON.stringify(rows);
    cut = true;
  }
  if (cut) {
    // What was let go is gone from the state too, so the next diff starts from what is stored.
    s.rows = fromRows(rows, s.kind, s.epoch, s.counter).rows;
    s.truncated = true;
  }
  return { json, count: rows.length, truncated: s.truncated };
}
