// splunk: the HTTP Event Collector's event endpoint in Fleet's shape: POST
// <url>/services/collector/event, `Authorization: Splunk <token>`, a body of concatenated event
// objects {"time","host","source","sourcetype","index","event"} with the log as an object, its own
// time, host = the node's host identifier and the Splunk TA-osquery sourcetypes: osquery:results,
// osquery:snapshots (snapshot results), osquery:status (and osquery:queries for live answers).
// Requests are at most 1 MB (Fleet's limit); an event larger than that is rejected. Before the
// first request and after a failure, GET <url>/services/collector/health must answer 200.
// Splunk's documented answers: 200 code 0 acknowledges; 503 (code 9, busy) and 429 are retried
// after their Retry-After; 400 with `invalid-event-number` N means events before N were indexed,
// N is refused for good (rejected) and the rest are retried; 401/403 (token) and other errors
// keep the whole batch for a retry. There is no Splunk that installs here: this was tested against
// a stand-in written from those documented codes (test/helpers/peers/hec.ts), not a real Splunk.
import { Type } from '@sinclair/typebox';
import type { ConfigProblem, Destination, SendResult, Sink, SinkEntry } from '../sink.js';
import { SinkError } from '../sink.js';
import { urlProblem } from './http.js';
import { snippet } from './http-target.js';
import { HttpTarget } from './http-target.js';

const schema = Type.Object(
  {
    url: Type.String(),
    token: Type.Optional(Type.String()),
    index: Type.Optional(Type.String()),
    source: Type.Optional(Type.String()),
    ca: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);
type SplunkConfig = { url: string; token?: string; index?: string; source?: string; ca?: string };

/** Fleet's batch bound: a request body of at most 1 MB. */
const MAX_REQUEST = 1_000_000;

/** The sourcetype of an entry (Splunk TA-osquery's names). */
export function sourcetypeOf(e: SinkEntry): string {
  if (e.logType === 'status') return 'osquery:status';
  if (e.logType === 'query') return 'osquery:queries';
  return /"action"\s*:\s*"snapshot"/.test(e.line) || /"snapshot"\s*:\s*\[/.test(e.line) ? 'osquery:snapshots' : 'osquery:results';
}

class SplunkSink implements Sink {
  private readonly http: HttpTarget;
  private readonly base: string;
  private healthy = false;

  constructor(private readonly config: SplunkConfig) {
    this.http = new HttpTarget(config.ca);
    this.base = config.url.replace(/\/+$/, '').replace(/\/services\/collector(\/event)?$/, '');
  }

  private event(e: SinkEntry): string {
    const c = this.config;
    const meta = `"time":${e.time},"host":${JSON.stringify(e.hostIdentifier || e.hostname)},"source":${JSON.stringify(c.source ?? 'fleetctl')},"sourcetype":"${sourcetypeOf(e)}"${c.index ? `,"index":${JSON.stringify(c.index)}` : ''}`;
    const t = e.line.trimStart();
    return `{${meta},"event":${t.startsWith('{') || t.startsWith('[') ? e.line : JSON.stringify(e.line)}}`;
  }

  private async health(signal: AbortSignal): Promise<void> {
    const r = await this.http.call('GET', `${this.base}/services/collector/health`, {}, undefined, signal);
    if (r.status !== 200)
      throw new SinkError(`HEC health check: ${r.answer}`, r.status === 503 || r.status === 429 ? r.retryAfterMs : undefined);
    this.healthy = true;
  }

  async send(batch: SinkEntry[], signal: AbortSignal): Promise<SendResult> {
    if (!this.healthy) await this.health(signal);
    const rejected: NonNullable<SendResult['rejected']> = [];
    const retry: NonNullable<SendResult['retry']> = [];
    // Requests of at most MAX_REQUEST bytes, each a run of consecutive entries.
    const requests: { start: number; events: Buffer[] }[] = [];
    let size = 0;
    batch.forEach((e, index) => {
      const ev = Buffer.from(this.event(e), 'utf8');
      if (ev.length > MAX_REQUEST) {
        rejected.push({ index, error: `${ev.length} bytes: over HEC's 1 MB request bound` });
        return;
      }
      const last = requests[requests.length - 1];
      if (!last || size + ev.length > MAX_REQUEST) {
        requests.push({ start: index, events: [ev] });
        size = ev.length;
      } else {
        last.events.push(ev);
        size += ev.length;
      }
    });
    const indexesOf = (req: { start: number; events: Buffer[] }) => {
      const out: number[] = [];
      for (let i = req.start; out.length < req.events.length; i++) if (!rejected.some((r) => r.index === i)) out.push(i);
      return out;
    };
    let bytes = 0;
    let answer = '';
    for (let n = 0; n < requests.length; n++) {
      const req = requests[n];
      const idx = indexesOf(req);
      const body = Buffer.concat(req.events);
      let r;
      try {
        r = await this.http.call(
          'POST',
          `${this.base}/services/collector/event`,
          { authorization: `Splunk ${this.config.token ?? ''}`, 'content-type': 'application/json' },
          body,
          signal,
        );
      } catch (e) {
        this.healthy = false;
        if (n === 0) throw e;
        for (const q of requests.slice(n)) for (const i of indexesOf(q)) retry.push({ index: i, error: (e as Error).message });
        break;
      }
      const reply = parseReply(r.text);
      answer = r.answer;
      if (r.status === 200 && reply.code === 0) {
        bytes += body.length;
        continue;
      }
      const error = `HEC answered ${r.status}${reply.code !== undefined ? ` code ${reply.code}` : ''}: ${reply.text ?? snippet(r.text)}`;
      if (r.status === 400 && reply.invalidEvent !== undefined && reply.invalidEvent < idx.length) {
        // Events before the invalid one were indexed; the invalid one never will be.
        rejected.push({ index: idx[reply.invalidEvent], error });
        for (const i of idx.slice(reply.invalidEvent + 1)) retry.push({ index: i, error: 'after an invalid event in its request' });
      } else {
        this.healthy = false;
        if (n === 0 && requests.length === 1) throw new SinkError(error, r.status === 503 || r.status === 429 ? r.retryAfterMs : undefined);
        for (const i of idx) retry.push({ index: i, error });
      }
      for (const q of requests.slice(n + 1)) for (const i of indexesOf(q)) retry.push({ index: i, error: 'not sent after an error' });
      break;
    }
    return { bytes, answer: answer || 'no request sent', ...(retry.length ? { retry } : {}), ...(rejected.length ? { rejected } : {}) };
  }

  async close(): Promise<void> {
    await this.http.close();
  }
}

function parseReply(text: string): { code?: number; text?: string; invalidEvent?: number } {
  try {
    const j = JSON.parse(text) as { code?: unknown; text?: unknown; 'invalid-event-number'?: unknown };
    return {
      code: typeof j.code === 'number' ? j.code : undefined,
      text: typeof j.text === 'string' ? j.text : undefined,
      invalidEvent: typeof j['invalid-event-number'] === 'number' ? j['invalid-event-number'] : undefined,
    };
  } catch {
    return {};
  }
}

export const splunk: Destination<SplunkConfig> = {
  type: 'splunk',
  schema,
  secrets: ['token'],
  check(config): ConfigProblem | undefined {
    const p = urlProblem(config.url, ['http', 'https']);
    if (p) return p;
    const c = config as Record<string, unknown>;
    if (c.token === undefined && c.token_env === undefined && c.token_file === undefined)
      return { field: 'token', message: 'a HEC token is required (token, token_env or token_file)' };
    if (config.ca !== undefined && !config.url.startsWith('https:'))
      return { field: 'ca', message: 'a CA is only used with an https:// url' };
    return undefined;
  },
  batch: { maxEntries: 5000, maxBytes: 4 * 1024 * 1024 },
  open: (config) => Promise.resolve(new SplunkSink(config)),
  doc: {
    wire: "HEC `/services/collector/event`, concatenated events in Fleet's shape, sourcetypes osquery:results|snapshots|status, requests <= 1 MB, health check",
    verified: "a stand-in written from Splunk's documented HEC codes (no Splunk installs here): not verified against Splunk",
  },
};
