// Statements over a group's rows (the spool's insert, the query reports' upsert), in one of two
// forms (issue 31). An agent's batch is a few rows, and as one JSON parameter they cost more
// than the statement itself: serialised with every line escaped, then parsed back by the
// database (262 us of a one-line append's 680 under osquery-perf). So up to BOUND_ROWS rows bind
// their values, one tuple each, with one SQL text per row count (built on first use, prepared
// once); a bigger group is one statement with one JSON parameter, whatever its size.
import { CompiledQuery } from 'kysely';
import type { Dialect } from './dialect.js';

/** Up to this many rows a statement binds their values; more go as one JSON parameter. */
export const BOUND_ROWS = 32;

/** Placeholders in order: `?` (better-sqlite3 binds positional ones only), or `$n` with an optional cast. */
export function marks(dialect: Dialect): (pgType?: string) => string {
  let i = 0;
  return dialect === 'postgres' ? (pgType) => `$${++i}${pgType ? `::${pgType}` : ''}` : () => '?';
}

/**
 * The statement over `rows` for a dialect: `bound(dialect, n)`'s text with each row's `slots`
 * bound in the order that text reads them (a value read twice is listed twice), or `json`'s
 * text with the rows as one JSON parameter.
 */
export function rowsStatement<R>(
  bound: (dialect: Dialect, n: number) => string,
  json: Record<Dialect, string>,
  slots: readonly (keyof R)[],
): (dialect: Dialect, rows: R[]) => CompiledQuery {
  // Each text is built the first time its count is used: not at start-up, and only the few
  // counts agents send.
  const byCount: Record<Dialect, string[]> = { postgres: [], sqlite: [] };
  return (dialect, rows) =>
    rows.length <= BOUND_ROWS
      ? CompiledQuery.raw(
          (byCount[dialect][rows.length] ??= bound(dialect, rows.length)),
          rows.flatMap((r) => slots.map((k) => r[k])),
        )
      : CompiledQuery.raw(json[dialect], [JSON.stringify(rows)]);
}
