// One simulated agent's own TLS connection (the load benchmark's transport, issue 21): HTTP/1.1
// requests one at a time on a socket kept open between them, as osquery keeps its socket
// (--tls_session_reuse), reconnecting with its TLS session resumed after the server closed it.
//
// Written for the job rather than taken from undici: the benchmark's driver processes share the
// machine's cores with the server they measure, and undici's per-request machinery cost them about
// as much CPU per request as the server spends answering it, which capped what two server
// processes could be shown to carry. This does what an osquery agent does and nothing else:
// POST a JSON body with Content-Length, read a response with Content-Length (the agent door always
// sends one), honour Connection: close and the server's Keep-Alive timeout.
import { connect, type TLSSocket } from 'node:tls';

export interface AgentConnectionOptions {
  host: string;
  port: number;
  /** SNI and certificate name (undefined for an address). */
  servername?: string;
  ca?: string | Buffer;
  rejectUnauthorized: boolean;
  localAddress?: string;
  timeoutMs: number;
}

export interface RawResponse {
  status: number;
  body: Buffer;
}

interface Waiting {
  resolve: (r: RawResponse) => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout;
  /** The socket the request went out on: only its data, errors and close concern it. */
  socket: TLSSocket;
}

const CRLF2 = Buffer.from('\r\n\r\n');

export class AgentConnection {
  private socket?: TLSSocket;
  private session?: Buffer;
  private waiting?: Waiting;
  private buf: Buffer = Buffer.alloc(0);
  /** When the socket was last idle, and how long the server keeps an idle one (its Keep-Alive hint). */
  private idleSince = 0;
  private keepAliveMs = 5_000;
  private closeAfter = false;

  constructor(private readonly o: AgentConnectionOptions) {}

  get open(): boolean {
    return !!this.socket && !this.socket.destroyed;
  }

  /** Requests waiting for the one in progress (an agent's config, log and distributed loops may overlap). */
  private queue: (() => void)[] = [];
  private busy = false;

  /**
   * Sends `head` (request line and headers, ending in a blank line) and `body`, after the requests
   * before it on this connection; resolves with the answer. `onSent` gets the moment it was
   * written (latency from there leaves out the wait behind the agent's own earlier request).
   */
  async request(head: string, body: Buffer, onSent?: (t: number) => void): Promise<RawResponse> {
    if (this.busy) await new Promise<void>((r) => this.queue.push(r));
    this.busy = true;
    try {
      return await this.send(head, body, onSent);
    } finally {
      this.busy = false;
      this.queue.shift()?.();
    }
  }

  private async send(head: string, body: Buffer, onSent?: (t: number) => void): Promise<RawResponse> {
    // The server closes an idle connection after its keep-alive: do not race it with a request.
    if (this.socket && Date.now() - this.idleSince > this.keepAliveMs - 1000) this.drop();
    const socket = this.socket && !this.socket.destroyed ? this.socket : await this.connect();
    return new Promise<RawResponse>((resolve, reject) => {
      const timer = setTimeout(() => this.fail(new Error(`no answer within ${this.o.timeoutMs} ms`)), this.o.timeoutMs);
      this.waiting = { resolve, reject, timer, socket };
      this.buf = Buffer.alloc(0);
      onSent?.(performance.now());
      socket.write(head);
      socket.write(body);
    });
  }

  private connect(): Promise<TLSSocket> {
    return new Promise((resolve, reject) => {
      // localAddress reaches net.connect underneath (not in tls.ConnectionOptions' type).
      const s = connect({
        host: this.o.host,
        port: this.o.port,
        servername: this.o.servername,
        ca: this.o.ca,
        rejectUnauthorized: this.o.rejectUnauthorized,
        session: this.session,
        ...({ localAddress: this.o.localAddress } as object),
      });
      const onError = (e: Error) => {
        s.destroy();
        reject(e);
      };
      s.once('error', onError);
      s.once('secureConnect', () => {
        s.off('error', onError);
        s.setNoDelay(true);
        s.on('session', (session: Buffer) => (this.session = session));
        s.on('data', (d: Buffer) => this.onData(s, d));
        s.on('error', (e) => this.waiting?.socket === s && this.fail(e));
        s.on('close', () => {
          if (this.socket === s) this.socket = undefined;
          if (this.waiting?.socket === s) this.fail(new Error('the server closed the connection'));
        });
        this.socket = s;
        resolve(s);
      });
    });
  }

  private onData(s: TLSSocket, d: Buffer): void {
    if (this.waiting?.socket !== s) return;
    this.buf = this.buf.length ? Buffer.concat([this.buf, d]) : d;
    const end = this.buf.indexOf(CRLF2);
    if (end < 0) return;
    const head = this.buf.toString('latin1', 0, end);
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1] ?? 0);
    const length = Number(/\r\ncontent-length:\s*(\d+)/i.exec(head)?.[1] ?? NaN);
    if (!Number.isFinite(length)) return this.fail(new Error('an answer without Content-Length'));
    if (this.buf.length < end + 4 + length) return;
    const hint = /\r\nkeep-alive:\s*timeout=(\d+)/i.exec(head);
    if (hint) this.keepAliveMs = Number(hint[1]) * 1000;
    this.closeAfter = /\r\nconnection:\s*close/i.test(head);
    const w = this.waiting;
    this.waiting = undefined;
    clearTimeout(w.timer);
    const body = this.buf.subarray(end + 4, end + 4 + length);
    this.buf = Buffer.alloc(0);
    this.idleSince = Date.now();
    if (this.closeAfter) this.drop();
    w.resolve({ status, body });
  }

  private fail(e: Error): void {
    const w = this.waiting;
    if (!w) return;
    this.waiting = undefined;
    clearTimeout(w.timer);
    this.drop();
    w.reject(e);
  }

  private drop(): void {
    const s = this.socket;
    this.socket = undefined;
    s?.destroy();
  }

  close(): void {
    this.fail(new Error('closed'));
    this.drop();
  }
}
