// A dead, slow or overloaded server: the CLI retries what is safe to retry, honours
// Retry-After, and ends with exit 7 and a clear message.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import { Cli } from '../helpers/cli.js';

let cli: Cli;
let server: Server;
let base: string;
const hits: Record<string, number> = {};

beforeAll(async () => {
  cli = new Cli();
  server = createServer((req, res) => {
    const path = req.url!.split('?')[0];
    hits[path] = (hits[path] ?? 0) + 1;
    if (path.startsWith('/hang')) return; // never answers
    if (path === '/busy/api/v1/nodes/prod') {
      if (hits[path] <= 2) {
        res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' });
        return res.end(JSON.stringify({ code: 'unavailable', error: 'warming up' }));
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ items: [], page: 1, page_size: 50, total_items: 0, total_pages: 0 }));
    }
    if (path.startsWith('/website/')) {
      res.writeHead(404, { 'content-type': 'text/html' });
      return res.end(
        '<!DOCTYPE html>\n<html><head><title>Not Found</title></head><body><h1>Not Found</h1>' + 'x'.repeat(5000) + '</body></html>\n',
      );
    }
    if (path === '/limited/api/v1/nodes/prod/delete') {
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '30' });
      return res.end(JSON.stringify({ code: 'rate_limited', error: 'slow down' }));
    }
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ code: 'not_found', error: 'nothing here' }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const addr = server.address() as { port: number };
  base = `http://127.0.0.1:${addr.port}`;
});

afterAll(async () => {
  cli.cleanup();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

const env = { FLEETCTL_TOKEN: 'test-token', FLEETCTL_ENV: 'prod' };

describe('network failures', () => {
  it('a refused connection ends with exit 7 after retries and names the URL', async () => {
    const dead = 'http://127.0.0.1:9'; // discard port: nothing listens
    const r = await cli.run(['nodes', 'list', '--url', dead], { env });
    expect(r.exitCode).toBe(7);
    expect(r.stderr).toMatch(/^error: cannot reach http:\/\/127\.0\.0\.1:9: ECONNREFUSED after 4 attempts/);
    expect(r.stderr).toMatch(/hint: check --url/);
    expect(r.stdout).toBe('');
  });

  it('a server that does not answer times out (--timeout) and is retried', async () => {
    const r = await cli.run(['nodes', 'list', '--url', `${base}/hang`, '--timeout', '300ms'], { env });
    expect(r.exitCode).toBe(7);
    expect(r.stderr).toMatch(/no answer within 300 ms after 4 attempts/);
    expect(hits['/hang/api/v1/nodes/prod']).toBe(4);
  });

  it('503 with Retry-After is retried until it succeeds', async () => {
    const r = await cli.run(['nodes', 'list', '--url', `${base}/busy`, '--json'], { env });
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual([]);
    expect(hits['/busy/api/v1/nodes/prod']).toBe(3);
  });

  it("a POST answered 429 is not retried; exit 7 with the server's wait", async () => {
    const r = await cli.run(['api', '/api/v1/nodes/prod/delete', '-f', 'uuid=abc', '--url', `${base}/limited`], { env });
    expect(r.exitCode).toBe(7);
    expect(r.stderr).toMatch(/slow down \(rate_limited, HTTP 429\)/);
    expect(r.stderr).toMatch(/retry after 30 s/);
    expect(hits['/limited/api/v1/nodes/prod/delete']).toBe(1);
  });

  it('a URL that answers with a web page says so in one line, no HTML, with a hint about --url', async () => {
    const r = await cli.run(['nodes', 'list', '--url', `${base}/website`], { env });
    expect(r.exitCode).toBe(3);
    expect(r.stderr).toBe(
      "error: did not answer like a Fleet API server: it sent a web page (not_found, HTTP 404)\nhint: check --url (or FLEETCTL_URL, or the profile's URL)\n",
    );
  });

  it('--debug logs requests on stderr with the token redacted', async () => {
    const r = await cli.run(['nodes', 'list', '--url', `${base}/nothing`, '--debug'], { env });
    expect(r.exitCode).toBe(3);
    expect(r.stderr).toMatch(/\[debug\] > GET http:\/\/127\.0\.0\.1:\d+\/nothing\/api\/v1\/nodes\/prod/);
    expect(r.stderr).toMatch(/"authorization":"\[redacted\]"/);
    expect(r.stderr).not.toContain('test-token');
  });
});
