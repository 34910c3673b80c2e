// SQL of scheduled queries, discovery queries, decorators and ATC tables, checked by a real
// parser of SQLite's grammar (osquery runs SQLite): syntax only, so tables we do not know
// (osquery's are not ours to know, and extensions add more) are fine.
import { createRequire } from 'node:module';

/** Where the grammar is: loaded on first use here, and by the server's worker (sql-worker.ts). */
export const PARSER_MODULE = '@appland/sql-parser';

/**
 * What the parser said of one text: the statements' kinds, or where it stopped (null: it could
 * not say), or why it could not parse it at all.
 */
export type ParseOutcome =
  { variants: (string | undefined)[] } | { error: { line: number; column: number; offset: number } | null } | { problem: string };

// Loaded on first use: only the commands and routes that check SQL pay for the grammar.
let parser: ((sql: string) => unknown) | undefined;
function parseSqlite(sql: string): ParseOutcome {
  parser ??= createRequire(import.meta.url)(PARSER_MODULE) as (sql: string) => unknown;
  try {
    const ast = parser(sql) as { statement?: { variant?: string }[] } | null;
    return { variants: (ast?.statement ?? []).map((s) => s?.variant) };
  } catch (e) {
    return { error: (e as { location?: { start?: { line: number; column: number; offset: number } } }).location?.start ?? null };
  }
}

/**
 * Longest SQL accepted in one place (osquery's own queries are a few hundred characters). The
 * parser needs about 10 KB of heap a character: 16 KB of SQL is about 200 MB (issue 29: 64 KB
 * took 640 MB of the server's heap).
 */
export const SQL_MAX = 16 * 1024;

// The grammar parser is slow, about 60 µs of CPU and 10 KB of heap a character (15 ms for a
// 250-character query, about 3 s and 200 MB at SQL_MAX), and the same texts are checked again and again: every write checks its whole
// part (a `schedule add` re-checks every query already there), and `apply` checks each document
// here, then the server checks it dry and again for real. Answers are kept by text, the oldest
// dropped beyond CACHED_CHARS.
const cached = new Map<string, string | undefined>();
const CACHED_CHARS = 4 * 1024 * 1024;
let cachedChars = 0;
/** While uncheckedSql() runs: the texts asked about that the cache does not know. */
let collecting: string[] | undefined;

/** Why `sql` is not one SQLite SELECT statement, or undefined when it is. */
export function checkSql(sql: string): string | undefined {
  if (sql.trim() === '') return 'must not be empty (the SQL to run)';
  if (sql.length > SQL_MAX) return `is longer than ${SQL_MAX} characters`;
  if (cached.has(sql)) return cached.get(sql);
  if (collecting) {
    collecting.push(sql);
    return undefined;
  }
  return remember(sql, parseSqlite(sql));
}

/**
 * The texts `check` would have the parser read (not known yet), found by running it without
 * parsing anything (its result and errors are not the real ones, and are dropped). The server
 * parses them off its event loop first (sql-worker.ts); the real check then finds every answer.
 */
export function uncheckedSql(check: () => void): string[] {
  const texts: string[] = [];
  collecting = texts;
  try {
    check();
  } catch {
    // The real check, after the texts are parsed, reports it.
  } finally {
    collecting = undefined;
  }
  return [...new Set(texts)];
}

/** Keeps what the parser said of `sql` (here or in a worker) and returns the problem, if any. */
export function remember(sql: string, outcome: ParseOutcome): string | undefined {
  const problem = describe(sql, outcome);
  for (const old of cached.keys()) {
    if (cachedChars + sql.length <= CACHED_CHARS) break;
    cached.delete(old);
    cachedChars -= old.length;
  }
  cached.set(sql, problem);
  cachedChars += sql.length;
  return problem;
}

function describe(sql: string, o: ParseOutcome): string | undefined {
  if ('problem' in o) return o.problem;
  if ('error' in o) {
    const at = o.error;
    if (!at) return 'SQL syntax error';
    const near = sql
      .slice(at.offset, at.offset + 24)
      .split('\n')[0]
      .trim();
    return `SQL syntax error at line ${at.line}, column ${at.column}${near ? ` near "${near}"` : ' (at the end)'}`;
  }
  if (o.variants.length === 0) return 'must not be empty (the SQL to run)';
  if (o.variants.length > 1) return `must be one statement, not ${o.variants.length}`;
  const variant = o.variants[0];
  if (variant !== 'select' && variant !== 'compound') return `must be a SELECT statement, not ${String(variant).toUpperCase()}`;
  return undefined;
}
