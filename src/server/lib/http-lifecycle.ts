// The HTTP connections of the server, from accept to shutdown. Node's own http.Server.close()
// drops idle kept-alive connections at once (a request the client sends on one at that moment
// meets a reset) and stops enforcing the request/headers timeouts (stalled clients then hold
// the process forever). So shutdown is done here: stop accepting, let requests in progress
// finish for a bounded grace, answer whatever arrives meanwhile 503 with Retry-After, then
// answer what is left 503 and close. Malformed and timed-out requests get `{code, error}` too.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Server as NetServer, type Socket } from 'node:net';
import type { ServerTimeouts } from '../context.js';

export const RETRY_AFTER_SECONDS = 5;
const SHUTDOWN_MESSAGE = 'the server is shutting down; retry shortly';
/** How long sockets get to close by themselves once answered, before they are destroyed. */
const LINGER_MS = 1_000;

function jsonBody(code: string, error: string): string {
  return JSON.stringify({ code, error });
}

/** A whole HTTP response written on a raw socket (no request object to answer through). */
function rawResponse(status: number, reason: string, body: string, headers: Record<string, string> = {}): string {
  const extra = Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  return (
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
    `${extra}Connection: close\r\n\r\n${body}`
  );
}

export class HttpLifecycle {
  /** Set when shutdown starts: new requests are answered 503 and connections are not kept. */
  closing = false;
  /** Open connections and the response each is writing (undefined: idle or still reading headers). */
  private readonly sockets = new Map<Socket, ServerResponse | undefined>();
  /** Raw TCP sockets (for HTTPS, also those still in the TLS handshake). */
  private readonly raw = new Set<Socket>();
  private onIdle?: () => void;

  constructor(readonly timeouts: ServerTimeouts) {}

  /** Node http server options enforcing the timeouts (checked every second, not Node's 30 s). */
  serverOptions() {
    return { requestTimeout: this.timeouts.requestMs, headersTimeout: this.timeouts.headersMs, connectionsCheckingInterval: 1_000 };
  }

  attach(server: Server): void {
    server.on('connection', (s: Socket) => {
      this.raw.add(s);
      s.once('close', () => this.raw.delete(s));
    });
    const track = (s: Socket) => {
      this.sockets.set(s, undefined);
      s.once('close', () => {
        this.sockets.delete(s);
        this.checkIdle();
      });
    };
    // Requests see the TLS socket on HTTPS, the TCP socket on HTTP.
    server.on('setSecureContext' in server ? 'secureConnection' : 'connection', track);
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      this.sockets.set(req.socket, res);
      res.once('close', () => {
        if (this.sockets.get(req.socket) === res) this.sockets.set(req.socket, undefined);
        this.checkIdle();
      });
    });
    // `Expect:` other than 100-continue: Node would answer a bare 417.
    server.on('checkExpectation', (_req: IncomingMessage, res: ServerResponse) => {
      const body = jsonBody('bad_request', 'unsupported Expect header (only 100-continue)');
      res.writeHead(400, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), connection: 'close' }).end(body);
    });
  }

  /** Node's clientError: malformed HTTP, headers too large, or a request that did not arrive in time. */
  clientError = (err: NodeJS.ErrnoException, socket: Socket): void => {
    if (err.code === 'ECONNRESET' || !socket.writable || this.sockets.get(socket)?.headersSent) return void socket.destroy();
    let message = 'malformed HTTP request';
    if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
      message = `request not received in time (headers within ${this.timeouts.headersMs / 1000} s, whole request within ${this.timeouts.requestMs / 1000} s)`;
    } else if (err.code === 'HPE_HEADER_OVERFLOW') message = 'request headers too large';
    socket.end(rawResponse(400, 'Bad Request', jsonBody('bad_request', message)));
    setTimeout(() => socket.destroy(), LINGER_MS).unref();
  };

  /** The 503 of a request that reaches a closing server. */
  static shutdownError() {
    return {
      status: 503,
      code: 'unavailable' as const,
      message: SHUTDOWN_MESSAGE,
      headers: { 'retry-after': String(RETRY_AFTER_SECONDS), connection: 'close' },
    };
  }

  private busy(): boolean {
    for (const res of this.sockets.values()) if (res) return true;
    return false;
  }

  private checkIdle(): void {
    if (this.onIdle && !this.busy()) this.onIdle();
  }

  /**
   * Stops accepting connections, waits (at most the grace) for requests in progress, then answers
   * the rest 503 and closes every connection. Bounded: grace + about a second.
   */
  async drain(server: Server): Promise<void> {
    this.closing = true;
    // net.Server's close: stop listening but leave open connections to finish (see the top).
    NetServer.prototype.close.call(server);
    if (this.busy()) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.timeouts.shutdownGraceMs);
        this.onIdle = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.onIdle = undefined;
    }
    const body = jsonBody('unavailable', SHUTDOWN_MESSAGE);
    for (const [socket, res] of this.sockets) {
      if (res && !res.headersSent) {
        // Still reading its body (a stalled client) or still working: it gets an answer, not a reset.
        res.writeHead(503, {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          'retry-after': String(RETRY_AFTER_SECONDS),
          connection: 'close',
        });
        res.end(body);
      } else if (res)
        socket.destroy(); // half-written answer: nothing better to do
      else socket.end(); // idle, or headers never completed
    }
    const deadline = Date.now() + LINGER_MS;
    while ((this.sockets.size > 0 || this.raw.size > 0) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    for (const s of [...this.sockets.keys(), ...this.raw]) s.destroy();
  }
}
