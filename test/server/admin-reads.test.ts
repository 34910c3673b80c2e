// Admin reads never wait on the agent door's connection (issue 21). On SQLite the admin door
// reads through connections on worker threads (store/sqlite-thread.ts) and writes through the
// process's own connection. Here the process's connection is held (as a long check-in flush
// would hold it): admin reads are still answered, an admin write waits for it and then lands.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/api-server.js';

describe('admin reads on threads of their own (SQLite)', () => {
  let t: TestServer;
  let admin: string;

  beforeAll(async () => {
    t = await startTestServer({ devNodes: 300 });
    admin = await t.login('admin');
  });
  afterAll(async () => t?.close());

  it('lists, stats and audit are answered while the main connection is held; a write waits for it', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let held!: () => void;
    const holding = new Promise<void>((r) => (held = r));
    const holder = t.server.store.db.connection().execute(async () => {
      held();
      await gate;
    });
    await holding;
    for (const path of [
      '/api/v1/nodes/prod?q=web',
      '/api/v1/nodes/prod?tag=pci&sort=hostname',
      '/api/v1/stats',
      '/api/v1/audit-logs?q=login',
    ]) {
      const r = await t.call('GET', path, { token: admin });
      expect(r.status, path).toBe(200);
    }
    let written = false;
    const write = t
      .call('POST', '/api/v1/tags/prod/add', { token: admin, body: { name: 'held-write', description: '', color: '#123456', tagtype: 6 } })
      .then((r) => {
        written = true;
        return r;
      });
    // The write needs the held connection: it has not landed while reads were answered.
    expect((await t.call('GET', '/api/v1/stats', { token: admin })).status).toBe(200);
    expect(written).toBe(false);
    release();
    await holder;
    expect((await write).status).toBe(200);
    const tags = await t.call('GET', '/api/v1/tags/prod', { token: admin });
    expect(tags.body.map((x: { name: string }) => x.name)).toContain('held-write');
  });
});
