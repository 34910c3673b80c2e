// The HTTP requests of the HTTP-speaking destinations (elastic, splunk, graylog and logstash over
// HTTP): undici's request on a keep-alive connection pool of the sink's own, trusting the sink's
// `ca` (PEM) when it has one, with a timeout; transport failures become a retryable SinkError.
import { Agent, request } from 'undici';
import { SinkError } from '../sink.js';

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

export interface HttpAnswer {
  status: number;
  text: string;
  /** Retry-After in ms (of a 429 or 503), if given. */
  retryAfterMs?: number;
  /** `HTTP <status> <first line of the body>`, what `sinks test` prints. */
  answer: string;
}

export class HttpTarget {
  private readonly agent: Agent;

  constructor(
    ca: string | undefined,
    private readonly timeoutMs = 30_000,
  ) {
    this.agent = new Agent({ connect: ca ? { ca } : {}, keepAliveTimeout: 30_000, connections: 8 });
  }

  async call(
    method: 'GET' | 'POST' | 'PUT',
    url: string,
    headers: Record<string, string>,
    body: Buffer | string | undefined,
    signal: AbortSignal,
  ): Promise<HttpAnswer> {
    const timeout = AbortSignal.timeout(this.timeoutMs);
    try {
      const res = await request(url, { method, headers, body, dispatcher: this.agent, signal: AbortSignal.any([signal, timeout]) });
      const text = await res.body.text();
      const ra = res.headers['retry-after'];
      return {
        status: res.statusCode,
        text,
        retryAfterMs: retryAfterMs(typeof ra === 'string' ? ra : null),
        answer: `HTTP ${res.statusCode}${text ? ` ${snippet(text)}` : ''}`,
      };
    } catch (e) {
      if (timeout.aborted) throw new SinkError(`${url}: no answer within ${this.timeoutMs / 1000} s`);
      const err = e as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException };
      const cause = err.cause ?? err;
      // The code, and what it means when that says more (a TLS failure: "self-signed certificate").
      const code = cause.code ?? '';
      throw new SinkError(
        `${url}: ${code && cause.message && !cause.message.includes(code) ? `${code} (${cause.message})` : cause.message || code}`,
      );
    }
  }

  async close(): Promise<void> {
    await this.agent.close().catch(() => {});
  }
}
