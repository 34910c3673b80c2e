// A sink's batches in flight (issue 28): the runner sends the next batches while earlier ones
// wait for their acknowledgement, and moves the cursor only over the acknowledged batches just
// after it. Driven here through a destination whose every send the test answers by hand, in a
// real server's store (its own delivery stopped, so this runner is the sink's only one).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostname } from 'node:os';
import { startTestServer, type TestServer } from '../helpers/api-server.js';
import { eventually } from '../helpers/osquery-agent.js';
import { SinkRunner, type RunnerHost } from '../../src/server/services/delivery/runner.js';
import { ensureSinkState, readBatch } from '../../src/server/services/delivery/sink-state.js';
import type { Destination, SendResult, SinkEntry } from '../../src/server/services/delivery/sink.js';
import { DEFAULT_IN_FLIGHT } from '../../src/server/services/delivery/batching.js';
import type { LogSinkRow } from '../../src/server/store/schema.js';
import { Type } from '@sinclair/typebox';

let t: TestServer;
let admin: string;
let envId: number;
const db = () => t.server.deps.db;

/** One send the destination got, answered by the test. */
interface Call {
  ids: number[];
  answer(r?: Partial<SendResult>): void;
  fail(message: string): void;
}

/** A destination of batches of 100 (and at most `maxBytes` of lines) whose sends wait for the test's answer. */
function handDestination(maxInFlight?: number, maxBytes = 1024 * 1024): { dest: Destination; calls: Call[] } {
  const calls: Call[] = [];
  const dest: Destination = {
    type: 'by-hand',
    schema: Type.Object({}),
    secrets: [],
    batch: { maxEntries: 100, maxBytes },
    ...(maxInFlight ? { maxInFlight: () => maxInFlight } : {}),
    open: () =>
      Promise.resolve({
        send: (batch: SinkEntry[], signal: AbortSignal) =>
          new Promise<SendResult>((resolve, reject) => {
            signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
            calls.push({
              ids: batch.map((e) => e.id),
              answer: (r) => resolve({ bytes: 1, answer: 'ok', ...r }),
              fail: (m) => reject(new Error(m)),
            });
          }),
        close: () => Promise.resolve(),
      }),
    doc: { wire: '', verified: '' },
  };
  return { dest, calls };
}

function hostFor(owner: string, delivered: number[]): RunnerHost {
  return {
    deps: t.server.deps,
    readDb: db(),
    owner,
    limits: { maxBytes: 1 << 30, maxAgeMs: 7 * 24 * 3600_000 },
    envName: () => 'prod',
    dropped: () => undefined,
    delivered: (_s, entries) => delivered.push(...entries.map((e) => e.id)),
    failed: () => undefined,
  };
}

/** A sink row of the hand destination's type, its cursor at the head, then `lines` result entries spooled. */
async function sinkWith(name: string, lines: number, config: Record<string, unknown> = {}): Promise<{ sink: LogSinkRow; ids: number[] }> {
  const now = new Date().toISOString();
  const { id } = await db()
    .insertInto('log_sinks')
    .values({
      name,
      type: 'by-hand',
      source: 'result',
      info: '',
      enabled: 1 as never,
      environment_id: envId,
      sort_order: 0,
      config: JSON.stringify(config),
      bytes_sent: 0,
      exports_count: 0,
      created_at: now,
      updated_at: now,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  const sink = await db().selectFrom('log_sinks').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  await ensureSinkState(db(), sink);
  for (let b = 0; b < lines / 100; b++) {
    await t.server.spool.append(
      Array.from({ length: 100 }, (_, i) => ({
        environmentId: envId,
        nodeId: 1,
        hostIdentifier: 'h',
        hostname: 'h',
        logType: 'result' as const,
        name: 'q',
        line: JSON.stringify({ name: 'q', sink: name, i: b * 100 + i }),
      })),
    );
  }
  const ids = (await db().selectFrom('log_spool').select('id').where('line', 'like', `%"sink":"${name}"%`).orderBy('id').execute()).map(
    (r) => Number(r.id),
  );
  expect(ids).toHaveLength(lines);
  return { sink, ids };
}

async function cursor(sinkId: number): Promise<{ id: number; delivered: number; owner: string }> {
  const s = await db().selectFrom('sink_state').selectAll().where('sink_id', '=', sinkId).executeTakeFirstOrThrow();
  return { id: Number(s.cursor_id), delivered: Number(s.delivered), owner: s.lease_owner };
}

const owner = (tag: string) => `${hostname()}:${process.pid}:${tag}`;
const batchOf = (ids: number[], k: number) => ids.slice(k * 100, k * 100 + 100);
/** The send whose first entry is batch k's. */
const callOf = (calls: Call[], ids: number[], k: number, nth = 0) => calls.filter((c) => c.ids[0] === batchOf(ids, k)[0])[nth];

beforeAll(async () => {
  t = await startTestServer({ devNodes: 2 });
  admin = await t.login('admin');
  envId = (await db().selectFrom('environments').select('id').where('name', '=', 'prod').executeTakeFirstOrThrow()).id;
  // This test's runners are the only ones.
  await t.server.delivery.stop(0);
});

afterAll(async () => {
  await t?.close();
});

describe('batches in flight', () => {
  it(`sends ${DEFAULT_IN_FLIGHT} at once; the cursor moves only over acknowledged batches just after it; a failed one is retried alone while later ones wait`, async () => {
    const { dest, calls } = handDestination();
    const { sink, ids } = await sinkWith('pipe', 600);
    const start = (await cursor(sink.id)).id;
    const delivered: number[] = [];
    const r = new SinkRunner(hostFor(owner('a'), delivered), sink, dest);
    try {
      // Four batches out at once, in spool order; no fifth while four wait.
      await eventually(async () => (calls.length === 4 ? true : undefined), 'four sends');
      expect(calls.map((c) => c.ids)).toEqual([0, 1, 2, 3].map((k) => batchOf(ids, k)));

      // 2 and 3 acknowledged before 1: the cursor waits for 1.
      callOf(calls, ids, 1).answer();
      callOf(calls, ids, 2).answer();
      await eventually(
        async () => (r.flights.filter((f) => f.state === 'acknowledged').length === 2 ? true : undefined),
        '2 and 3 acknowledged',
      );
      expect(r.flights.map((f) => f.state)).toEqual(['sending', 'acknowledged', 'acknowledged', 'sending']);
      expect((await cursor(sink.id)).id).toBe(start);
      expect(calls).toHaveLength(4);

      // 1 acknowledged: the cursor moves over 1, 2 and 3 at once; 5 and 6 are sent.
      callOf(calls, ids, 0).answer();
      await eventually(async () => ((await cursor(sink.id)).id === batchOf(ids, 2)[99] ? true : undefined), 'the cursor after batch 3');
      expect((await cursor(sink.id)).delivered).toBe(300);
      await eventually(async () => (calls.length === 6 ? true : undefined), 'batches 5 and 6 sent');
      expect(calls.slice(4).map((c) => c.ids)).toEqual([4, 5].map((k) => batchOf(ids, k)));

      // 4 fails while 5 and 6 are acknowledged: they wait for it and are not sent again; 4 alone is.
      callOf(calls, ids, 3).fail('the destination is busy');
      callOf(calls, ids, 4).answer();
      callOf(calls, ids, 5).answer();
      await eventually(async () => (calls.length === 7 ? true : undefined), 'batch 4 sent again (after its backoff)');
      expect(calls[6].ids).toEqual(batchOf(ids, 3));
      expect(r.flights.map((f) => f.state)).toEqual(['sending', 'acknowledged', 'acknowledged']);
      const meanwhile = await cursor(sink.id);
      expect(meanwhile.id).toBe(batchOf(ids, 2)[99]);
      const state = await db().selectFrom('sink_state').selectAll().where('sink_id', '=', sink.id).executeTakeFirstOrThrow();
      expect(state.last_error).toBe('the destination is busy');

      // Only part of 4 taken: only its 10 failed entries are sent again.
      calls[6].answer({ retry: Array.from({ length: 10 }, (_, i) => ({ index: 90 + i, error: 'throttled' })) });
      await eventually(async () => (calls.length === 8 ? true : undefined), "batch 4's 10 failed entries sent again");
      expect(calls[7].ids).toEqual(batchOf(ids, 3).slice(90));
      expect((await cursor(sink.id)).id).toBe(batchOf(ids, 2)[99]);
      calls[7].answer();
      await eventually(async () => ((await cursor(sink.id)).id === ids[599] ? true : undefined), 'the cursor after batch 6');
      const end = await db().selectFrom('sink_state').selectAll().where('sink_id', '=', sink.id).executeTakeFirstOrThrow();
      expect(Number(end.delivered)).toBe(600);
      expect(end.retrying_since).toBe('');
      // Each entry reported delivered once, in spool order; no batch but 4 sent twice.
      expect(delivered).toEqual(ids);
      for (const k of [0, 1, 2, 4, 5]) expect(calls.filter((c) => c.ids.includes(batchOf(ids, k)[0]))).toHaveLength(1);
    } finally {
      await r.stop(0);
    }
  });

  it('a crash with batches out sends again, from the cursor, at most the in-flight limit of batches; the old process cannot move the cursor', async () => {
    const first = handDestination();
    const { sink, ids } = await sinkWith('crash', 300, { in_flight: 3 });
    const start = (await cursor(sink.id)).id;
    const a = new SinkRunner(hostFor(owner('a'), []), sink, first.dest);
    const b2: number[] = [];
    const second = handDestination();
    let b: SinkRunner | undefined;
    try {
      await eventually(async () => (first.calls.length === 3 ? true : undefined), 'three sends (in_flight 3)');
      // 2 and 3 acknowledged, 1 still out: this cursor is what a kill -9 leaves.
      first.calls[1].answer();
      first.calls[2].answer();
      await eventually(async () => (a.flights.filter((f) => f.state === 'acknowledged').length === 2 ? true : undefined), 'acknowledged');
      expect((await cursor(sink.id)).id).toBe(start);
      // The process is gone (its lease as good as expired): another takes the sink from the cursor.
      await db().updateTable('sink_state').set({ lease_owner: '', lease_until: 0 }).where('sink_id', '=', sink.id).execute();
      b = new SinkRunner(hostFor(owner('b'), b2), sink, second.dest);
      await eventually(async () => (second.calls.length === 3 ? true : undefined), 'the new holder sends from the cursor');
      // Sent again: the three batches that were out (2 and 3 had been acknowledged: duplicates).
      expect(second.calls.map((c) => c.ids)).toEqual([0, 1, 2].map((k) => batchOf(ids, k)));
      // The old one's last acknowledgement comes: it may not write the cursor.
      first.calls[0].answer();
      await eventually(async () => (a.delivering ? undefined : true), 'the old runner to let go');
      expect((await cursor(sink.id)).id).toBe(start);
      for (const c of second.calls) c.answer();
      await eventually(async () => ((await cursor(sink.id)).id === ids[299] ? true : undefined), 'the new holder delivered');
      expect((await cursor(sink.id)).delivered).toBe(300);
      expect(b2).toEqual(ids);
    } finally {
      await a.stop(0);
      await b?.stop(0);
    }
  });

  it('a destination that must stay ordered gets one batch at a time', async () => {
    const { dest, calls } = handDestination(1);
    const { sink, ids } = await sinkWith('ordered', 300);
    const r = new SinkRunner(hostFor(owner('o'), []), sink, dest);
    try {
      for (let k = 0; k < 3; k++) {
        await eventually(async () => (calls.length === k + 1 ? true : undefined), `send ${k + 1}`);
        expect(r.flights).toHaveLength(1);
        expect(calls[k].ids).toEqual(batchOf(ids, k));
        calls[k].answer();
      }
      await eventually(async () => ((await cursor(sink.id)).id === ids[299] ? true : undefined), 'all delivered');
    } finally {
      await r.stop(0);
    }
  });

  it('a backlog whose batches are cut by bytes, far from 100 entries, still goes out four batches at once', async () => {
    // Lines of 33-34 bytes and batches of at most 105 bytes: three lines a batch. A batch cut
    // short by bytes has more behind it, and the runner reads on instead of waiting for new entries.
    const { dest, calls } = handDestination(undefined, 105);
    const { sink, ids } = await sinkWith('bytes', 100);
    const r = new SinkRunner(hostFor(owner('b'), []), sink, dest);
    try {
      await eventually(async () => (calls.length === 4 ? true : undefined), 'four sends of three lines');
      expect(calls.map((c) => c.ids)).toEqual([0, 1, 2, 3].map((k) => ids.slice(k * 3, k * 3 + 3)));
      for (const c of calls.splice(0)) c.answer();
      await eventually(async () => (calls.length === 4 ? true : undefined), 'the next four');
      expect(calls.map((c) => c.ids)).toEqual([4, 5, 6, 7].map((k) => ids.slice(k * 3, k * 3 + 3)));
      for (const c of calls.splice(0)) c.answer();
      await eventually(async () => ((await cursor(sink.id)).id === ids[23] ? true : undefined), 'the cursor after eight batches');
    } finally {
      await r.stop(0);
    }
  });

  it('in_flight is checked per type: 400 naming it beyond the bound or for an ordered type; kept when valid', async () => {
    const add = (type: string, config: Record<string, unknown>) =>
      t.call('POST', '/api/v1/log-sinks', {
        token: admin,
        body: { name: `if-${type}-${Math.random().toString(36).slice(2, 8)}`, type, source: 'result', environment_id: envId, config },
      });
    const kafka = await add('kafka', { brokers: ['127.0.0.1:9092'], in_flight: 2 });
    expect(kafka.status).toBe(400);
    expect(JSON.stringify(kafka.body)).toContain('config.in_flight: a kafka sink sends one batch at a time');
    const syslog = await add('syslog', { url: 'tcp://127.0.0.1:514', in_flight: 4 });
    expect(syslog.status).toBe(400);
    const tooMany = await add('http', { url: 'http://127.0.0.1:9/in', in_flight: 17 });
    expect(tooMany.status).toBe(400);
    expect(JSON.stringify(tooMany.body)).toContain('config.in_flight: expected an integer from 1 to 16');
    expect((await add('http', { url: 'http://127.0.0.1:9/in', in_flight: 2.5 })).status).toBe(400);
    const ok = await add('elastic', { url: 'http://127.0.0.1:9', in_flight: 8 });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    const stored = await db().selectFrom('log_sinks').select('config').where('id', '=', ok.body.id).executeTakeFirstOrThrow();
    expect(JSON.parse(stored.config).in_flight).toBe(8);
    expect((await add('kafka', { brokers: ['127.0.0.1:9092'], in_flight: 1 })).status).toBe(200);
    expect((await add('logstash', { url: 'http://127.0.0.1:9/', in_flight: 4 })).status).toBe(200);
    expect((await add('logstash', { url: 'tcp://127.0.0.1:9', in_flight: 4 })).status).toBe(400);
  });
});

describe('reading a batch', () => {
  it('says whether it was cut by a bound (more may follow) or reached the end of the stream', async () => {
    const { sink, ids } = await sinkWith('reads', 300);
    const before = ids[0] - 1;
    const size = async (from: number, n: number) =>
      (await readBatch(db(), sink, from, n, 1 << 30)).rows.reduce((b, r) => b + Buffer.byteLength(r.row.line), 0);
    const read = async (after: number, maxEntries: number, maxBytes = 1 << 30) => {
      const b = await readBatch(db(), sink, after, maxEntries, maxBytes);
      return { ids: b.rows.map((r) => Number(r.row.id)), more: b.more };
    };
    // Cut by entries.
    expect(await read(before, 100)).toEqual({ ids: ids.slice(0, 100), more: true });
    // The stream's end, over several pages.
    expect(await read(before, 1000)).toEqual({ ids, more: false });
    expect(await read(ids[289], 1000)).toEqual({ ids: ids.slice(290), more: false });
    // Cut by bytes: three lines fit, the fourth does not.
    const three = await size(before, 3);
    expect(await read(before, 1000, three + 1)).toEqual({ ids: ids.slice(0, 3), more: true });
    // A line bigger than the bound is read alone; more follows it unless it is the last.
    expect(await read(ids[297], 1000, 1)).toEqual({ ids: [ids[298]], more: true });
    expect(await read(ids[298], 1000, 1)).toEqual({ ids: [ids[299]], more: false });
    // A full first page that reaches the bytes bound stops there.
    const hundred = await size(before, 100);
    expect(await read(before, 1000, hundred)).toEqual({ ids: ids.slice(0, 100), more: true });
  });
});
