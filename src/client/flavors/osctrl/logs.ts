// Logs on osctrl 0.5.4 (issue 30). osctrl keeps the status and result lines of its `db` logger and
// reads them per node and per type: `GET /api/v1/logs/{status|result}/{env}/{uuid}?since=&limit=&q=`
// (newest first, at most 1000, `since` exclusive; cmd/api/handlers/logs.go). Its lines are mapped
// into this API's LogLine; what it cannot answer (a whole environment, a query or pack, --until,
// a severity, every line of a range, query reports) is refused before any request (exit 8).
// Following polls: osctrl has no long poll, so a follow request with nothing new waits a little
// (at most its `wait`) and answers empty, and the command asks again.
import { Type } from '../../../api/type.js';
import type { LogLine, LogPage, Node } from '../../../api/index.js';
import type { HttpClient } from '../../http.js';
import type { LogListQuery } from '../../resources/logs.js';
import { checkAnswer, needs } from '../../validate.js';
import { NotSupportedError } from '../index.js';
import type { OsctrlSession } from './session.js';

const seg = encodeURIComponent;
/** osctrl's largest page of lines. */
const OSCTRL_LIMIT = 1000;
/** Between two polls of a follow. */
const POLL_MS = 2000;

const RawLine = needs(
  Type.Object({ id: Type.Integer(), created_at: Type.String(), uuid: Type.String() }, { additionalProperties: true }),
  'id',
  'created_at',
);
const RawLogs = needs(Type.Object({ items: Type.Array(RawLine) }), 'items');
type Raw = Record<string, unknown> & { id: number; created_at: string; uuid: string };

/**
 * A cursor: the newest `created_at` seen, exactly as osctrl wrote it (microseconds, Go's
 * RFC 3339 with trailing zeros trimmed): its `since` is exclusive at that precision, so nothing is
 * read twice; a time cut to milliseconds would read the same lines again.
 */
interface Cursor {
  t: string;
}

/** osctrl's times in one comparable form: the fraction padded to nanoseconds. */
export function timeKey(t: string): string {
  const m = /^(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$/.exec(t);
  if (!m) return t;
  const utc = new Date(Date.parse(`${m[1]}${m[3]}`)).toISOString().slice(0, 19);
  return `${utc}.${(m[2] ?? '').padEnd(9, '0')}Z`;
}
const encode = (c: Cursor) => Buffer.from(JSON.stringify(c)).toString('base64url');
function decode(s: string | undefined): Cursor | undefined {
  if (!s) return undefined;
  try {
    const c = JSON.parse(Buffer.from(s, 'base64url').toString()) as Cursor;
    return typeof c.t === 'string' ? c : undefined;
  } catch {
    return undefined;
  }
}

const iso = (t: string) => {
  const ms = Date.parse(t);
  return Number.isNaN(ms) ? t : new Date(ms).toISOString();
};

function parseColumns(text: unknown): unknown {
  if (typeof text !== 'string') return text ?? {};
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** One osctrl row as this API's line: the entry holds what osctrl kept of what the agent sent. */
export function lineFromOsctrl(r: Raw, type: 'status' | 'result', env: string, hostname: string): LogLine {
  const entry =
    type === 'status'
      ? { severity: r.severity, filename: r.filename, line: r.line, message: r.message, version: r.version }
      : { name: r.name, action: r.action, epoch: r.epoch, counter: r.counter, columns: parseColumns(r.columns) };
  return {
    id: r.id,
    environment: typeof r.environment === 'string' && r.environment ? r.environment : env,
    node_uuid: r.uuid,
    hostname,
    log_type: type,
    ...(type === 'result' && typeof r.name === 'string' ? { name: r.name } : {}),
    received_at: iso(r.created_at),
    entry,
  };
}

const refuse = (what: string, hint?: string): never => {
  throw new NotSupportedError(what, hint);
};

export function logsResource(s: OsctrlSession) {
  const { http, base } = s;
  const read = async (
    type: 'status' | 'result',
    env: string,
    uuid: string,
    q: { since?: string; limit: number; q?: string },
  ): Promise<Raw[]> => {
    const raw = await http.request<unknown>('GET', `api/v1/logs/${type}/${seg(env)}/${seg(uuid)}`, {
      query: { since: q.since, limit: q.limit, q: q.q },
    });
    return checkAnswer<{ items: Raw[] }>(RawLogs, raw, 'logs').items;
  };

  /** Status and/or result lines of one node, newest first, up to `limit`, each with osctrl's own time. */
  const lines = async (
    env: string,
    node: Pick<Node, 'uuid' | 'hostname'>,
    q: LogListQuery,
    since: string | undefined,
    limit: number,
  ): Promise<{ line: LogLine; t: string }[]> => {
    const types: ('status' | 'result')[] = q.type ? [q.type] : ['result', 'status'];
    const all: { line: LogLine; t: string }[] = [];
    for (const ty of types)
      for (const r of await read(ty, env, node.uuid, { since, limit, q: q.q }))
        all.push({ line: lineFromOsctrl(r, ty, env, node.hostname), t: r.created_at });
    return all.sort((a, b) => (timeKey(b.t) < timeKey(a.t) ? -1 : timeKey(b.t) > timeKey(a.t) ? 1 : b.line.id - a.line.id)).slice(0, limit);
  };

  return {
    list: async (env: string, q: LogListQuery = {}): Promise<LogPage> => {
      if (!q.node) refuse('the logs of a whole environment (osctrl reads them node by node)', 'give --node HOST');
      if (q.query || q.pack) refuse('logs of one scheduled query or pack (--query, --pack)');
      if (q.until) refuse('logs up to a time (--until)');
      if (q.severity) refuse('status lines by severity (--severity)');
      if (q.order === 'asc' && !q.cursor)
        refuse('every log line of a range (--all; osctrl returns the newest 1000)', 'use --limit N (at most 1000)');
      if (q.cursor !== undefined && decode(q.cursor) === undefined) throw new Error('bad cursor for osctrl logs');
      const node = await base.nodes.get(env, q.node!);
      const limit = Math.min(q.limit ?? 100, OSCTRL_LIMIT);
      const cursor = decode(q.cursor);
      if (q.order === 'asc') {
        // Following: what came after the cursor's time, oldest first; nothing yet: wait, then say so.
        let got = await lines(env, node, q, cursor!.t, OSCTRL_LIMIT);
        if (got.length === 0 && q.wait) {
          await new Promise((r) => setTimeout(r, Math.min(POLL_MS, q.wait! * 1000)));
          got = await lines(env, node, q, cursor!.t, OSCTRL_LIMIT);
        }
        got.reverse();
        const t = got.length ? got[got.length - 1].t : cursor!.t;
        return { items: got.map((g) => g.line), next_cursor: null, follow_cursor: encode({ t }) };
      }
      // Newest first, one page: osctrl cannot page further back than its newest 1000.
      const got = await lines(env, node, q, q.since, limit);
      // Nothing yet: follow from now (osctrl compares at microseconds).
      const t = got.length ? got[0].t : new Date().toISOString();
      return { items: got.map((g) => g.line), next_cursor: null, follow_cursor: encode({ t }) };
    },
    report: () => refuse('query reports (osctrl keeps no current rows per query)'),
    reports: () => refuse('query reports (osctrl keeps no current rows per query)'),
  };
}

/** `nodes show` on osctrl: the node, with its last status warnings and errors from osctrl's status lines. */
export async function withStatusProblems(http: HttpClient, env: string, node: Node): Promise<Node> {
  try {
    const raw = await http.request<unknown>('GET', `api/v1/logs/status/${seg(env)}/${seg(node.uuid)}`, { query: { limit: OSCTRL_LIMIT } });
    const rows = checkAnswer<{ items: Raw[] }>(RawLogs, raw, 'logs').items;
    const problems = rows
      .filter((r) => Number(r.severity) >= 1)
      .slice(0, 5)
      .map((r) => lineFromOsctrl(r, 'status', env, node.hostname));
    return { ...node, status_problems: problems };
  } catch {
    return node; // osctrl without its db logger, or no permission: the node alone
  }
}
