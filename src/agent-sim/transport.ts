// The agents' HTTPS connection to the server: osquery's TLS transport in miniature. JSON bodies
// POSTed to an endpoint; gzip (Content-Encoding) when --logger_tls_compress asks for it.
// Two shapes: a small pool of keep-alive connections shared by every simulated agent (undici; the
// demo and tests: the server sees the same requests, fewer sockets), or, with `perAgent`, one
// connection per agent as a real fleet has (agent-connection.ts: osquery keeps its socket,
// --tls_session_reuse, and resumes its TLS session when the server closed it): what the load
// benchmark drives.
import { Pool, type Dispatcher } from 'undici';
import { AgentConnection } from './agent-connection.js';
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

export class Transport {
  private pool?: Pool;
  private clients = new Map<number, AgentConnection>();
  private hostHeader: string;
  private origin: string;
  private agentOptions?: Omit<import('./agent-connection.js').AgentConnectionOptions, 'localAddress'>;
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
      // One connection per agent (agent-connection.ts), each resuming its own TLS session.
      this.agentOptions = {
        host: target,
        port: o.connectPort ?? o.port,
        servername: isIp ? undefined : o.host,
        ca: o.ca,
        rejectUnauthorized: !o.insecure,
        timeoutMs: o.timeoutMs,
      };
    } else {
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

  private connection(agent: number): AgentConnection {
    let c = this.clients.get(agent);
    if (!c) {
      const localAddress = this.localAddresses.length ? this.localAddresses[agent % this.localAddresses.length] : undefined;
      this.clients.set(agent, (c = new AgentConnection({ ...this.agentOptions!, localAddress })));
    }
    return c;
  }

  /** Open connections (per-agent transport; 0 for the pool). */
  get connections(): number {
    let n = 0;
    for (const c of this.clients.values()) if (c.open) n++;
    return n;
  }

  /** POSTs `body` as JSON and returns the parsed JSON answer (an HTTP error status throws). `agent` picks its connection. */
  async post(path: string, body: unknown, gzip = false, agent = 0, onSent?: (t: number) => void, nodeKey?: string): Promise<any> {
    let payload: string | Buffer = JSON.stringify(body);
    if (gzip) payload = gzipSync(payload);
    let status: number;
    let text: string;
    if (this.pool) {
      const headers: Record<string, string> = {
        host: this.hostHeader,
        'content-type': 'application/json',
        accept: 'application/json',
        'user-agent': 'osquery/sim',
      };
      if (gzip) headers['content-encoding'] = 'gzip';
      if (nodeKey) headers.authorization = `NodeKey ${nodeKey}`;
      const res = await (this.pool as Dispatcher).request({ method: 'POST', path, headers, body: payload });
      status = res.statusCode;
      text = await res.body.text();
    } else {
      const data = typeof payload === 'string' ? Buffer.from(payload) : payload;
      const head = `POST ${path} HTTP/1.1\r\nHost: ${this.hostHeader}\r\nContent-Type: application/json\r\nAccept: application/json\r\nUser-Agent: osquery/sim\r\n${gzip ? 'Content-Encoding: gzip\r\n' : ''}${nodeKey ? `Authorization: NodeKey ${nodeKey}\r\n` : ''}Content-Length: ${data.length}\r\n\r\n`;
      const res = await this.connection(agent).request(head, data, onSent);
      status = res.status;
      text = res.body.toString('utf8');
    }
    if (status !== 200) throw new TransportError(`${path}: HTTP ${status} ${text.slice(0, 200)}`, status);
    try {
      return JSON.parse(text);
    } catch {
      throw new TransportError(`${path}: answer is not JSON: ${text.slice(0, 100)}`, status);
    }
  }

  async close(): Promise<void> {
    for (const c of this.clients.values()) c.close();
    await this.pool?.close();
  }
}
