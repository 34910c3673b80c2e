// The agents' HTTPS connection to the server: osquery's TLS transport in miniature. JSON bodies
// POSTed to an endpoint; gzip (Content-Encoding) when --logger_tls_compress asks for it.
// Two shapes: a small pool of keep-alive connections shared by every simulated agent (the demo
// and tests: the server sees the same requests, fewer sockets), or, with `perAgent`, one
// connection per agent as a real fleet has (osquery keeps its socket, --tls_session_reuse, and
// resumes its TLS session when the server closed it): what the load benchmark drives.
import { Client, Pool, buildConnector, type Dispatcher } from 'undici';
import { gzipSync } from 'node:zlib';

export interface TransportOptions {
  host: string;
  port: number;
  /** Connect here instead of host:port (the name is still sent as SNI and Host). */
  connectHost?: string;
  connectPort?: number;
  ca?: string | Buffer;
  insecure?: boolean;
  /** Connections of the shared pool (ignored with perAgent). */
  connections: number;
  timeoutMs: number;
  /** One keep-alive connection per agent instead of the shared pool. */
  perAgent?: boolean;
  /**
   * Source addresses for per-agent connections, taken in turn (loopback has all of 127/8): one
   * address has about 28,000 ephemeral ports towards one server port, a fleet needs more.
   */
  localAddresses?: string[];
}

export class TransportError extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

/** How long an agent keeps an idle connection (osquery: --tls_session_timeout, 3600 s); the server's Keep-Alive hint wins when shorter. */
const AGENT_KEEPALIVE_MS = 3600_000;

export class Transport {
  private pool?: Pool;
  private clients = new Map<number, Client>();
  private hostHeader: string;
  private origin: string;
  private clientOptions: Client.Options;
  private localAddresses: string[];

  constructor(o: TransportOptions) {
    const name = o.host.includes(':') ? `[${o.host}]` : o.host;
    const target = o.connectHost ?? o.host;
    this.origin = `https://${target.includes(':') ? `[${target}]` : target}:${o.connectPort ?? o.port}`;
    this.hostHeader = o.port === 443 ? name : `${name}:${o.port}`;
    const isIp = /^[\d.]+$|:/.test(o.host);
    const tls = { ca: o.ca, rejectUnauthorized: !o.insecure, servername: isIp ? undefined : o.host };
    this.localAddresses = o.localAddresses ?? [];
    if (o.perAgent) {
      // One connector for every agent's connection: its TLS session cache lets an agent whose
      // connection the server closed resume its session (an abbreviated handshake), as osquery does.
      this.clientOptions = {
        pipelining: 1,
        keepAliveTimeout: AGENT_KEEPALIVE_MS,
        keepAliveMaxTimeout: AGENT_KEEPALIVE_MS,
        headersTimeout: o.timeoutMs,
        bodyTimeout: o.timeoutMs,
        connect: buildConnector({ ...tls, maxCachedSessions: 1000 }),
      };
    } else {
      this.clientOptions = {};
      this.pool = new Pool(this.origin, {
        connections: o.connections,
        pipelining: 1,
        keepAliveTimeout: 30_000,
        headersTimeout: o.timeoutMs,
        bodyTimeout: o.timeoutMs,
        connect: tls,
      });
    }
  }

  private dispatcher(agent: number): Dispatcher {
    if (this.pool) return this.pool;
    let c = this.clients.get(agent);
    if (!c) {
      const local = this.localAddresses.length ? { localAddress: this.localAddresses[agent % this.localAddresses.length] } : {};
      this.clients.set(agent, (c = new Client(this.origin, { ...this.clientOptions, ...local })));
    }
    return c;
  }

  /** Open connections (per-agent transport; the pool's size otherwise). */
  get connections(): number {
    return this.pool ? 0 : this.clients.size;
  }

  /** POSTs `body` as JSON and returns the parsed JSON answer (an HTTP error status throws). `agent` picks its connection. */
  async post(path: string, body: unknown, gzip = false, agent = 0): Promise<any> {
    let payload: string | Buffer = JSON.stringify(body);
    const headers: Record<string, string> = { host: this.hostHeader, 'content-type': 'application/json', accept: 'application/json', 'user-agent': 'osquery/sim' };
    if (gzip) {
      payload = gzipSync(payload);
      headers['content-encoding'] = 'gzip';
    }
    const res = await this.dispatcher(agent).request({ method: 'POST', path, headers, body: payload });
    const text = await res.body.text();
    if (res.statusCode !== 200) throw new TransportError(`${path}: HTTP ${res.statusCode} ${text.slice(0, 200)}`, res.statusCode);
    try {
      return JSON.parse(text);
    } catch {
      throw new TransportError(`${path}: answer is not JSON: ${text.slice(0, 100)}`, res.statusCode);
    }
  }

  async close(): Promise<void> {
    await Promise.all([this.pool?.close(), ...[...this.clients.values()].map((c) => c.close())]);
  }
}
