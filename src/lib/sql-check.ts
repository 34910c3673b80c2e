// SQL of scheduled queries, discovery queries, decorators and ATC tables, checked by a real
// parser of SQLite's grammar (osquery runs SQLite): syntax only, so tables we do not know
// (osquery's are not ours to know, and extensions add more) are fine.
import { createRequire } from 'node:module';

// Loaded on first use: only the commands and routes that check SQL pay for the grammar.
let parser: ((sql: string) => unknown) | undefined;
function parseSqlite(sql: string): unknown {
  parser ??= createRequire(import.meta.url)('@appland/sql-parser') as (sql: string) => unknown;
  return parser(sql);
}

/** Longest SQL accepted in one place (osquery's own queries are a few hundred characters). */
export const SQL_MAX = 64 * 1024;

/** Why `sql` is not one SQLite SELECT statement, or undefined when it is. */
export function checkSql(sql: string): string | undefined {
  if (sql.trim() === '') return 'must not be empty (the SQL to run)';
  if (sql.length > SQL_MAX) return `is longer than ${SQL_MAX} characters`;
  let ast: { statement?: { variant?: string }[] } | null;
  try {
    ast = parseSqlite(sql) as typeof ast;
  } catch (e) {
    const err = e as { location?: { start?: { line: number; column: number; offset: number } } };
    const at = err.location?.start;
    if (!at) return 'SQL syntax error';
    const near = sql.slice(at.offset, at.offset + 24).split('\n')[0]!.trim();
    return `SQL syntax error at line ${at.line}, column ${at.column}${near ? ` near "${near}"` : ' (at the end)'}`;
  }
  const statements = ast?.statement ?? [];
  if (statements.length === 0) return 'must not be empty (the SQL to run)';
  if (statements.length > 1) return `must be one statement, not ${statements.length}`;
  const variant = statements[0]!.variant;
  if (variant !== 'select' && variant !== 'compound') return `must be a SELECT statement, not ${String(variant).toUpperCase()}`;
  return undefined;
}
