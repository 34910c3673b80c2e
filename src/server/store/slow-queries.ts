// The slow-query log (issue 31): with FLEETCTL_SLOW_QUERY_MS set, every statement of the server's
// query layer slower than that is written to stderr once a minute per statement text, with its
// duration and the database's plan for it (SQLite's EXPLAIN QUERY PLAN, PostgreSQL's EXPLAIN,
// with the same parameters). For an operator asking why a list is slow, and for `npm run bench`,
// which prints the plans of any figure over its goal. Off (no cost) when the variable is unset.
import type { LogEvent } from 'kysely';

/** Milliseconds from FLEETCTL_SLOW_QUERY_MS, or undefined (the log is off). */
export function slowQueryMs(env: NodeJS.ProcessEnv = process.env): number | undefined {
  const v = Number(env.FLEETCTL_SLOW_QUERY_MS);
  return env.FLEETCTL_SLOW_QUERY_MS && Number.isFinite(v) && v >= 0 ? v : undefined;
}

/** Kysely's `log` option for one database handle. `explain` returns the plan's lines for a statement. */
export function slowQueryLog(
  ms: number,
  explain: (sql: string, params: readonly unknown[]) => Promise<string[]>,
  write: (line: string) => void = (l) => process.stderr.write(`${l}\n`),
): (event: LogEvent) => void {
  const lastLogged = new Map<string, number>();
  return (event) => {
    if (event.level !== 'query' || event.queryDurationMillis < ms) return;
    const text = event.query.sql;
    // Reads only: a write's time is its locks and its disk; EXPLAIN of DDL can fail (or be the explain itself).
    if (!/^\s*(select|with)\b/i.test(text)) return;
    const now = Date.now();
    if ((lastLogged.get(text) ?? 0) > now - 60_000) return;
    if (lastLogged.size >= 1000) lastLogged.clear();
    lastLogged.set(text, now);
    // Never thrown into the statement that was logged.
    Promise.resolve()
      .then(() => explain(text, event.query.parameters))
      .then(
        (plan) =>
          write(
            JSON.stringify({
              time: new Date(now).toISOString(),
              slow_query_ms: Math.round(event.queryDurationMillis * 10) / 10,
              sql: text,
              plan,
            }),
          ),
        (e: Error) =>
          write(
            JSON.stringify({
              time: new Date(now).toISOString(),
              slow_query_ms: Math.round(event.queryDurationMillis * 10) / 10,
              sql: text,
              plan_error: e.message,
            }),
          ),
      );
  };
}
