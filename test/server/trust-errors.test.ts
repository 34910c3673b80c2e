// Issue 9.5: every answer is in the standard set with {code, error}, router and parser errors
// included: long path parameters, bad %-encoding, deep JSON, malformed HTTP.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from 'node:net';
import { startTestServer, type TestServer } from '../helpers/api-server.js';

let ts: TestServer;
let admin: string;
beforeAll(async () => {
  ts = await startTestServer();
  admin = await ts.login('admin');
});
afterAll(() => ts?.close());

/** One raw HTTP exchange (for requests fetch would refuse to send). */
function raw(request: string): Promise<{ status: number; body: any }> {
  const { port } = new URL(ts.url);
  return new Promise((resolve, reject) => {
    const s = connect(Number(port), '127.0.0.1', () => s.write(request));
    let data = '';
    s.on('data', (d) => (data += d.toString()));
    s.on('error', reject);
    s.on('close', () => {
      const [head, ...rest] = data.split('\r\n\r\n');
      resolve({ status: Number(/^HTTP\/1\.1 (\d+)/.exec(head ?? '')?.[1]), body: JSON.parse(rest.join('\r\n\r\n')) });
    });
  });
}

describe('router and parser errors in the envelope', () => {
  it('a 1,000-character node name is looked up (404 not_found), not refused with 414', async () => {
    const r = await ts.call('GET', `/api/v1/nodes/prod/node/${'h'.repeat(1000)}`, { token: admin });
    expect(r.status).toBe(404);
    expect(r.body).toEqual({ code: 'not_found', error: expect.any(String) });
  });

  it('bad %-encoding in the path: 400 bad_request', async () => {
    const r = await raw('GET /api/v1/nodes/prod/node/%E0%A4%A HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ code: 'bad_request', error: expect.stringContaining('%-encoding') });
  });

  it('a log-sink config nested 5,000 deep: 400, never 500; 60 deep is accepted', async () => {
    const deep = '{"a":'.repeat(5000) + '1' + '}'.repeat(5000);
    const body = `{"name":"deep","type":"file","source":"status","environment_id":0,"config":${deep}}`;
    const r = await ts.call('POST', '/api/v1/log-sinks', { token: admin, rawBody: body });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ code: 'invalid_json', error: expect.stringContaining('deeper than 64') });
    const arrays = await ts.call('POST', '/api/v1/log-sinks', { token: admin, rawBody: '['.repeat(5000) + ']'.repeat(5000) });
    expect(arrays.status).toBe(400);
    // Brackets inside strings do not count.
    const ok = '{"a":'.repeat(60) + '"[[[[{{{{"' + '}'.repeat(60);
    const fine = await ts.call('POST', '/api/v1/log-sinks', {
      token: admin,
      rawBody: `{"name":"x","type":"file","source":"status","environment_id":0,"config":${ok}}`,
    });
    expect(fine.status).not.toBe(500);
    expect(fine.body.code).not.toBe('invalid_json');
  });

  it('malformed HTTP and an unsupported Expect header: 400 {code, error}', async () => {
    const bad = await raw('GET /api/v1/users HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n');
    expect(bad).toEqual({ status: 400, body: { code: 'bad_request', error: expect.any(String) } });
    const expectHdr = await raw('GET /api/v1/users HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\nConnection: close\r\n\r\n');
    expect(expectHdr).toEqual({ status: 400, body: { code: 'bad_request', error: expect.stringContaining('Expect') } });
  });
});
