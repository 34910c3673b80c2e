// Distributed writes of any size (issue 26 item 2), on SQLite and PostgreSQL: osquery sends an
// answer as one plain JSON body and resends an unacknowledged one with every later answer, so the
// door reads every write to its end: up to 16 MiB stored (parsed as it streams), past that
// recorded as that query's error for that node; never a 413 that would wedge the host.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { startTestServer, type TestServer } from '../helpers/api-server.js';
import { agentPost, hostDetails, parseFlags, type Flags } from '../helpers/osquery-agent.js';

let t: TestServer;
let admin: string;
let flags: Flags;
let secret: string;
let ca: string;

const post = (ep: string, body: unknown, o: { raw?: Buffer } = {}) => agentPost(flags.hostname, flags.endpoint[ep], body, { ca, ...o });

async function enroll() {
  const uuid = randomUUID();
  const r = await post('enroll', {
    enroll_secret: secret,
    host_identifier: uuid,
    host_details: hostDetails(uuid, `w-${uuid.slice(0, 8)}`),
  });
  return { uuid, key: r.body.node_key as string };
}

async function ask(uuid: string) {
  const r = await t.call('POST', '/api/v1/queries/prod', { token: admin, body: { query: 'SELECT * FROM big', uuid_list: [uuid] } });
  return r.body.query_name as string;
}

const results = async (name: string) => (await t.call('GET', `/api/v1/queries/prod/results/${name}`, { token: admin })).body;

/** osquery's serialisation of one answer: queries, statuses, messages, stats, node_key (in that order). */
function answer(key: string, name: string, rows: number, pad = 200) {
  const row = (i: number) => ({ x: String(i), pad: 'A'.repeat(pad) });
  return Buffer.from(
    JSON.stringify({
      queries: { [name]: Array.from({ length: rows }, (_, i) => row(i)) },
      statuses: { [name]: 0 },
      messages: { [name]: '' },
      stats: { [name]: { wall_time_ms: 1 } },
      node_key: key,
    }),
  );
}

beforeAll(async () => {
  t = await startTestServer({ devNodes: 5, agent: { host: '127.0.0.1', port: 0 } });
  admin = await t.login('admin');
  ca = t.server.agent!.certPem;
  flags = parseFlags((await t.call('GET', '/api/v1/environments/prod/enroll/flags', { token: admin })).body.data);
  secret = (await t.call('GET', '/api/v1/environments/prod/enroll/secret', { token: admin })).body.data;
});

afterAll(async () => {
  await t?.close();
});

describe('distributed writes of any size', () => {
  it('a 3 MB answer is stored whole, row for row', async () => {
    const n = await enroll();
    const name = await ask(n.uuid);
    const body = answer(n.key, name, 14_000);
    expect(body.length).toBeGreaterThan(3_000_000);
    expect(await post('write', undefined, { raw: body })).toEqual({ status: 200, body: { node_invalid: false } });
    const r = await results(name);
    expect(r.items).toHaveLength(1);
    expect(r.items[0]).toMatchObject({ uuid: n.uuid, status: 0, error: '' });
    expect(r.items[0].rows).toHaveLength(14_000);
    expect(r.items[0].rows[13_999]).toEqual({ x: '13999', pad: 'A'.repeat(200) });
  });

  it("an answer over 16 MiB is acknowledged and recorded as that query's error for that node; the next is stored", async () => {
    const n = await enroll();
    const name = await ask(n.uuid);
    const body = answer(n.key, name, 80_000);
    expect(body.length).toBeGreaterThan(16 * 1024 * 1024);
    expect(await post('write', undefined, { raw: body })).toEqual({ status: 200, body: { node_invalid: false } });
    const r = await results(name);
    expect(r.items).toEqual([
      expect.objectContaining({
        uuid: n.uuid,
        status: 1,
        rows: [],
        error: `the answer was ${body.length} bytes, over this server's limit of 16777216 bytes (16 MiB); it was discarded: ask for fewer rows or columns`,
      }),
    ]);
    expect(r.answered).toBe(1);
    const next = await ask(n.uuid);
    expect((await post('write', undefined, { raw: answer(n.key, next, 2) })).status).toBe(200);
    expect((await results(next)).items[0]).toMatchObject({ status: 0, rows: [{ x: '0' }, { x: '1' }] });
  });

  it("an oversized body with its node key first (another sender's order) is recorded too; with no node key anywhere it is 413", async () => {
    const n = await enroll();
    const name = await ask(n.uuid);
    const rows = JSON.stringify(Array.from({ length: 80_000 }, (_, i) => ({ x: String(i), pad: 'B'.repeat(200) })));
    const keyFirst = Buffer.from(`{"node_key":"${n.key}","queries":{"${name}":${rows}},"statuses":{"${name}":0}}`);
    expect((await post('write', undefined, { raw: keyFirst })).status).toBe(200);
    expect((await results(name)).items[0]).toMatchObject({ status: 1, error: expect.stringContaining("over this server's limit") });
    const keyless = Buffer.from(`{"queries":{"${name}":${rows}}}`);
    const r = await post('write', undefined, { raw: keyless });
    expect(r.status).toBe(413);
    expect(r.body.node_invalid).toBeUndefined();
  });

  it('a body that is not JSON is 400, small or large, never node_invalid', async () => {
    const small = await post('write', undefined, { raw: Buffer.from('{"queries": nope') });
    expect(small.status).toBe(400);
    const large = await post('write', undefined, {
      raw: Buffer.concat([Buffer.from('{"queries":{"q":['), Buffer.alloc(2 * 1024 * 1024, 0x78)]),
    });
    expect(large.status).toBe(400);
    expect(large.body.node_invalid).toBeUndefined();
  });
});
