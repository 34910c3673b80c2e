// The agents' HTTPS connection to the server: osquery's TLS transport in miniature. JSON bodies
// POSTed to an endpoint; gzip (Content-Encoding) when --logger_tls_compress asks for it.
// Simulated agents share a small pool of keep-alive connections (a real fleet has one
// connection per agent; the server sees the same requests, fewer handshakes).
import { Pool } from 'undici';
import { gzipSync } from 'node:zlib';

export interface TransportOptions {
  host: string;
  port: number;
  /** Connect here instead of host:port (the name is still sent as SNI and Host). */
  connectHost?: string;
  connectPort?: number;
  ca?: string | Buffer;
  insecure?: boolean;
  connections: number;
  timeoutMs: number;
}

export class TransportError extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

export class Transport {
  private pool: Pool;
  private hostHeader: string;

  constructor(o: TransportOptions) {
    const name = o.host.includes(':') ? `[${o.host}]` : o.host;
    const target = o.connectHost ?? o.host;
    const origin = `https://${target.includes(':') ? `[${target}]` : target}:${o.connectPort ?? o.port}`;
    this.hostHeader = o.port === 443 ? name : `${name}:${o.port}`;
    const isIp = /^[\d.]+$|:/.test(o.host);
    this.pool = new Pool(origin, {
      connections: o.connections,
      pipelining: 1,
      keepAliveTimeout: 30_000,
      headersTimeout: o.timeoutMs,
      bodyTimeout: o.timeoutMs,
      connect: { ca: o.ca, rejectUnauthorized: !o.insecure, servername: isIp ? undefined : o.host },
    });
  }

  /** POSTs `body` as JSON and returns the parsed JSON answer (an HTTP error status throws). */
  async post(path: string, body: unknown, gzip = false): Promise<any> {
    let payload: string | Buffer = JSON.stringify(body);
    const headers: Record<string, string> = { host: this.hostHeader, 'content-type': 'application/json', accept: 'application/json', 'user-agent': 'osquery/sim' };
    if (gzip) {
      payload = gzipSync(payload);
      headers['content-encoding'] = 'gzip';
    }
    const res = await this.pool.request({ method: 'POST', path, headers, body: payload });
    const text = await res.body.text();
    if (res.statusCode !== 200) throw new TransportError(`${path}: HTTP ${res.statusCode} ${text.slice(0, 200)}`, res.statusCode);
    try {
      return JSON.parse(text);
    } catch {
      throw new TransportError(`${path}: answer is not JSON: ${text.slice(0, 100)}`, res.statusCode);
    }
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}
