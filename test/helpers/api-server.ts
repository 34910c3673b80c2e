// A real reference server on 127.0.0.1 (random port, temporary database) inside the test
// process, spoken to over real HTTP. For API tests; CLI tests use test/helpers/cli.ts.
import { startServer } from '../../src/server/start.js';
import type { RunningServer, ServerOptions } from '../../src/server/server-types.js';
import { totpCode } from '../../src/lib/totp.js';
import { testDatabaseUrl } from './test-db.js';

export const DEV_PASSWORD = 'test-password-1';

export interface TestServer {
  url: string;
  server: RunningServer;
  /** fetch wrapper: JSON in/out, returns status, parsed body and headers. */
  call(
    method: string,
    path: string,
    opts?: { token?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> },
  ): Promise<ApiReply>;
  /** Logs in (password step only) and returns the token; throws on failure. */
  login(username: string, env?: string, password?: string): Promise<string>;
  close(): Promise<void>;
}

export interface ApiReply {
  status: number;
  body: any;
  headers: Headers;
}

export async function startTestServer(opts: Partial<ServerOptions> = {}): Promise<TestServer> {
  // In the postgres project, a dev server seeds its demo fleet into a fresh database.
  const pgUrl = opts.dev !== false && !opts.dbPath ? await testDatabaseUrl() : undefined;
  const server = await startServer({
    ...(pgUrl ? { dbPath: pgUrl } : {}),
    host: '127.0.0.1',
    port: 0,
    dev: true,
    devPassword: DEV_PASSWORD,
    loginRateLimit: 10_000,
    deniedRateLimit: 10_000,
    accountLoginLimit: 10_000,
    // Tests seed synchronously in the server's own event loop (100,000 nodes: about a minute); a
    // kept-alive connection must outlive that, as it did with Fastify's 72 s default.
    timeouts: { keepAliveMs: 120_000 },
    ...opts,
  });
  const url = server.url;
  const call: TestServer['call'] = async (method, path, o = {}) => {
    const headers: Record<string, string> = { ...(o.headers ?? {}) };
    if (o.token) headers.authorization = `Bearer ${o.token}`;
    let body: string | undefined = o.rawBody;
    if (o.body !== undefined) body = JSON.stringify(o.body);
    if (body !== undefined && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type'))
      headers['content-type'] = 'application/json';
    const res = await fetch(url + path, { method, headers, body });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      /* keep the text */
    }
    return { status: res.status, body: parsed, headers: res.headers };
  };
  return {
    url,
    server,
    call,
    async login(username, env = 'prod', password = DEV_PASSWORD) {
      const r = await call('POST', `/api/v1/login/${env}`, { body: { username, password } });
      if (r.status !== 200) throw new Error(`login ${username}@${env} failed: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body.token as string;
    },
    close: () => server.close(),
  };
}

export { totpCode };
