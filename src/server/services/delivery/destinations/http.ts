// http: a JSON array of envelopes (sink.ts) per batch, sent with `method` (POST or PUT) to `url`
// with `headers`, within `timeout_seconds` (default 10). A 2xx acknowledges the batch; anything
// else (or no answer in time) is retried by the runner, after the Retry-After of a 429 or 503.
// Header values are secrets (an Authorization header is the usual way in): never shown by a
// read, and each may be given as headers_env / headers_file instead.
import { Type } from '@sinclair/typebox';
import { envelope, SinkError, type ConfigProblem, type Destination, type Sink, type SinkEntry } from '../sink.js';

const schema = Type.Object(
  {
    url: Type.String(),
    headers: Type.Optional(Type.Record(Type.String(), Type.String())),
    method: Type.Optional(Type.Union([Type.Literal('POST'), Type.Literal('PUT')])),
    timeout_seconds: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 300 })),
  },
  { additionalProperties: false },
);
/** RFC 9110's token: what a header name may be. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
type HttpConfig = { url: string; headers?: Record<string, string>; method?: 'POST' | 'PUT'; timeout_seconds?: number };

/** A URL a destination can be reached at, or the problem with it (shared by URL-keyed types). */
export function urlProblem(value: string, schemes: readonly string[], key = 'url'): ConfigProblem | undefined {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    return { field: key, message: `"${value}" is not a URL` };
  }
  const scheme = u.protocol.replace(/:$/, '');
  if (!schemes.includes(scheme)) return { field: key, message: `expected a ${schemes.map((s) => `${s}://`).join(' or ')} URL, got ${scheme}://` };
  if (!u.hostname) return { field: key, message: 'the URL has no host' };
  if (u.username || u.password) return { field: key, message: 'credentials in the URL are not accepted (they would show in every read); use the secret keys' };
  if (u.port !== '' && (Number(u.port) < 1 || Number(u.port) > 65535)) return { field: key, message: `port ${u.port} is out of range` };
  return undefined;
}

/** Milliseconds of a Retry-After header (seconds or a date), if any. */
export function retryAfterMs(value: string | null): number | undefined {
  if (!value) return undefined;
  const s = Number(value);
  if (Number.isFinite(s) && s >= 0) return Math.min(s, 300) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.min(300_000, at - Date.now()));
}

/** The first line of a body, short and printable (what the destination answered). */
export function snippet(text: string, max = 200): string {
  // eslint-disable-next-line no-control-regex
  const line = text.replace(/[\u0000-\u001f\u007f-\u009f]+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max)}...` : line;
}

class HttpSink implements Sink {
  constructor(private readonly config: HttpConfig) {}

  async send(batch: SinkEntry[], signal: AbortSignal) {
    const body = Buffer.from(`[${batch.map(envelope).join(',')}]`, 'utf8');
    const headers: Record<string, string> = { 'content-type': 'application/json', ...this.config.headers };
    const timeout = AbortSignal.timeout((this.config.timeout_seconds ?? 10) * 1000);
    let res: Response;
    try {
      res = await fetch(this.config.url, { method: this.config.method ?? 'POST', headers, body, signal: AbortSignal.any([signal, timeout]) });
    } catch (e) {
      if (timeout.aborted) throw new SinkError(`no answer from ${this.config.url} within ${this.config.timeout_seconds ?? 10} s`);
      const cause = (e as { cause?: { code?: string; message?: string } }).cause;
      throw new SinkError(`${this.config.url}: ${cause?.code ?? cause?.message ?? (e as Error).message}`);
    }
    const text = await res.text().catch(() => '');
    const answer = `HTTP ${res.status}${text ? ` ${snippet(text)}` : ''}`;
    if (!res.ok) throw new SinkError(`${this.config.url} answered ${answer}`, res.status === 429 || res.status === 503 ? retryAfterMs(res.headers.get('retry-after')) : undefined);
    return { bytes: body.length, answer };
  }

  async close(): Promise<void> {}
}

export const http: Destination<HttpConfig> = {
  type: 'http',
  schema,
  secrets: ['headers.*'],
  check(config) {
    for (const [name, value] of Object.entries(config.headers ?? {})) {
      if (!HEADER_NAME.test(name)) return { field: `headers.${name}`, message: 'not a valid HTTP header name' };
      if (/[\r\n\0]/.test(value)) return { field: `headers.${name}`, message: 'a header value cannot hold a line break or NUL' };
    }
    return urlProblem(config.url, ['http', 'https']);
  },
  batch: { maxEntries: 1000, maxBytes: 1024 * 1024 },
  open: (config) => Promise.resolve(new HttpSink(config)),
  doc: { wire: 'a JSON array of envelopes per request (POST or PUT), 2xx acknowledges', verified: 'our own tests (a Node HTTP server)' },
};
