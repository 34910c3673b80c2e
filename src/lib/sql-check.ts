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

// The grammar parser is slow, about 60 µs of CPU a character (15 ms for a 250-character query,
// 5 s at SQL_MAX), and the same texts are checked again and again: every write checks its whole
// part (a `schedule add` re-checks every query already there), and `apply` checks each document
// here, then the server checks it dry and again for real. Answers are kept by text, the oldest
// dropped beyond CACHED_CHARS.
const cached = new Map<string, string | undefined>();
const CACHED_CHARS = 4 * 1024 * 1024;
let cachedChars = 0;

/** Why `sql` is not one SQLite SELECT statement, or undefined when it is. */
export function checkSql(sql: string): string | undefined {
  if (sql.trim() === '') return 'must not be empty (the SQL to run)';
  if (sql.length > SQL_MAX) return `is longer than ${SQL_MAX} characters`;
  if (cached.has(sql)) return cached.get(sql);
  const problem = parseProblem(sql);
  for (const old of cached.keys()) {
    if (cachedChars + sql.length <= CACHED_CHARS) break;
    cached.delete(old);
    cachedChars -= old.length;
  }
  cached.set(sql, problem);
  cachedChars += sql.length;
  return problem;
}

function parseProblem(sql: string): string | undefined {
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
