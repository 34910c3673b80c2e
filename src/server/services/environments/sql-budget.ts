// What the SQL check may cost (issue 29). The grammar parser takes about 60 µs of CPU and 10 KB
// of heap a character (src/lib/sql-check.ts), in one worker thread all configuration writes share
// (lib/sql-worker.ts). Memory is bounded per text (SQL_MAX); the worker's time is bounded here:
// per request, the SQL it brings that was never checked (413 beyond), and per user over a window
// (429 with Retry-After beyond), counted in the database so every replica counts the same.
// Texts already checked cost nothing (their answers are kept by text).
import type { Caller, Deps } from '../../context.js';
import { HttpError, rateLimited } from '../../errors.js';
import { RateLimiter } from '../../lib/rate-limit.js';

/** New SQL one request may bring: about 15 s of the parser's time; a large pack set is well under it. */
export const SQL_CHARS_PER_REQUEST = 256 * 1024;
/** New SQL one user may bring per window: about a minute of the parser's time every 10 minutes. */
export const SQL_CHARS_PER_USER = 1024 * 1024;
export const SQL_WINDOW_MS = 10 * 60_000;

const kb = (n: number) => `${Math.ceil(n / 1024)} KB`;

/** Refuses the request (413, 429) when parsing `texts` would pass a bound; else counts them for the user. */
export async function chargeSql(deps: Deps, caller: Caller, texts: string[]): Promise<void> {
  const chars = texts.reduce((n, t) => n + t.length, 0);
  if (chars === 0) return;
  if (chars > SQL_CHARS_PER_REQUEST) {
    throw new HttpError(
      413,
      'bad_request',
      `the request brings ${kb(chars)} of SQL never checked before; one request may bring at most ${kb(SQL_CHARS_PER_REQUEST)}: send the configuration in parts`,
    );
  }
  const limiter = new RateLimiter(deps.db, 'sql', SQL_CHARS_PER_USER, SQL_WINDOW_MS, () => deps.now().getTime());
  const wait = await limiter.take(String(caller.user.id), chars);
  if (wait > 0) {
    throw rateLimited(
      wait,
      `${caller.user.username} has sent ${kb(SQL_CHARS_PER_USER)} of new SQL to check in the last ${SQL_WINDOW_MS / 60_000} minutes; try again in ${wait} s`,
    );
  }
}
