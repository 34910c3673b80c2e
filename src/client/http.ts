// The one HTTP client: undici with keep-alive, proxy support, timeouts, retries with
// Retry-After, typed ApiError, --debug logging with secrets redacted.
import type { Dispatcher } from 'undici';
import { readFileSync } from 'node:fs';
import type { Readable } from 'node:stream';
import { ApiError, NetworkError, UsageError } from '../errors.js';
import { DEFAULT_RETRY, parseRetryAfter, retryDelayMs, shouldRetry, type RetryPolicy } from './retry.js';
import { isSecretResponse, redactBody, redactHeaders } from './redact.js';
import { safeLine } from '../output/sanitize.js';
import type { TSchema } from '@sinclair/typebox';
import { checkAnswer, UnexpectedAnswerError } from './validate.js';

export interface HttpOptions {
  baseUrl: string;
  token?: string;
  csrfToken?: string;
  timeoutMs: number;
  retry?: RetryPolicy;
  debug?: (line: string) => void;
  caFile?: string;
  /** --insecure: skip TLS certificate checks, and allow plain http:// to a non-loopback host. */
  insecure?: boolean;
  userAgent?: string;
  /** A warning for stderr; `key` lets the caller show each one once per invocation. */
  warn?: (key: string, message: string) => void;
}

/** Loopback: 127.0.0.0/8, ::1 and localhost. Plain HTTP there never leaves the machine. */
export function isLoopbackHost(hostname: string): boolean {
  const h = hostname
    .toLowerCase()
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '');
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/**
 * The transport rule, checked once here for every command (login included): a password or token
 * sent over plain HTTP to another machine can be read on the way, so http:// to a non-loopback
 * host is refused unless --insecure says so (then with a warning).
 */
function checkTransport(opts: HttpOptions): void {
  let u: URL;
  try {
    u = new URL(opts.baseUrl);
  } catch {
    return; // the URL is validated where it is read (login, config); request() reports it otherwise
  }
  if (u.protocol === 'https:') {
    if (opts.insecure) opts.warn?.('insecure-tls', 'TLS certificate verification is disabled (--insecure)');
    return;
  }
  if (u.protocol !== 'http:' || isLoopbackHost(u.hostname)) return;
  if (!opts.insecure) {
    throw new UsageError(
      `refusing to send credentials over plain HTTP to ${u.host}: use https://, or pass --insecure to allow it`,
      'plain http:// is allowed without --insecure only for loopback (127.0.0.0/8, ::1, localhost)',
    );
  }
  opts.warn?.('plain-http', `sending credentials over plain HTTP to ${u.host} (--insecure): anyone on the network path can read them`);
}

export type Query = Record<string, string | number | boolean | undefined>;

export interface RequestOptions {
  query?: Query;
  body?: unknown;
  /** Expect a text body (e.g. enroll scripts served as JSON `{data}` are still JSON; this is for raw). */
  raw?: boolean;
  /** The success body is a secret as a whole (e.g. enroll `{data}` holding the enroll secret): --debug shows only its size. */
  secretResponse?: boolean;
  /** The src/api schema the success body must match (checked before any command sees it). */
  schema?: TSchema;
  /** How a mismatch names the answer's root, e.g. `users` -> "users[0].api is missing". */
  answerName?: string;
  /** Extra request headers (e.g. If-Match for a conditional write, osctrl's logout cookie; --debug redacts cookies). */
  headers?: Record<string, string>;
}

type Undici = typeof import('undici');
let undici: Promise<Undici> | undefined;
/** undici is loaded by the first request, not at start-up (`--help` and `--version` need none of it). */
const loadUndici = () => (undici ??= import('undici').then((m) => (m as { default?: Undici }).default ?? m));

let sharedDispatcher: Dispatcher | undefined;

type Send = (
  url: string,
  method: string,
  headers: Record<string, string>,
  body: string | undefined,
  timeoutMs: number,
) => Promise<{ status: number; text: string; retryAfter?: string }>;

const PROXY_VARIABLES = ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy'];

/** node:http has no proxy support: a proxy from the environment goes through undici's agent. */
const needsUndici = () => PROXY_VARIABLES.some((k) => process.env[k]);

function dispatcherFor({ Agent, EnvHttpProxyAgent }: Undici, opts: HttpOptions): Dispatcher {
  const connect = {
    ...(opts.caFile ? { ca: readFileSync(opts.caFile) } : {}),
    ...(opts.insecure ? { rejectUnauthorized: false } : {}),
  };
  const hasProxy = PROXY_VARIABLES.some((k) => process.env[k]);
  if (!opts.caFile && !opts.insecure && !hasProxy) return (sharedDispatcher ??= new Agent({ keepAliveTimeout: 10_000 }));
  return hasProxy ? new EnvHttpProxyAgent({ connect }) : new Agent({ connect, keepAliveTimeout: 10_000 });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Certificate verification failures: retrying cannot help, the user must trust the CA. */
const TLS_TRUST_ERRORS = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
]);

const duration = (ms: number) => (ms < 1000 ? `${ms} ms` : `${Math.round(ms / 1000)} s`);

export class HttpClient {
  private dispatcher?: Dispatcher;

  constructor(readonly opts: HttpOptions) {
    checkTransport(opts);
  }

  get baseUrl(): string {
    return this.opts.baseUrl;
  }

  url(path: string, query?: Query): string {
    const u = new URL(path, this.opts.baseUrl.endsWith('/') ? this.opts.baseUrl : `${this.opts.baseUrl}/`);
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined && v !== '') u.searchParams.set(k, String(v));
    return u.toString();
  }

  private sender?: Promise<Send>;

  /**
   * How requests travel. By default node:http(s): built into node, nothing to load (most
   * commands make one request) and a native parser (a fetch-based client holds about 40 MiB more:
   * its parser is WebAssembly). undici, bundled, when a proxy from the environment is set.
   */
  private transport(): Promise<Send> {
    return (this.sender ??= needsUndici() ? this.undiciSender() : this.nodeSender());
  }

  private undiciSender(): Promise<Send> {
    return loadUndici().then((u) => {
      const dispatcher = (this.dispatcher ??= dispatcherFor(u, this.opts));
      return async (url, method, headers, body, timeoutMs) => {
        const res = await u.request(url, { method: method, headers, body, dispatcher, signal: AbortSignal.timeout(timeoutMs) });
        const ra = res.headers['retry-after'];
        return { status: res.statusCode, text: await res.body.text(), retryAfter: Array.isArray(ra) ? ra[0] : ra };
      };
    });
  }

  /**
   * node:http(s): built into node, native HTTP parser, keep-alive; a CA file and --insecure are
   * TLS options. Each module is loaded by the first request that needs it: node:https brings
   * node:tls and node:crypto, which a command against http://localhost never uses.
   */
  private nodeSender(): Promise<Send> {
    const tls = {
      ...(this.opts.caFile ? { ca: readFileSync(this.opts.caFile) } : {}),
      ...(this.opts.insecure ? { rejectUnauthorized: false } : {}),
    };
    type Transport = { request: typeof import('node:http').request; agent: import('node:http').Agent };
    const loaded = new Map<string, Promise<Transport>>();
    const transportFor = (protocol: string): Promise<Transport> => {
      let t = loaded.get(protocol);
      if (!t) {
        t =
          protocol === 'https:'
            ? import('node:https').then((https) => ({ request: https.request, agent: new https.Agent({ keepAlive: true, ...tls }) }))
            : import('node:http').then((http) => ({ request: http.request, agent: new http.Agent({ keepAlive: true }) }));
        loaded.set(protocol, t);
      }
      return t;
    };
    const send: Send = async (url, method, headers, body, timeoutMs) => {
      const u = new URL(url);
      const { request, agent } = await transportFor(u.protocol);
      return new Promise((resolve, reject) => {
        const req = request(
          u,
          {
            method,
            headers: body === undefined ? headers : { ...headers, 'content-length': Buffer.byteLength(body) },
            agent,
            signal: AbortSignal.timeout(timeoutMs),
          },
          (res: import('node:http').IncomingMessage) => {
            res.setEncoding('utf8');
            let text = '';
            res.on('data', (chunk: string) => (text += chunk));
            res.on('end', () => {
              const ra = res.headers['retry-after'];
              resolve({ status: res.statusCode ?? 0, text, retryAfter: typeof ra === 'string' ? ra : ra?.[0] });
            });
            res.on('error', reject);
          },
        );
        req.on('error', (e: Error) => {
          // An abort by the timeout signal: say so as the other transports do.
          const reason = (e as { cause?: unknown }).cause;
          reject(e.name === 'AbortError' && reason instanceof Error && reason.name === 'TimeoutError' ? reason : e);
        });
        req.end(body);
      });
    };
    return Promise.resolve(send);
  }

  async request<T>(method: string, path: string, ro: RequestOptions = {}): Promise<T> {
    const url = this.url(path.replace(/^\//, ''), ro.query);
    const headers: Record<string, string> = { accept: 'application/json', 'user-agent': this.opts.userAgent ?? 'fleetctl' };
    if (this.opts.token) headers.authorization = `Bearer ${this.opts.token}`;
    if (this.opts.csrfToken && method !== 'GET') headers['x-csrf-token'] = this.opts.csrfToken;
    if (ro.headers) Object.assign(headers, ro.headers);
    let body: string | undefined;
    if (ro.body !== undefined) {
      body = JSON.stringify(ro.body);
      headers['content-type'] = 'application/json';
    }
    const policy = this.opts.retry ?? DEFAULT_RETRY;
    const debug = this.opts.debug;
    const send = await this.transport();
    for (let attempt = 1; ; attempt++) {
      const started = Date.now();
      debug?.(`> ${method} ${url}${attempt > 1 ? ` (attempt ${attempt})` : ''}`);
      debug?.(`> headers ${JSON.stringify(redactHeaders(headers))}`);
      if (body !== undefined) debug?.(`> body ${redactBody(body, false)}`);
      let status: number;
      let text: string;
      let retryAfter: number | undefined;
      try {
        const res = await send(url, method, headers, body, this.opts.timeoutMs);
        status = res.status;
        text = res.text;
        retryAfter = parseRetryAfter(res.retryAfter, Date.now());
      } catch (e) {
        const err = e as Error & { code?: string; cause?: { code?: string } };
        const timedOut = err.name === 'TimeoutError' || err.name === 'AbortError';
        const code = err.cause?.code ?? err.code;
        const reason = timedOut ? `no answer within ${duration(this.opts.timeoutMs)}` : (code ?? err.message);
        debug?.(`< ${reason} (${Date.now() - started} ms)`);
        if (code && TLS_TRUST_ERRORS.has(code)) {
          throw new NetworkError(
            `the TLS certificate of ${this.opts.baseUrl} is not trusted (${code})`,
            url,
            "trust the server's CA with --ca-file FILE or NODE_EXTRA_CA_CERTS; --insecure skips the check (unsafe)",
          );
        }
        if (attempt < policy.maxAttempts && shouldRetry(method, { networkError: true })) {
          await sleep(retryDelayMs(attempt, undefined, policy));
          continue;
        }
        const tries = attempt > 1 ? ` after ${attempt} attempts` : '';
        throw new NetworkError(`cannot reach ${this.opts.baseUrl}: ${reason}${tries}`, url);
      }
      if (debug) {
        const shown =
          (ro.secretResponse || isSecretResponse(method, url)) && status < 400
            ? `[${text.length} bytes, redacted]`
            : redactBody(text, status >= 400);
        debug(`< ${status} (${Date.now() - started} ms) ${shown}`);
      }
      if (status >= 200 && status < 300) {
        if (ro.raw) return text as T;
        return parseAnswer<T>(text, ro.schema, ro.answerName);
      }
      if (attempt < policy.maxAttempts && shouldRetry(method, { status })) {
        await sleep(retryDelayMs(attempt, retryAfter, policy));
        continue;
      }
      throw toApiError(status, text, retryAfter);
    }
  }

  /** GET of a binary body (a carve archive): errors become ApiError/NetworkError as in request(); connection errors are retried. */
  async download(path: string, query?: Query): Promise<Download> {
    const url = this.url(path.replace(/^\//, ''), query);
    const headers: Record<string, string> = {
      accept: 'application/octet-stream, application/json',
      'user-agent': this.opts.userAgent ?? 'fleetctl',
    };
    if (this.opts.token) headers.authorization = `Bearer ${this.opts.token}`;
    const policy = this.opts.retry ?? DEFAULT_RETRY;
    const u = await loadUndici();
    const dispatcher = (this.dispatcher ??= dispatcherFor(u, this.opts));
    for (let attempt = 1; ; attempt++) {
      this.opts.debug?.(`> GET ${url}${attempt > 1 ? ` (attempt ${attempt})` : ''}`);
      let res: Dispatcher.ResponseData;
      try {
        res = await u.request(url, {
          method: 'GET',
          headers,
          dispatcher,
          headersTimeout: this.opts.timeoutMs,
          bodyTimeout: this.opts.timeoutMs,
        });
      } catch (e) {
        const err = e as Error & { code?: string; cause?: { code?: string } };
        const code = err.cause?.code ?? err.code ?? err.message;
        if (attempt < policy.maxAttempts && shouldRetry('GET', { networkError: true })) {
          await sleep(retryDelayMs(attempt, undefined, policy));
          continue;
        }
        throw new NetworkError(`cannot reach ${this.opts.baseUrl}: ${code}`, url);
      }
      this.opts.debug?.(`< ${res.statusCode} (binary body)`);
      if (res.statusCode >= 200 && res.statusCode < 300) {
        const len = Number(res.headers['content-length']);
        const cd = String(res.headers['content-disposition'] ?? '');
        const fn = /filename\*?=(?:UTF-8'')?"?([^";]+)"?/i.exec(cd)?.[1];
        const flat = Object.fromEntries(
          Object.entries(res.headers).map(([k, v]) => [k.toLowerCase(), Array.isArray(v) ? v.join(', ') : String(v ?? '')]),
        );
        return {
          body: res.body,
          length: Number.isFinite(len) ? len : undefined,
          filename: fn ? decodeURIComponent(fn) : undefined,
          headers: flat,
        };
      }
      const text = await res.body.text();
      const ra = res.headers['retry-after'];
      const retryAfter = parseRetryAfter(Array.isArray(ra) ? ra[0] : ra, Date.now());
      if (attempt < policy.maxAttempts && shouldRetry('GET', { status: res.statusCode })) {
        await sleep(retryDelayMs(attempt, retryAfter, policy));
        continue;
      }
      throw toApiError(res.statusCode, text, retryAfter);
    }
  }
}

/** A binary answer being streamed (a carve archive): read `body` to the end or destroy it. */
export interface Download {
  body: Readable;
  /** Content-Length when the server sent one. */
  length?: number;
  /** The file name of Content-Disposition, when given. */
  filename?: string;
  /** Response headers (lower-case names), e.g. what the server says the content should be. */
  headers: Record<string, string>;
}

function parseAnswer<T>(text: string, schema?: TSchema, name = ''): T {
  let value: unknown;
  try {
    value = text ? JSON.parse(text) : undefined;
  } catch {
    throw new UnexpectedAnswerError('the body is not JSON');
  }
  return schema ? checkAnswer<T>(schema, value, name) : (value as T);
}

/** The code a status stands for, when the server sends none (osctrl sets `code` only on 401 and csrf). */
export function codeForStatus(status: number): string {
  const byStatus: Record<number, string> = {
    400: 'bad_request',
    401: 'unauthorized',
    403: 'forbidden',
    404: 'not_found',
    405: 'not_found',
    409: 'conflict',
    429: 'rate_limited',
    503: 'unavailable',
  };
  return byStatus[status] ?? (status >= 500 ? 'internal' : 'unknown');
}

export function toApiError(status: number, text: string, retryAfter?: number): ApiError {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) {
    const b = parsed as Record<string, unknown>;
    // {code, error} here; osctrl's {error} without code; RFC 9457 problem bodies {title, detail}.
    // The server's text is one line, shown escaped wherever it is printed (sanitize.ts).
    const message = [b.error, b.detail, b.title, b.message].find((v) => typeof v === 'string' && v.trim()) as string | undefined;
    const code = typeof b.code === 'string' && b.code ? b.code : codeForStatus(status);
    return new ApiError(status, safeLine(code), safeLine(message?.trim() || `HTTP ${status}`), b, retryAfter);
  }
  // A web page (a proxy, another web app, the wrong port): say so instead of dumping its HTML.
  if (/^\s*<(!doctype|html|head|body|\?xml)/i.test(text)) {
    const err = new ApiError(status, codeForStatus(status), 'did not answer like a Fleet API server: it sent a web page', {}, retryAfter);
    err.hint = "check --url (or FLEETCTL_URL, or the profile's URL)";
    return err;
  }
  // Go's http.Error and text bodies end with a newline: one trimmed line, at most 200 characters.
  const message = (typeof parsed === 'string' ? parsed : text).trim().split('\n')[0].slice(0, 200) || `HTTP ${status}`;
  return new ApiError(status, codeForStatus(status), safeLine(message), {}, retryAfter);
}
