// http: a JSON array of envelopes (sink.ts) per batch, sent with `method` (POST or PUT) to `url`
// with `headers`, within `timeout_seconds` (default 10), trusting `ca` (PEM) for an https url of
// a private CA, over the HTTP client every HTTP-speaking type shares (http-target.ts). A 2xx
// acknowledges the batch; anything else (or no answer in time) is retried by the runner, after
// the Retry-After of a 429 or 503. Header values are secrets (an Authorization header is the
// usual way in): never shown by a read, and each may be given as headers_env / headers_file.
import { Type } from '@sinclair/typebox';
import { envelope, SinkError, type ConfigProblem, type Destination, type Sink, type SinkEntry } from '../sink.js';
import { HttpTarget } from './http-target.js';

const schema = Type.Object(
  {
    url: Type.String(),
    headers: Type.Optional(Type.Record(Type.String(), Type.String())),
    method: Type.Optional(Type.Union([Type.Literal('POST'), Type.Literal('PUT')])),
    timeout_seconds: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 300 })),
    ca: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);
/** RFC 9110's token: what a header name may be. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
type HttpConfig = { url: string; headers?: Record<string, string>; method?: 'POST' | 'PUT'; timeout_seconds?: number; ca?: string };

/** A URL a destination can be reached at, or the problem with it (shared by URL-keyed types). */
export function urlProblem(value: string, schemes: readonly string[], key = 'url'): ConfigProblem | undefined {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    return { field: key, message: `"${value}" is not a URL` };
  }
  const scheme = u.protocol.replace(/:$/, '');
  if (!schemes.includes(scheme))
    return { field: key, message: `expected a ${schemes.map((s) => `${s}://`).join(' or ')} URL, got ${scheme}://` };
  if (!u.hostname) return { field: key, message: 'the URL has no host' };
  if (u.username || u.password)
    return { field: key, message: 'credentials in the URL are not accepted (they would show in every read); use the secret keys' };
  if (u.port !== '' && (Number(u.port) < 1 || Number(u.port) > 65535)) return { field: key, message: `port ${u.port} is out of range` };
  return undefined;
}

class HttpSink implements Sink {
  private readonly target: HttpTarget;

  constructor(private readonly config: HttpConfig) {
    this.target = new HttpTarget(config.ca, (config.timeout_seconds ?? 10) * 1000);
  }

  async send(batch: SinkEntry[], signal: AbortSignal) {
    const body = Buffer.from(`[${batch.map(envelope).join(',')}]`, 'utf8');
    const headers: Record<string, string> = { 'content-type': 'application/json', ...this.config.headers };
    const res = await this.target.call(this.config.method ?? 'POST', this.config.url, headers, body, signal);
    if (res.status < 200 || res.status > 299)
      throw new SinkError(
        `${this.config.url} answered ${res.answer}`,
        res.status === 429 || res.status === 503 ? res.retryAfterMs : undefined,
      );
    return { bytes: body.length, answer: res.answer };
  }

  close(): Promise<void> {
    return this.target.close();
  }
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
    if (config.ca !== undefined && !config.url.startsWith('https:'))
      return { field: 'ca', message: 'a CA is only used with an https:// url' };
    if (config.ca !== undefined && !/-----BEGIN CERTIFICATE-----/.test(config.ca))
      return { field: 'ca', message: 'expected PEM certificates (-----BEGIN CERTIFICATE-----)' };
    return urlProblem(config.url, ['http', 'https']);
  },
  batch: { maxEntries: 1000, maxBytes: 1024 * 1024 },
  open: (config) => Promise.resolve(new HttpSink(config)),
  doc: {
    wire: 'a JSON array of envelopes per request (POST or PUT), 2xx acknowledges',
    verified: 'our own tests (a Node HTTP and HTTPS server with a private CA)',
  },
};
