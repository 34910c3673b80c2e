// Refused enrolls (issue 18): audited in aggregate (one row per address and minute, with a count)
// and throttled per address; the one-liner endpoint compares secret paths as bytes (a non-ASCII
// path of the right length in characters made it throw: a 500).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { startTestServer, type TestServer } from '../helpers/api-server.js';
import { agentGet, agentPost, eventually, hostDetails, parseFlags, type Flags } from '../helpers/osquery-agent.js';

let t: TestServer;
let admin: string;
let flags: Flags;
let ca: string;

beforeAll(async () => {
  t = await startTestServer({ devNodes: 10, agent: { host: '127.0.0.1', port: 0 }, deniedRateLimit: 3 });
  admin = await t.login('admin');
  ca = t.server.agent!.certPem;
  flags = parseFlags((await t.call('GET', '/api/v1/environments/prod/enroll/flags', { token: admin })).body.data);
});

afterAll(async () => {
  await t?.close();
});

describe('refused enrolls', () => {
  it('are answered node_invalid, audited with a count, and past the limit throttled with 429', async () => {
    const bad = () => {
      const uuid = randomUUID();
      return agentPost(
        flags.hostname,
        flags.endpoint.enroll,
        { enroll_secret: 'wrong', host_identifier: uuid, host_details: hostDetails(uuid, 'x') },
        { ca },
      );
    };
    for (let i = 0; i < 3; i++) expect(await bad()).toEqual({ status: 200, body: { node_invalid: true } });
    const throttled = await bad();
    expect(throttled.status).toBe(429);
    expect(throttled.body.code).toBe('rate_limited');
    expect(throttled.body.node_invalid).toBeUndefined();
    await t.server.denials.flush();
    const row = await eventually(async () => {
      const r = await t.call('GET', `/api/v1/audit-logs?q=${encodeURIComponent('enroll refused')}`, { token: admin });
      return r.body.items[0];
    }, 'the audit row of the refused enrolls');
    expect(row.line).toMatch(/enroll refused in environment prod: wrong enroll secret/);
    expect(row.line).toMatch(/\[3 denied requests/);
  });

  it('a one-liner path of the right length in non-ASCII characters is a plain 404, not a 500', async () => {
    const env = (await t.call('GET', '/api/v1/environments/prod', { token: admin })).body;
    const path = 'ü'.repeat(env.enroll_secret_path.length);
    const r = await agentGet(flags.hostname, `/${env.uuid}/${encodeURIComponent(path)}/enroll.sh`, ca);
    expect(r.status).toBe(404);
  });
});
