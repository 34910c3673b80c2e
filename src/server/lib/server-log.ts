// What the server says about itself, in one place (issue 27). With --log every line on stderr is
// one JSON object of one shape: the requests of both doors and the server's own events (start,
// warnings, faults, reloads, purges), `{"time", "level", "event", "msg", ...}`; a stack trace is a
// field of its line, never lines of its own. Without --log, events are lines of text and requests
// are not logged. Secrets never reach it: request lines carry route patterns and endpoint kinds,
// never paths with secrets, bodies, node keys or tokens.

export type LogLevel = 'info' | 'warn' | 'error';

export interface RequestLine {
  door: 'admin' | 'agent';
  status: number;
  ms: number;
  /** Admin door: the method and route pattern (e.g. /api/v1/nodes/:env), the path without its query, the user. */
  method?: string;
  route?: string;
  path?: string;
  user?: string;
  ip?: string;
  /** Agent door: the endpoint's kind (enroll, config, log, read, write, carve_init, carve_block, script) and the node's UUID. */
  endpoint?: string;
  node?: string;
}

export interface ServerLog {
  /** JSON lines (--log), or text. */
  readonly json: boolean;
  /** A server event. `fields` add to the JSON object; in text, `stack` follows the message. */
  event(level: LogLevel, event: string, msg: string, fields?: Record<string, unknown>): void;
  /** A request answered (--log only). */
  request(r: RequestLine): void;
}

/** Keys of the line itself, which fields may not replace. */
const RESERVED = new Set(['time', 'level', 'event', 'msg']);

export function serverLog(o: { json: boolean; write?: (text: string) => void; now?: () => Date }): ServerLog {
  const write = o.write ?? ((text: string) => void process.stderr.write(text));
  const now = o.now ?? (() => new Date());
  const line = (level: LogLevel, event: string, msg: string, fields: Record<string, unknown> = {}) => {
    const extra = Object.fromEntries(Object.entries(fields).filter(([k, v]) => !RESERVED.has(k) && v !== undefined));
    write(`${JSON.stringify({ time: now().toISOString(), level, event, msg, ...extra })}\n`);
  };
  return {
    json: o.json,
    event(level, event, msg, fields) {
      if (o.json) return line(level, event, msg, fields);
      const stack = typeof fields?.stack === 'string' ? `\n${fields.stack}` : '';
      write(`${msg}${stack}\n`);
    },
    request(r) {
      if (!o.json) return;
      const ms = Math.round(r.ms * 10) / 10;
      const what = r.door === 'admin' ? `${r.method} ${r.route ?? r.path}` : r.endpoint;
      line(r.status >= 500 ? 'error' : 'info', 'request', `${r.door} ${what} ${r.status}`, { ...r, ms });
    },
  };
}

/** Tests and embedders that want nothing said. */
export const silentLog: ServerLog = { json: false, event() {}, request() {} };
