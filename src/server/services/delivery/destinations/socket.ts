// The byte streams and datagrams of the socket destinations (syslog, graylog, logstash): one
// connection kept open across batches, opened again after the peer closed it or an error, with
// a timeout on connecting and on writing. TCP and TLS have no acknowledgement of their own: a
// batch counts as taken when the kernel has accepted all of it and the peer has not closed the
// connection before (a peer that closed is noticed by reading, so the next batch reconnects
// instead of writing into a dead connection). UDP is fire and forget by nature (documented).
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { lookup } from 'node:dns/promises';
import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { SinkError } from '../sink.js';

export interface Endpoint {
  host: string;
  port: number;
}

/** host and port of a URL (a default port when it has none); brackets of IPv6 hosts removed. */
export function endpointOf(url: string, defaultPort?: number): Endpoint {
  const u = new URL(url);
  const port = u.port ? Number(u.port) : defaultPort;
  if (!port) throw new SinkError(`${url}: no port`);
  return { host: u.hostname.replace(/^\[(.*)\]$/, '$1'), port };
}

const CONNECT_TIMEOUT_MS = 10_000;
const WRITE_TIMEOUT_MS = 30_000;

/** One TCP or TLS connection, written a batch at a time. */
export class StreamWriter {
  private sock?: Socket;
  private closedByPeer = false;

  constructor(
    private readonly to: Endpoint,
    /** TLS with this CA (PEM; undefined: the system's CAs), or plain TCP when tls is false. */
    private readonly tls: false | { ca?: string },
  ) {}

  private label(): string {
    return `${this.tls ? 'tls' : 'tcp'}://${this.to.host}:${this.to.port}`;
  }

  private open(signal: AbortSignal): Promise<Socket> {
    return new Promise((resolve, reject) => {
      const { host, port } = this.to;
      const s = this.tls
        ? tlsConnect({ host, port, ca: this.tls.ca, servername: /^[\d.:]+$/.test(host) ? undefined : host })
        : netConnect({ host, port });
      const fail = (err: Error) => {
        cleanup();
        s.destroy();
        reject(new SinkError(`${this.label()}: ${(err as NodeJS.ErrnoException).code ?? err.message}`));
      };
      const timer = setTimeout(() => fail(new Error(`no connection within ${CONNECT_TIMEOUT_MS / 1000} s`)), CONNECT_TIMEOUT_MS);
      const onAbort = () => fail(new Error('aborted'));
      const cleanup = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        s.removeListener('error', fail);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      s.once('error', fail);
      s.once(this.tls ? 'secureConnect' : 'connect', () => {
        cleanup();
        this.closedByPeer = false;
        // Read (and drop) whatever the peer says, so its closing the connection is seen at once.
        s.on('data', () => {});
        s.on('end', () => (this.closedByPeer = true));
        s.on('close', () => (this.closedByPeer = true));
        s.on('error', () => (this.closedByPeer = true));
        s.setNoDelay(true);
        resolve(s);
      });
    });
  }

  /** Writes all of buf; resolves when the kernel has taken it. */
  async write(buf: Buffer, signal: AbortSignal): Promise<void> {
    if (!this.sock || this.sock.destroyed || this.closedByPeer) {
      this.sock?.destroy();
      this.sock = undefined;
      this.sock = await this.open(signal);
    }
    const s = this.sock;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => done(new Error(`write not taken within ${WRITE_TIMEOUT_MS / 1000} s`)), WRITE_TIMEOUT_MS);
      const done = (err?: Error | null) => {
        clearTimeout(timer);
        s.removeListener('error', done);
        if (!err) return resolve();
        s.destroy();
        this.sock = undefined;
        reject(new SinkError(`${this.label()}: ${(err as NodeJS.ErrnoException).code ?? err.message}`));
      };
      s.once('error', done);
      s.write(buf, (err) => done(err));
    });
    if (this.closedByPeer) {
      // The peer closed while we wrote: what it had not read is lost with the connection.
      this.sock?.destroy();
      this.sock = undefined;
      throw new SinkError(`${this.label()}: the peer closed the connection`);
    }
  }

  close(): void {
    this.sock?.end();
    this.sock = undefined;
  }
}

/** Datagrams to one address (resolved once), each send waited for. */
export class DatagramWriter {
  private sock?: UdpSocket;
  private opening?: Promise<UdpSocket>;

  constructor(private readonly to: Endpoint) {}

  private async open(): Promise<UdpSocket> {
    const { address, family } = await lookup(this.to.host);
    const s = createSocket(family === 6 ? 'udp6' : 'udp4');
    // A connected socket: the kernel reports an unreachable port (ECONNREFUSED) on later sends.
    await new Promise<void>((resolve, reject) => {
      s.once('error', reject);
      s.connect(this.to.port, address, () => {
        s.removeListener('error', reject);
        s.on('error', () => {});
        resolve();
      });
    });
    return s;
  }

  async send(datagrams: Buffer[]): Promise<void> {
    if (!this.sock) {
      this.opening ??= this.open().finally(() => (this.opening = undefined));
      this.sock = await this.opening;
    }
    const s = this.sock;
    for (const d of datagrams) {
      await new Promise<void>((resolve, reject) =>
        s.send(d, (err) => {
          if (!err) return resolve();
          s.close();
          this.sock = undefined;
          reject(new SinkError(`udp://${this.to.host}:${this.to.port}: ${(err as NodeJS.ErrnoException).code ?? err.message}`));
        }),
      );
    }
  }

  close(): void {
    try {
      this.sock?.close();
    } catch {
      /* closed */
    }
    this.sock = undefined;
  }
}

/** "1 message", "2 messages": the answers `sinks test` prints. */
export const count = (n: number, noun: string): string => `${n} ${noun}${n === 1 ? '' : 's'}`;
