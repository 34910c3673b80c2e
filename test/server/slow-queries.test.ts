// FLEETCTL_SLOW_QUERY_MS (issue 31): statements slower than the threshold are logged on stderr
// with the database's plan for them, once a minute per statement text.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/api-server.js';

describe('the slow-query log', () => {
  let t: TestServer;
  const lines: string[] = [];
  let restore: () => void;

  beforeAll(async () => {
    const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => (lines.push(String(chunk)), true));
    process.env.FLEETCTL_SLOW_QUERY_MS = '0';
    restore = () => {
      delete process.env.FLEETCTL_SLOW_QUERY_MS;
      spy.mockRestore();
    };
    t = await startTestServer({ devNodes: 30 });
  }, 180_000);
  afterAll(async () => {
    await t?.close();
    restore?.();
  });

  it('logs a list query with its plan, once per statement text', async () => {
    const token = await t.login('admin');
    for (let i = 0; i < 3; i++)
      expect((await t.call('GET', '/api/v1/nodes/prod?sort=hostname&platform=linux', { token })).status).toBe(200);
    // (In the JSON line the quotes of the SQL are escaped.)
    await vi.waitFor(() =>
      expect(lines.filter((l) => l.includes('"slow_query_ms"')).join('\n')).toMatch(/order by \\"nodes\\"\.\\"hostname\\"/),
    );
    const logged = lines.filter((l) => l.includes('"slow_query_ms"')).map((l) => JSON.parse(l) as { sql: string; plan: string[] });
    const list = logged.filter((l) => /order by "nodes"\."hostname"/.test(l.sql));
    expect(list.length).toBe(1);
    expect(list[0].plan.join('\n')).toMatch(/nodes/i);
  });
});
