// SQLite out of space (issue 18): the server's own database connection gets a page limit it has
// already reached (PRAGMA max_page_count, which SQLite enforces like a full disk: SQLITE_FULL on
// any write that needs a new page), then the limit is lifted again. While full: writes answer
// 503 on both doors (never node_invalid, never a crash), reads keep working, /healthz says why;
// afterwards everything works again without a restart and nothing acknowledged is gone.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes, randomUUID } from 'node:crypto';
import { CompiledQuery, sql } from 'kysely';
import { startTestServer, type TestServer } from '../helpers/api-server.js';
import { agentPost, hostDetails, parseFlags, type Flags } from '../helpers/osquery-agent.js';

describe('SQLite out of space, then space again', () => {
  let t: TestServer;
  let admin: string;
  let flags: Flags;
  let secret: string;
  let ca: string;
  const logs: string[] = [];

  const post = (ep: string, body: unknown) => agentPost(flags.hostname, flags.endpoint[ep], body, { ca });
  // A realistic host_details of ~20 KB: its row needs new pages (SQLite's overflow pages).
  const enroll = (uuid = randomUUID()) => {
    const details = {
      ...hostDetails(uuid, `host-${uuid.slice(0, 8)}`),
      platform_info: { vendor: 'SeaBIOS', extra: randomBytes(10_000).toString('hex') },
    };
    return post('enroll', { enroll_secret: secret, host_identifier: uuid, host_details: details });
  };
  // An admin write that needs new pages too: a sink whose configuration is ~40 KB.
  const addSink = () =>
    t.call('POST', '/api/v1/log-sinks', {
      token: admin,
      body: {
        name: `big-${randomUUID()}`,
        type: 'http',
        source: 'result',
        environment_id: 0,
        config: { url: 'https://logs.example/in', headers: { 'x-pad': 'x'.repeat(40_000) } },
      },
    });

  beforeAll(async () => {
    t = await startTestServer({ devNodes: 20, agent: { host: '127.0.0.1', port: 0 }, warn: (line) => logs.push(line) });
    admin = await t.login('admin');
    ca = t.server.agent!.certPem;
    flags = parseFlags((await t.call('GET', '/api/v1/environments/prod/enroll/flags', { token: admin })).body.data);
    secret = (await t.call('GET', '/api/v1/environments/prod/enroll/secret', { token: admin })).body.data;
  });

  afterAll(async () => {
    await t?.close();
  });

  it('writes answer 503, reads and known agents keep working, /healthz says so; all of it recovers', async () => {
    const db = t.server.store.db;
    const before = await enroll();
    expect(before.body.node_invalid).toBe(false);
    const key = before.body.node_key as string;

    // Full: the limit is the current size, and the free pages are used up first.
    await db.schema.createTable('ballast').ifNotExists().addColumn('b', 'blob').execute();
    // On every connection that writes: the process's own and its agent writer thread's (store.write).
    const limit = async (pages: number) => {
      await sql`pragma max_page_count = ${sql.raw(String(pages))}`.execute(db);
      await t.server.store.write([CompiledQuery.raw(`pragma max_page_count = ${pages}`, [])]);
    };
    await limit(1);
    for (let i = 0; i < 10_000; i++) {
      const full = await sql`insert into ballast (b) values (${randomBytes(4000)})`.execute(db).then(
        () => false,
        () => true,
      );
      if (full) break;
    }

    const refused = await enroll();
    expect(refused.status).toBe(503);
    expect(refused.body.node_invalid).toBeUndefined();
    // The spool cannot write: a log batch is answered 503 (osquery keeps it and resends), never 200.
    const marker = `full-${randomUUID()}`;
    const batch = { node_key: key, log_type: 'result', data: [{ name: 'q', columns: { marker, pad: randomBytes(6000).toString('hex') } }] };
    const full = await post('log', batch);
    expect(full.status).toBe(503);
    expect(full.body.node_invalid).toBeUndefined();
    const sink = await addSink();
    expect(sink.status).toBe(503);
    expect(sink.body.code).toBe('unavailable');
    expect(sink.headers.get('retry-after')).toBe('5');
    expect((await t.call('GET', '/api/v1/nodes/prod', { token: admin })).status).toBe(200);
    const cfg = await post('config', { node_key: key });
    expect(cfg.status).toBe(200);
    expect(cfg.body.node_invalid).toBe(false);
    const health = await t.call('GET', '/healthz');
    expect(health.status).toBe(503);
    expect(health.body.error).toMatch(/out of space/);
    await t.server.agent!.flushCheckins(); // a failing background write must not end anything
    expect(logs.some((l) => /database no space/.test(l))).toBe(true);

    // Space again (the operator freed the disk): no restart needed.
    await limit(1073741823);
    expect((await t.call('GET', '/healthz')).status).toBe(200);
    const after = await enroll();
    expect(after.status).toBe(200);
    expect(after.body.node_key).toMatch(/^[0-9a-f]+$/);
    expect((await addSink()).status).toBe(200);
    // What was acknowledged before is all there, and the known agent still is.
    expect((await post('config', { node_key: key })).body.node_invalid).toBe(false);
    // The batch osquery resends is taken, once.
    expect((await post('log', batch)).status).toBe(200);
    expect((await db.selectFrom('log_spool').select('id').where('line', 'like', `%${marker}%`).execute()).length).toBe(1);
    await sql`drop table ballast`.execute(db);
  });
});
