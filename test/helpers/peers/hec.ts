// A stand-in for Splunk's HTTP Event Collector, written from Splunk's documented status codes
// (there is no Splunk that installs here, and no HEC receiver in any reachable registry): it is
// OUR code, so the splunk sink's tests against it show we follow that documentation, not that a
// real Splunk agrees. What it does, as Splunk documents it:
// - GET /services/collector/health: 200 {"text":"HEC is healthy","code":17}; 503 code 18 when busy.
// - POST /services/collector/event (also /services/collector): `Authorization: Splunk <token>`;
//   none: 401 code 2 "Token is required"; another scheme: 401 code 3 "Invalid authorization";
//   a wrong token: 403 code 4 "Invalid token"; an empty body: 400 code 5 "No data".
// - The body: JSON event objects back to back. Events are indexed in order until one is bad:
//   not JSON: 400 code 6 "Invalid data format"; no `event`: 400 code 12 "Event field is required";
//   an empty `event`: 400 code 13 "Event field cannot be blank"; each with "invalid-event-number"
//   (0-based), the events before it indexed.
// - Busy (a test turns it on): 503 code 9 "Server is busy"; rate limited: 429.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';

export interface HecEvent {
  time?: number;
  host?: string;
  source?: string;
  sourcetype?: string;
  index?: string;
  event: unknown;
}

export interface HecStandIn {
  url: string;
  token: string;
  /** Every indexed event, in order. */
  events: HecEvent[];
  requests: { status: number; bytes: number }[];
  /** The next n requests answer 503: event requests code 9 (busy), health checks code 18. */
  busy(n: number): void;
  /** The next n event requests answer 429. */
  throttle(n: number): void;
  /** Closes the listener (an outage); open() listens again on the same port. */
  close(): Promise<void>;
  open(): Promise<void>;
}

/** Splits concatenated JSON objects; a piece that is not an object is returned as its text. */
function splitEvents(body: string): unknown[] {
  const out: unknown[] = [];
  let depth = 0;
  let inStr = false;
  let esc = false;
  let start = -1;
  for (let i = 0; i < body.length; i++) {
    const c = body[i];
    if (inStr) {
      if (esc) esc = false;
      else if (c === '\\') esc = true;
      else if (c === '"') inStr = false;
      continue;
    }
    if (c === '"') inStr = true;
    else if (c === '{') {
      if (depth === 0) start = i;
      depth++;
    } else if (c === '}') {
      depth--;
      if (depth === 0) {
        const text = body.slice(start, i + 1);
        try {
          out.push(JSON.parse(text));
        } catch {
          out.push({ __bad: text });
        }
      }
    } else if (depth === 0 && !/\s/.test(c)) {
      out.push({ __bad: body.slice(i) });
      return out;
    }
  }
  if (depth !== 0) out.push({ __bad: body.slice(start) });
  return out;
}

export async function startHecStandIn(token = 'hec-token-00000000-0000-4000-8000-000000000001'): Promise<HecStandIn> {
  let busy = 0;
  let throttled = 0;
  const events: HecEvent[] = [];
  const requests: { status: number; bytes: number }[] = [];
  const reply = (res: ServerResponse, status: number, body: Record<string, unknown>, bytes = 0) => {
    requests.push({ status, bytes });
    res.writeHead(status, { 'content-type': 'application/json', ...(status === 503 || status === 429 ? { 'retry-after': '1' } : {}) });
    res.end(JSON.stringify(body));
  };
  const handle = (req: IncomingMessage, res: ServerResponse, raw: Buffer) => {
    const path = (req.url ?? '').split('?')[0];
    if (req.method === 'GET' && path === '/services/collector/health') {
      if (busy > 0) {
        busy--;
        return reply(res, 503, { text: 'HEC is unhealthy, queues are full', code: 18 });
      }
      return reply(res, 200, { text: 'HEC is healthy', code: 17 });
    }
    if (req.method !== 'POST' || (path !== '/services/collector/event' && path !== '/services/collector'))
      return reply(res, 404, { text: 'The requested URL was not found on this server.', code: 404 });
    const auth = req.headers.authorization;
    if (!auth) return reply(res, 401, { text: 'Token is required', code: 2 });
    const m = /^Splunk (.+)$/.exec(auth);
    if (!m) return reply(res, 401, { text: 'Invalid authorization', code: 3 });
    if (m[1] !== token) return reply(res, 403, { text: 'Invalid token', code: 4 });
    if (busy > 0) {
      busy--;
      return reply(res, 503, { text: 'Server is busy', code: 9 });
    }
    if (throttled > 0) {
      throttled--;
      return reply(res, 429, { text: 'Too many requests', code: 9 });
    }
    const body = raw.toString('utf8');
    if (body.trim() === '') return reply(res, 400, { text: 'No data', code: 5 });
    const parts = splitEvents(body);
    for (const [i, p] of parts.entries()) {
      const o = p as Record<string, unknown>;
      if ('__bad' in o) return reply(res, 400, { text: 'Invalid data format', code: 6, 'invalid-event-number': i }, raw.length);
      if (!('event' in o)) return reply(res, 400, { text: 'Event field is required', code: 12, 'invalid-event-number': i }, raw.length);
      if (o.event === '' || o.event === null)
        return reply(res, 400, { text: 'Event field cannot be blank', code: 13, 'invalid-event-number': i }, raw.length);
      events.push(o as unknown as HecEvent);
    }
    return reply(res, 200, { text: 'Success', code: 0 }, raw.length);
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => handle(req, res, Buffer.concat(chunks)));
  });
  let port = 0;
  const open = () =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.removeListener('error', reject);
        port = (server.address() as { port: number }).port;
        resolve();
      });
    });
  await open();
  return {
    url: `http://127.0.0.1:${port}`,
    token,
    events,
    requests,
    busy: (n) => (busy = n),
    throttle: (n) => (throttled = n),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
    open,
  };
}
