// `fleetctl logs` (issue 30): what agents sent, at the terminal and in pipes. The newest lines
// (printed oldest first, like `tail`), every line of a time range (--all, streamed), and --follow:
// the server holds each request until new lines arrive (long polling), and a lost connection is
// retried from the same cursor until Ctrl-C, so no line is printed twice or skipped.
import type { Context } from '../../context.js';
import type { FleetApi } from '../../client/index.js';
import type { LogListQuery } from '../../client/resources/logs.js';
import type { LogLine, LogLineType, StatusSeverity } from '../../api/index.js';
import { LOG_PAGE_MAX } from '../../api/constants.js';
import { ApiError, NetworkError, UsageError, mapError } from '../../errors.js';
import { createListWriter, evalJq, selectFields, setTimeStyle, validateFields, type OutputOptions } from '../../output/index.js';
import { safeText } from '../../output/sanitize.js';
import { parseTimeArg } from '../../lib/time-arg.js';
import { LOG_COLUMNS, logRows } from './rows.js';

export interface LogsOpts {
  type?: LogLineType;
  query?: string;
  pack?: string;
  node?: string;
  since?: string;
  until?: string;
  severity?: StatusSeverity;
  search?: string;
  limit?: number;
  all?: boolean;
  follow?: boolean;
}

/** Lines shown without --limit: a screenful of history, and fewer before following (as `tail -f`). */
export const DEFAULT_LINES = 100;
export const FOLLOW_BACKLOG = 10;
/** A lost follow is retried after 1 s, doubling up to this. */
const RECONNECT_MAX_MS = 30_000;
/** How long the server may hold a follow request, at most: the client's timeout must outlast it. */
const FOLLOW_WAIT_S = 25;

/** The filters of the request, checked before anything is sent (exit 2). */
export function logFilters(o: LogsOpts, now = new Date()): Omit<LogListQuery, 'order' | 'cursor' | 'limit' | 'wait'> {
  if (o.severity && o.type === 'result') throw new UsageError('--severity is about status lines: it cannot go with --type result');
  if ((o.query || o.pack) && o.type === 'status')
    throw new UsageError('status lines belong to no query: --query and --pack go with results');
  if ((o.query || o.pack) && o.severity)
    throw new UsageError('--severity is about status lines, --query/--pack about results: give one kind');
  if (o.follow && o.until) throw new UsageError('--follow prints lines as they arrive: it cannot end at --until');
  if (o.follow && o.all) throw new UsageError('--follow starts with the newest lines (--limit N of them): --all cannot go with it');
  const since = o.since === undefined ? undefined : parseTimeArg(o.since, '--since', now);
  const until = o.until === undefined ? undefined : parseTimeArg(o.until, '--until', now);
  if (since && until && since >= until) throw new UsageError(`--since (${since}) must be before --until (${until})`);
  const type = o.severity ? 'status' : o.query || o.pack ? 'result' : o.type;
  return { type, query: o.query, pack: o.pack, node: o.node, since, until, severity: o.severity, q: o.search };
}

interface Printer {
  print(lines: LogLine[]): Promise<void>;
  end(): Promise<void>;
  readonly count: number;
}

/**
 * Machine formats carry the API's lines; table and csv one line per row. Piped without -o, JSON
 * lines (the rule for logs: a pipe gets one object a line, ready for jq). A stream
 * (--follow) never closes a JSON array: json becomes JSON lines, yaml is refused, --jq runs per line.
 */
async function printer(ctx: Context, follow: boolean): Promise<Printer> {
  const base = ctx.output();
  const explicit = ctx.globals.output !== undefined || ctx.globals.json === true;
  let out: OutputOptions = !explicit && !ctx.io.stdoutIsTTY && base.jq === undefined ? { ...base, format: 'jsonl' } : base;
  if (follow && out.format === 'yaml' && out.jq === undefined)
    throw new UsageError('--follow prints a stream: use -o jsonl, json (printed as jsonl), csv or table');
  if (follow && out.format === 'json') out = { ...out, format: 'jsonl' };
  // Logs read by the clock: "3 minutes ago" on every line of a burst says little.
  if (!ctx.globals.time) setTimeStyle('local');
  const data = out.jq !== undefined || out.format === 'json' || out.format === 'jsonl' || out.format === 'yaml';
  if (data) {
    const schema = (await import('../../api/index.js')).LogLine;
    out = { ...out, schema };
    if (out.fields) validateFields(out.fields, undefined, [], schema);
    if (follow && out.jq !== undefined) {
      const jq = out.jq;
      let count = 0;
      return {
        get count() {
          return count;
        },
        async print(lines) {
          for (const l of lines) {
            const text = await evalJq(out.fields ? selectFields(l, out.fields, []) : l, jq);
            if (text) ctx.io.out(text);
            count++;
          }
        },
        end: () => Promise.resolve(),
      };
    }
    const w = createListWriter<LogLine>(ctx.io, out, []);
    return {
      get count() {
        return w.count;
      },
      print: (lines) => w.write(lines),
      end: () => w.end(),
    };
  }
  // The NODE and QUERY columns are identifiers (never cut); ROW takes what the terminal has left.
  const w = createListWriter(ctx.io, out, LOG_COLUMNS, { stream: true });
  let count = 0;
  return {
    get count() {
      return count;
    },
    async print(lines) {
      count += lines.length;
      await w.write(lines.flatMap(logRows));
    },
    end: () => w.end(),
  };
}

/** The newest `n` matching lines, oldest first (newest-first pages read until there are n). */
async function newest(api: FleetApi, env: string, q: LogListQuery, n: number): Promise<{ lines: LogLine[]; followCursor: string }> {
  const lines: LogLine[] = [];
  let cursor: string | undefined;
  let followCursor: string | undefined;
  do {
    const page = await api.logs.list(env, { ...q, order: 'desc', limit: Math.min(LOG_PAGE_MAX, n - lines.length), cursor });
    followCursor ??= page.follow_cursor;
    lines.push(...page.items.slice(0, n - lines.length));
    cursor = page.next_cursor ?? undefined;
  } while (cursor && lines.length < n);
  return { lines: lines.reverse(), followCursor: followCursor };
}

/** Errors a follow outlives: the server restarting, a network blip, a load balancer's 502. */
function transient(e: unknown): boolean {
  if (e instanceof NetworkError) return true;
  return e instanceof ApiError && (e.status === 429 || e.status >= 500);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function followLines(ctx: Context, api: FleetApi, env: string, q: LogListQuery, cursor: string, p: Printer): Promise<never> {
  const wait = Math.max(1, Math.min(FOLLOW_WAIT_S, Math.floor(ctx.timeoutMs() / 1000) - 5));
  let delay = 1000;
  let lost = false;
  for (;;) {
    let page;
    try {
      page = await api.logs.list(env, { ...q, order: 'asc', cursor, limit: LOG_PAGE_MAX, wait });
    } catch (e) {
      if (!transient(e)) throw e;
      ctx.io.err(`${lost ? '' : 'connection lost: '}${safeText(mapError(e).message)}; reconnecting in ${Math.round(delay / 1000)} s\n`);
      lost = true;
      await sleep(delay);
      delay = Math.min(delay * 2, RECONNECT_MAX_MS);
      continue;
    }
    if (lost) ctx.io.err('reconnected\n');
    lost = false;
    delay = 1000;
    await p.print(page.items);
    cursor = page.follow_cursor;
  }
}

export async function runLogs(ctx: Context, o: LogsOpts): Promise<void> {
  const filters = logFilters(o);
  const env = ctx.requireEnv();
  const api = await ctx.api();
  const p = await printer(ctx, o.follow === true);
  const human = ctx.io.stdoutIsTTY && !ctx.wantsData();
  let followCursor: string;
  if (o.all) {
    // Every line of the range, oldest first, a page at a time (memory stays flat).
    let cursor: string | undefined;
    do {
      const page = await api.logs.list(env, { ...filters, order: 'asc', limit: LOG_PAGE_MAX, cursor });
      await p.print(page.items);
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
    followCursor = '';
  } else {
    const got = await newest(api, env, filters, o.limit ?? (o.follow ? FOLLOW_BACKLOG : DEFAULT_LINES));
    await p.print(got.lines);
    followCursor = got.followCursor;
  }
  if (o.follow) {
    if (ctx.io.stderr.isTTY) ctx.io.err(`Following new lines in ${safeText(env)}; Ctrl-C to stop.\n`);
    await followLines(ctx, api, env, filters, followCursor, p);
  }
  await p.end();
  if (p.count === 0 && human)
    ctx.io.err(`No log lines in ${safeText(env)}${Object.values(filters).some((v) => v !== undefined) ? ' match' : ''}.\n`);
}
