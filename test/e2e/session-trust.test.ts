// Auth state as the server sees it (issue 9): `logout` ends the session on the server (the old
// token answers 401 afterwards), `auth status` asks the server (exit 4 for an ended session or a
// garbage FLEETCTL_TOKEN; an unreachable server is "not verified"), and plain HTTP to another
// machine is refused unless --insecure (warned once).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { startTestServer, type TestServer } from '../helpers/api-server.js';
import { Cli, DEV_PASSWORD } from '../helpers/cli.js';
import { apiCall } from '../helpers/admin-cli.js';

let ts: TestServer;
const clis: Cli[] = [];

function newCli(): Cli {
  const c = new Cli();
  clis.push(c);
  return c;
}

const storedToken = (cli: Cli, profile = 'default') =>
  (JSON.parse(readFileSync(join(cli.configDir, 'credentials.json'), 'utf8')) as Record<string, { token: string } | undefined>)[profile]
    ?.token;

async function loggedIn(): Promise<Cli> {
  const cli = newCli();
  const r = await cli.run(['login', '--url', ts.url, '--env', 'prod', '--username', 'analyst', '--password-stdin'], {
    input: DEV_PASSWORD,
  });
  expect(r.exitCode).toBe(0);
  return cli;
}

beforeAll(async () => {
  ts = await startTestServer();
});

afterAll(async () => {
  for (const c of clis) c.cleanup();
  await ts?.close();
});

describe('logout', () => {
  it('ends the session on the server: the old token answers 401 token_expired afterwards', async () => {
    const cli = await loggedIn();
    const token = storedToken(cli)!;
    expect((await apiCall(ts.url, 'GET', '/api/v1/users/me', { token })).status).toBe(200);

    const r = await cli.run(['logout']);
    expect(r.exitCode).toBe(0);
    expect(r.stderr).toMatch(/session ended on the server/);
    expect(storedToken(cli)).toBeUndefined();

    const after = await apiCall(ts.url, 'GET', '/api/v1/users/me', { token });
    expect(after.status).toBe(401);
    expect(after.body.code).toBe('token_expired');
    // Seen from the CLI too: the old token through `fleetctl api`.
    const viaCli = await newCli().run(['api', '/api/v1/users/me'], { env: { FLEETCTL_TOKEN: token, FLEETCTL_URL: ts.url } });
    expect(viaCli.exitCode).toBe(4);
  });

  it('offline: removes the local copy anyway, says the token stays valid until it expires, exit 7', async () => {
    const other = await startTestServer();
    const cli = newCli();
    const l = await cli.run(['login', '--url', other.url, '--env', 'prod', '--username', 'analyst', '--password-stdin'], {
      input: DEV_PASSWORD,
    });
    expect(l.exitCode).toBe(0);
    await other.close();
    const r = await cli.run(['logout', '--timeout', '2s']);
    expect(r.exitCode).toBe(7);
    expect(r.stderr).toMatch(
      /token removed from .*but the session could not be ended on the server .*the token stays valid on the server until it expires at \d{4}-/,
    );
    expect(storedToken(cli)).toBeUndefined();
  });
});

describe('auth status asks the server', () => {
  it('a live session: verified true, exit 0', async () => {
    const cli = await loggedIn();
    const r = await cli.run(['auth', 'status', '-o', 'json']);
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ logged_in: true, verified: true });
  });

  it('a session ended on the server: verified false, exit 4', async () => {
    const cli = await loggedIn();
    const token = storedToken(cli)!;
    expect((await apiCall(ts.url, 'POST', '/api/v1/logout', { token })).status).toBe(200);
    const r = await cli.run(['auth', 'status', '-o', 'json']);
    expect(r.exitCode).toBe(4);
    expect(JSON.parse(r.stdout)).toMatchObject({ logged_in: false, verified: false });
    expect(r.stderr).toMatch(/error: the server does not accept the token of profile "default"/);
  });

  it('a garbage FLEETCTL_TOKEN: exit 4', async () => {
    const r = await newCli().run(['auth', 'status', '-o', 'json'], { env: { FLEETCTL_TOKEN: 'not-a-token', FLEETCTL_URL: ts.url } });
    expect(r.exitCode).toBe(4);
    expect(JSON.parse(r.stdout)).toMatchObject({ verified: false, credential_store: 'env' });
    expect(r.stderr).toMatch(/does not accept the token in FLEETCTL_TOKEN/);
  });

  it('an unreachable server: the local state is printed, "not verified: server unreachable", exit 7 (--check too)', async () => {
    const env = { FLEETCTL_TOKEN: 'whatever', FLEETCTL_URL: 'http://127.0.0.1:9' };
    const r = await newCli().run(['auth', 'status', '-o', 'json', '--timeout', '2s'], { env });
    expect(r.exitCode).toBe(7);
    expect(JSON.parse(r.stdout)).toMatchObject({ verified: false });
    expect(r.stderr).toMatch(/error: not verified: server unreachable/);
    const c = await newCli().run(['auth', 'status', '--check', '--timeout', '2s'], { env });
    expect(c.exitCode).toBe(7);
    expect(c.stderr).toMatch(/error: not verified: server unreachable/);
  });

  it("a server error other than 401 while verifying: the error's exit code (1 for a 500), not 0", async () => {
    const broken = createServer((_req, res) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ code: 'internal', error: 'database unavailable' }));
    });
    await new Promise<void>((r) => broken.listen(0, '127.0.0.1', r));
    try {
      const env = { FLEETCTL_TOKEN: 'whatever', FLEETCTL_URL: `http://127.0.0.1:${(broken.address() as { port: number }).port}` };
      const r = await newCli().run(['auth', 'status', '-o', 'json'], { env });
      expect(r.exitCode).toBe(1);
      expect(JSON.parse(r.stdout)).toMatchObject({ verified: false });
      expect(r.stderr).toMatch(/error: not verified: database unavailable/);
    } finally {
      broken.close();
    }
  });
});

describe('plain HTTP to another machine', () => {
  it('login refuses http:// to a non-loopback host before asking for the password (exit 2)', async () => {
    const r = await newCli().run(['login', '--url', 'http://192.0.2.10:8080', '--env', 'prod', '--username', 'admin', '--password-stdin'], {
      input: 'secret-pw',
    });
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/refusing to send credentials over plain HTTP to 192\.0\.2\.10:8080/);
    expect(r.stderr).toMatch(/--insecure/);
  });

  it('every command refuses it too (FLEETCTL_URL with a token)', async () => {
    const r = await newCli().run(['nodes', 'list'], {
      env: { FLEETCTL_TOKEN: 'x', FLEETCTL_URL: 'http://fleet.example.com', FLEETCTL_ENV: 'prod' },
    });
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/refusing to send credentials over plain HTTP to fleet\.example\.com/);
  });

  it('loopback is allowed: 127.0.0.0/8, localhost, [::1]', async () => {
    // A plain-HTTP server on every loopback address (IPv6 and IPv4): each request the CLI sends
    // arrives, with the token, and its answer is printed.
    const seen: string[] = [];
    const stub = createServer((req, res) => {
      seen.push(`${req.headers.host} ${req.headers.authorization}`);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"loopback":true}');
    });
    await new Promise<void>((r) => stub.listen(0, '::', r));
    const port = (stub.address() as { port: number }).port;
    try {
      for (const host of ['127.0.0.1', '127.9.9.9', 'localhost', '[::1]']) {
        const r = await newCli().run(['api', 'GET', '/api/v1/stats'], {
          env: { FLEETCTL_TOKEN: 'loopback-token', FLEETCTL_URL: `http://${host}:${port}` },
        });
        expect(r.exitCode, `${host}: ${r.stderr}`).toBe(0);
        expect(JSON.parse(r.stdout)).toEqual({ loopback: true });
        expect(seen.at(-1)).toBe(`${host}:${port} Bearer loopback-token`);
      }
    } finally {
      await new Promise((r) => stub.close(r));
    }
  });

  it('--insecure allows it with one warning per invocation', async () => {
    // The login goes through the password step and the (failed) answer; the warning appears once.
    const r = await newCli().run(
      [
        'login',
        '--url',
        'http://192.0.2.10:8080',
        '--env',
        'prod',
        '--username',
        'admin',
        '--password-stdin',
        '--insecure',
        '--timeout',
        '1s',
      ],
      { input: 'secret-pw' },
    );
    const warnings = r.stderr.match(/warning: sending credentials over plain HTTP to 192\.0\.2\.10:8080/g) ?? [];
    expect(warnings).toHaveLength(1);
    expect(r.stderr).not.toMatch(/refusing/);
    expect(r.exitCode).toBe(7);
  });
});
