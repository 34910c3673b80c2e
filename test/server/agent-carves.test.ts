// Carves as a security team uses them (issue 18), on SQLite and PostgreSQL: a node carved again
// and again, only targeted nodes uploading, every block checked against its session, counts
// exact under concurrent blocks, downloads streamed with a Content-Disposition for any path.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes, randomUUID } from 'node:crypto';
import contentDisposition from 'content-disposition';
import { startTestServer, type TestServer } from '../helpers/api-server.js';
import { agentPost, hostDetails, parseFlags, type Flags } from '../helpers/osquery-agent.js';
import { setSeen } from '../helpers/node-seen.js';

let t: TestServer;
let admin: string;
let flags: Flags;
let secret: string;
let ca: string;
const MAX = 64 * 1024;

const post = (ep: string, body: unknown) => agentPost(flags.hostname, flags.endpoint[ep], body, { ca });

async function enroll() {
  const uuid = randomUUID();
  const hostname = `carve-${uuid.slice(0, 8)}`;
  const r = await post('enroll', { enroll_secret: secret, host_identifier: uuid, host_details: hostDetails(uuid, hostname) });
  expect(r.body.node_key).toBeTruthy();
  return { uuid, hostname, key: r.body.node_key as string };
}

async function startCarve(path: string, hosts: string[]) {
  const r = await t.call('POST', '/api/v1/carves/prod', { token: admin, body: { path, host_list: hosts } });
  expect(r.status).toBe(201);
  return r.body.query_name as string;
}

/** The node answers the carve query (as osquery does) and opens a session. */
async function session(node: { key: string }, name: string, content: Buffer, blockSize: number) {
  await post('read', { node_key: node.key });
  await post('write', { node_key: node.key, queries: { [name]: [] }, statuses: { [name]: 0 } });
  return post('carveStart', {
    node_key: node.key,
    block_count: Math.ceil(content.length / blockSize),
    block_size: blockSize,
    carve_size: content.length,
    carve_id: randomUUID(),
    request_id: name,
  });
}

const block = (sessionId: string, name: string, content: Buffer, blockSize: number, i: number) =>
  post('carveBlock', {
    block_id: i,
    session_id: sessionId,
    request_id: name,
    data: content.subarray(i * blockSize, (i + 1) * blockSize).toString('base64'),
  });

async function download(name: string, sessionId: string) {
  const res = await fetch(`${t.url}/api/v1/carves/prod/archive/${name}?session=${sessionId}`, {
    headers: { authorization: `Bearer ${admin}` },
  });
  return { res, bytes: Buffer.from(await res.arrayBuffer()) };
}

beforeAll(async () => {
  t = await startTestServer({ devNodes: 20, agent: { host: '127.0.0.1', port: 0 }, carveMaxBytes: MAX });
  admin = await t.login('admin');
  ca = t.server.agent!.certPem;
  flags = parseFlags((await t.call('GET', '/api/v1/environments/prod/enroll/flags', { token: admin })).body.data);
  secret = (await t.call('GET', '/api/v1/environments/prod/enroll/secret', { token: admin })).body.data;
});

afterAll(async () => {
  await t?.close();
});

describe('carves', () => {
  it('one node carved three times: each carve completes and downloads byte for byte', async () => {
    const n = await enroll();
    for (let round = 0; round < 3; round++) {
      const name = await startCarve(`/etc/file-${round}`, [n.hostname]);
      const content = randomBytes(2500 + round);
      const s = await session(n, name, content, 1000);
      expect(s.status).toBe(200);
      for (const i of [2, 0, 1]) expect((await block(s.body.session_id, name, content, 1000, i)).body).toEqual({ success: true });
      const d = await download(name, s.body.session_id);
      expect(d.res.status).toBe(200);
      expect(d.bytes.equals(content)).toBe(true);
      expect((await t.call('GET', `/api/v1/carves/prod/${name}`, { token: admin })).body.query.carve_status).toBe('COMPLETED');
    }
  });

  it('a node the carve does not target cannot open a session (400), and nothing is stored', async () => {
    const target = await enroll();
    const other = await enroll();
    const name = await startCarve('/etc/shadow', [target.hostname]);
    const s = await session(other, name, Buffer.from('attacker bytes'), 1000);
    expect(s.status).toBe(400);
    expect(s.body.success).toBe(false);
    expect(s.body.node_invalid).toBeUndefined();
    const carve = (await t.call('GET', `/api/v1/carves/prod/${name}`, { token: admin })).body;
    expect(carve.files).toEqual([]);
    expect(carve.query.carve_status).toBe('ACTIVE');
  });

  it('sizes are checked: block count, each block against block_size, the server-wide maximum', async () => {
    const n = await enroll();
    const name = await startCarve('/var/log/x', [n.hostname]);
    await post('read', { node_key: n.key });
    const start = (b: object) => post('carveStart', { node_key: n.key, carve_id: randomUUID(), request_id: name, ...b });
    expect((await start({ block_count: 1, block_size: 10, carve_size: 377_000_000 })).status).toBe(400); // over --carve-max-size
    expect((await start({ block_count: 1, block_size: 10, carve_size: 100 })).status).toBe(400); // 100 bytes are 10 blocks
    expect((await start({ block_count: 1, block_size: 0, carve_size: 0 })).status).toBe(400);
    const ok = await start({ block_count: 2, block_size: 10, carve_size: 15 });
    expect(ok.status).toBe(200);
    const sid = ok.body.session_id as string;
    const put = (i: number, data: Buffer) =>
      post('carveBlock', { block_id: i, session_id: sid, request_id: name, data: data.toString('base64') });
    expect((await put(0, randomBytes(11))).status).toBe(400); // not block_size
    expect((await put(1, randomBytes(10))).status).toBe(400); // the last block is the rest: 5 bytes
    expect((await put(2, randomBytes(10))).status).toBe(400); // past the last block
    expect((await put(0, randomBytes(10))).status).toBe(200);
    expect((await put(1, randomBytes(5))).status).toBe(200);
    const file = (await t.call('GET', `/api/v1/carves/prod/${name}`, { token: admin })).body.files[0];
    expect(file).toMatchObject({ status: 'COMPLETED', completed_blocks: 2, total_blocks: 2, carve_size: 15 });
  });

  it('40 blocks sent at once are each counted once and the carve completes', async () => {
    const n = await enroll();
    const name = await startCarve('/srv/big', [n.hostname]);
    const content = randomBytes(40 * 512);
    const s = await session(n, name, content, 512);
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => block(s.body.session_id, name, content, 512, i)));
    expect(answers.every((a) => a.body.success === true)).toBe(true);
    // A retried block is accepted and not counted again.
    expect((await block(s.body.session_id, name, content, 512, 7)).body).toEqual({ success: true });
    const file = (await t.call('GET', `/api/v1/carves/prod/${name}`, { token: admin })).body.files[0];
    expect(file).toMatchObject({ status: 'COMPLETED', completed_blocks: 40, total_blocks: 40 });
    const d = await download(name, s.body.session_id);
    expect(d.bytes.equals(content)).toBe(true);
    expect(d.res.headers.get('x-carve-sha256')).toMatch(/^[0-9a-f]{64}$/);
  });

  it('any path downloads with an RFC 6266 Content-Disposition (non-Latin-1, control and bidi characters)', async () => {
    const n = await enroll();
    const path = '/home/ünï/日本語\u202e\u0007 "q".txt';
    const name = await startCarve(path, [n.hostname]);
    const content = Buffer.from('hello');
    const s = await session(n, name, content, 1000);
    await block(s.body.session_id, name, content, 1000, 0);
    const d = await download(name, s.body.session_id);
    expect(d.res.status).toBe(200);
    const header = d.res.headers.get('content-disposition')!;
    expect(header).toMatch(/^attachment; filename="[\x20-\x7e]+"; filename\*=UTF-8''/);
    expect(contentDisposition.parse(header).parameters.filename).toBe(`${n.uuid}_${s.body.session_id}_${path.replace(/\//g, '-')}.tar`);
    expect(d.bytes.toString()).toBe('hello');
  });
});

// Issue 26: osquery 4.7+ carves under a carve_guid and a random request_id that its answer's row
// names; the start carries those, never the query's name.
describe('carves matched by the ids osquery sends', () => {
  // What osquery uploads for a directory: an archive of no file (the tar's end: zero blocks).
  const content = Buffer.alloc(1024);
  const row = (guid: string, requestId: string, path: string) => ({
    time: '1',
    sha256: '',
    size: '-1',
    path,
    status: 'SCHEDULED',
    carve_guid: guid,
    request_id: requestId,
    carve: '1',
  });
  const start = (key: string, b: object) =>
    post('carveStart', { node_key: key, block_count: 1, block_size: 4096, carve_size: content.length, ...b });

  it('a start overtaking the answer is 503 (osquery retries); after the answer its ids match, by carve_id or request_id', async () => {
    const n = await enroll();
    const name = await startCarve('/etc/matched', [n.hostname]);
    const [guid, requestId] = [randomUUID(), randomUUID()];
    await post('read', { node_key: n.key });
    const early = await start(n.key, { carve_id: guid, request_id: requestId });
    expect(early.status).toBe(503);
    await post('write', {
      node_key: n.key,
      queries: { [name]: [row(guid, requestId, '/etc/matched')] },
      statuses: { [name]: 0 },
      messages: { [name]: '' },
      stats: {},
    });
    const s = await start(n.key, { carve_id: guid, request_id: requestId });
    expect(s.status).toBe(200);
    expect((await block(s.body.session_id, requestId, content, 4096, 0)).body).toEqual({ success: true });
    const detail = (await t.call('GET', `/api/v1/carves/prod/${name}`, { token: admin })).body;
    expect(detail.files).toMatchObject([
      { uuid: n.uuid, carve_id: guid, status: 'COMPLETED', compression: 'none', note: expect.stringContaining('no file in the archive') },
    ]);
    expect(detail.refusals).toEqual([]);
    // request_id alone matches too (a start without carve_id).
    const again = await start(n.key, { request_id: requestId.toUpperCase() });
    expect(again.status).toBe(200);
  });

  it('a start matching no carve is refused (400), and the refusal is read back on the carve; a refused size is recorded with the reason', async () => {
    const n = await enroll();
    const name = await startCarve('/etc/refused', [n.hostname]);
    const [guid, requestId] = [randomUUID(), randomUUID()];
    await post('read', { node_key: n.key });
    await post('write', { node_key: n.key, queries: { [name]: [row(guid, requestId, '/etc/refused')] }, statuses: { [name]: 0 } });
    const stray = await start(n.key, { carve_id: randomUUID(), request_id: randomUUID() });
    expect(stray.status).toBe(400);
    expect(stray.body).toMatchObject({ success: false, error: expect.stringContaining('no running carve of this node has carve_guid') });
    let detail = (await t.call('GET', `/api/v1/carves/prod/${name}`, { token: admin })).body;
    expect(detail.refusals).toMatchObject([{ uuid: n.uuid, hostname: n.hostname, error: expect.stringContaining('no running carve') }]);
    const tooBig = await start(n.key, { carve_id: guid, request_id: requestId, block_size: 9 * 1024 * 1024, block_count: 1 });
    expect(tooBig.status).toBe(400);
    detail = (await t.call('GET', `/api/v1/carves/prod/${name}`, { token: admin })).body;
    expect(detail.refusals).toMatchObject([
      { uuid: n.uuid, error: expect.stringContaining('block_size 9437184 is not from 1 to 8388608') },
    ]);
  });

  it('a zstd archive is recognised when complete', async () => {
    const n = await enroll();
    const name = await startCarve('/etc/zstd', [n.hostname]);
    const [guid, requestId] = [randomUUID(), randomUUID()];
    await post('read', { node_key: n.key });
    await post('write', { node_key: n.key, queries: { [name]: [row(guid, requestId, '/etc/zstd')] }, statuses: { [name]: 0 } });
    // A zstd frame of a 512-byte tar header ("x" then zeros) is not empty; the magic is what counts here.
    const zst = Buffer.concat([Buffer.from([0x28, 0xb5, 0x2f, 0xfd]), randomBytes(60)]);
    const s = await post('carveStart', {
      node_key: n.key,
      block_count: 1,
      block_size: 4096,
      carve_size: zst.length,
      carve_id: guid,
      request_id: requestId,
    });
    expect((await block(s.body.session_id, requestId, zst, 4096, 0)).body).toEqual({ success: true });
    const detail = (await t.call('GET', `/api/v1/carves/prod/${name}`, { token: admin })).body;
    expect(detail.files[0]).toMatchObject({ compression: 'zstd' });
    const res = await fetch(`${t.url}/api/v1/carves/prod/archive/${name}`, { headers: { authorization: `Bearer ${admin}` } });
    expect(res.headers.get('content-disposition')).toMatch(/\.tar\.zst"?$/);
    await res.arrayBuffer();
  });
});

describe("a carve's targets and their cadence (issue 26: carves run's default wait)", () => {
  it('POST /carves/{env}/targets: how many nodes match and the longest interval of those online, as each was told; nothing started', async () => {
    const env = (await t.call('GET', '/api/v1/environments/prod', { token: admin })).body as { query_interval: number };
    const [slow, fast, gone, unknown] = [await enroll(), await enroll(), await enroll(), await enroll()];
    const now = Date.now();
    const set = async (n: { uuid: string }, distributed_interval: number, seenAgoMs: number) => {
      const { id } = await t.server.deps.db
        .updateTable('nodes')
        .set({ distributed_interval })
        .where('uuid', '=', n.uuid)
        .returning('id')
        .executeTakeFirstOrThrow();
      await setSeen(t.server.deps.db, id, { last_seen: new Date(now - seenAgoMs).toISOString() });
    };
    await set(slow, 600, 60_000); // still polling every 10 min (a lowered interval not applied yet)
    await set(fast, 30, 1_000);
    await set(gone, 3600, 4 * 3600_000); // offline by its own cadence: 3 hours without a poll
    await set(unknown, 0, 1_000); // enrolled before the server kept intervals: the environment's
    const carvesBefore = (await t.call('GET', '/api/v1/carves/prod?page_size=500', { token: admin })).body.total_items as number;
    const targets = async (uuids: string[]) => {
      const r = await t.call('POST', '/api/v1/carves/prod/targets', { token: admin, body: { uuid_list: uuids } });
      expect(r.status).toBe(200);
      return r.body as { expected: number; query_interval: number };
    };
    expect(await targets([slow.uuid, fast.uuid, gone.uuid, unknown.uuid])).toEqual({ expected: 4, query_interval: 600 });
    expect(await targets([fast.uuid, gone.uuid])).toEqual({ expected: 2, query_interval: 30 });
    expect(await targets([gone.uuid])).toEqual({ expected: 1, query_interval: env.query_interval });
    expect(await targets([unknown.uuid])).toEqual({ expected: 1, query_interval: env.query_interval });
    expect(await targets(['no-such-node'])).toEqual({ expected: 0, query_interval: env.query_interval });
    const bad = await t.call('POST', '/api/v1/carves/prod/targets', { token: admin, body: { status_list: ['sleeping'] } });
    expect(bad.status).toBe(400);
    expect((await t.call('GET', '/api/v1/carves/prod?page_size=500', { token: admin })).body.total_items).toBe(carvesBefore);
  });
});
