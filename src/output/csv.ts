// CSV: RFC 4180 quoting (fields holding a comma, a double quote, CR or LF are quoted, quotes
// doubled). Records end in LF, not CRLF: friendlier to Unix tools, and RFC 4180 readers
// (Python's csv, spreadsheets) accept it. Lists of names (tags) and of scalars are joined with
// commas, like the piped table; other nested objects/arrays are JSON-encoded in the cell.
// Cells are terminal-safe and single-line, and formula prefixes are neutralised (sanitize.ts).
import { listText } from './cell.js';
import { csvFormulaSafe, safeCell } from './sanitize.js';

export function csvCell(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'string') return safeCell(csvFormulaSafe(v));
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  if (v instanceof Date) return v.toISOString();
  const list = Array.isArray(v) ? listText(v, ',') : undefined;
  return safeCell(csvFormulaSafe(list ?? JSON.stringify(v) ?? ''));
}

export function csvEscape(s: string): string {
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** One record, with its line end. */
export function csvRow(values: readonly unknown[]): string {
  return `${values.map((v) => csvEscape(csvCell(v))).join(',')}\n`;
}
