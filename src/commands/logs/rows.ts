// Log lines as a person reads them (issue 30): one table line per row an agent reported, whatever
// osquery's format (event: `columns` + `action`; snapshot: `snapshot` rows; batch: `diffResults`
// added and removed), and one per status line (its severity in ACTION, "file:line message" in ROW).
// Machine formats never come through here: they carry the API's lines as they are.
import type { LogLine } from '../../api/index.js';
import { StatusSeverities } from '../../api/constants.js';
import type { Column } from '../../output/index.js';

export interface LogRow {
  id: number;
  /** The hostname, else the node's UUID. */
  node: string;
  node_uuid: string;
  received_at: string;
  log_type: string;
  name: string;
  /** added, removed or snapshot; for a status line its severity (info, warning, error, fatal). */
  action: string;
  /** The row as `key=value` pairs, or the status line's `file:line message`. */
  row: string;
  /** The row's columns (a status line's severity, filename, line and message): `--fields columns.NAME`. */
  columns: Record<string, unknown>;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const rowsOf = (v: unknown): Obj[] => (Array.isArray(v) ? v.filter(isObj) : []);

/** osquery's severity (a number, or a string of one, as osquery sends it) by name; undefined when it is neither. */
export function severityName(v: unknown): string | undefined {
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : NaN;
  return Number.isInteger(n) ? (StatusSeverities[n] ?? String(n)) : undefined;
}

/** `k=v` pairs; a value with spaces, quotes or `=` (or empty) is written as a JSON string. */
export function pairsText(columns: Obj): string {
  return Object.entries(columns)
    .map(([k, v]) => {
      const s = typeof v === 'string' ? v : (JSON.stringify(v) ?? '');
      return `${k}=${s === '' || /[\s"=]/.test(s) ? JSON.stringify(s) : s}`;
    })
    .join(' ');
}

export function statusText(e: Obj): string {
  const line = typeof e.line === 'number' || typeof e.line === 'string' ? String(e.line) : '';
  const where = typeof e.filename === 'string' && e.filename ? `${e.filename}${line ? `:${line}` : ''} ` : '';
  return `${where}${typeof e.message === 'string' ? e.message : ''}`;
}

/** The table lines of one log line (none for a result that carries no rows, e.g. an empty snapshot). */
export function logRows(l: LogLine): LogRow[] {
  const base = {
    id: l.id,
    node: l.hostname || l.node_uuid,
    node_uuid: l.node_uuid,
    received_at: l.received_at,
    log_type: l.log_type,
    name: l.name ?? '',
  };
  const e = isObj(l.entry) ? l.entry : {};
  if (l.log_type === 'status') {
    const columns = { severity: e.severity, filename: e.filename, line: e.line, message: e.message };
    return [{ ...base, action: severityName(e.severity) ?? '', row: statusText(e), columns }];
  }
  const line = (action: string, columns: Obj): LogRow => ({ ...base, action, row: pairsText(columns), columns });
  if (Array.isArray(e.snapshot)) return rowsOf(e.snapshot).map((c) => line('snapshot', c));
  if (isObj(e.columns)) return [line(typeof e.action === 'string' ? e.action : '', e.columns)];
  if (isObj(e.diffResults))
    return [...rowsOf(e.diffResults.added).map((c) => line('added', c)), ...rowsOf(e.diffResults.removed).map((c) => line('removed', c))];
  // Something else (a newer osquery, a hand-made line): shown whole rather than hidden.
  return [{ ...base, action: typeof e.action === 'string' ? e.action : '', row: JSON.stringify(l.entry) ?? '', columns: {} }];
}

export const LOG_COLUMNS: Column<LogRow>[] = [
  { key: 'node', header: 'NODE', id: true },
  { key: 'received_at', header: 'TIME', kind: 'time' },
  { key: 'name', header: 'QUERY', id: true, drop: 1 },
  { key: 'action', header: 'ACTION', kind: 'status' },
  { key: 'row', header: 'ROW' },
];
