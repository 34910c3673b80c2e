// Where each spooled entry sits in its streams (issue 28: a sink's lag, the backlog bound and the
// logs retention count from them): the insert reads the stream heads the same transaction
// upserted, so whatever groups commit, in any mix of environments and types, every stream's
// entries are numbered 0, 1, 2... in id order and each starts at the bytes before it, on both
// databases.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/api-server.js';
import type { SpoolInput, SpoolLogType } from '../../src/server/services/delivery/spool.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => t?.close());

describe('spool positions', () => {
  it('number every stream without gaps in id order, over concurrent groups of mixed environments and types, of one step, two, and a chunk a step', async () => {
    const db = t.server.store.db;
    const envs = (await db.selectFrom('environments').select('id').orderBy('id').limit(2).execute()).map((r) => r.id);
    expect(envs.length).toBe(2);
    const node = await db.selectFrom('nodes').select(['id', 'uuid', 'hostname']).executeTakeFirstOrThrow();
    const before = Number(
      (
        await db
          .selectFrom('log_spool')
          .select((eb) => eb.fn.max('id').as('m'))
          .executeTakeFirst()
      )?.m ?? 0,
    );
    const entry = (i: number, types: SpoolLogType[], pad = 0): SpoolInput => ({
      environmentId: envs[i % 2]!,
      nodeId: node.id,
      hostIdentifier: node.uuid,
      hostname: node.hostname,
      logType: types[i % types.length]!,
      name: 'positions_q',
      // Lines of different lengths (and a multi-byte character) so byte positions differ from counts.
      line: JSON.stringify({ i, pad: 'é'.repeat(i % 7), big: 'x'.repeat(pad) }),
    });
    // Rounds of groups (the appends of one turn commit together, the next turn's while it runs):
    // status and query lines only (no hook reads: one step); with result lines (the reports hook
    // reads first: two steps); and lines of 1.5 MB (a group of several chunks, a step each).
    const rounds: [SpoolLogType[], number][] = [
      [['status', 'query'], 0],
      [['result', 'status', 'query'], 0],
      [['status', 'result'], 1_500_000],
    ];
    for (const [round, [types, pad]] of rounds.entries())
      await Promise.all(
        Array.from({ length: pad ? 3 : 8 }, (_, k) =>
          t.server.spool.append([entry(round * 100 + k * 3, types, pad), entry(round * 100 + k * 3 + 1, types, pad)]),
        ),
      );
    // And one append of 40 lines: a chunk of more than 32 rows goes as one JSON parameter, not as
    // bound values (store/bound-rows.ts BOUND_ROWS).
    await t.server.spool.append(Array.from({ length: 40 }, (_, k) => entry(400 + k, ['status', 'result', 'query'], k * 10)));

    const rows = await db
      .selectFrom('log_spool')
      .select(['id', 'environment_id', 'log_type', 'line', 'tseq', 'tpos', 'eseq', 'epos'])
      .where('id', '>', before)
      .orderBy('id')
      .execute();
    expect(rows.length).toBe(16 + 16 + 6 + 40);
    const streams = await db.selectFrom('log_streams').select(['environment_id', 'log_type', 'entries', 'bytes']).execute();
    const head = (env: number, type: string) => streams.find((s) => Number(s.environment_id) === env && s.log_type === type)!;
    // Positions continue from wherever the streams stood (the demo's own entries, earlier tests).
    const next = new Map<string, { seq: number; pos: number }>();
    const expectNext = (key: string, seq: number, pos: number, bytes: number) => {
      const n = next.get(key) ?? { seq, pos };
      expect({ key, seq, pos }).toEqual({ key, seq: n.seq, pos: n.pos });
      next.set(key, { seq: n.seq + 1, pos: n.pos + bytes });
    };
    for (const r of rows) {
      const bytes = Buffer.byteLength(r.line, 'utf8');
      expectNext(`0/${r.log_type}`, Number(r.tseq), Number(r.tpos), bytes);
      expectNext(`${r.environment_id}/${r.log_type}`, Number(r.eseq), Number(r.epos), bytes);
    }
    // Each stream's head is where its last entry ends.
    for (const [key, n] of next) {
      const [env, type] = key.split('/');
      expect({ key, entries: Number(head(Number(env), type!).entries), bytes: Number(head(Number(env), type!).bytes) }).toEqual({
        key,
        entries: n.seq,
        bytes: n.pos,
      });
    }
  });
});
