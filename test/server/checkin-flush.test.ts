// A flush of the check-ins (the agent door's flushCheckins, the shutdown's last write) ends once
// every check-in recorded before it is written, even while the timer's write of an earlier batch
// is under way: that write takes the batch away before it commits, and a flush that found nothing
// pending used to return at once (CI, PostgreSQL: a check-in flushed, and the next list still in
// the order before it).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CompiledQuery } from 'kysely';
import { startTestServer, type TestServer } from '../helpers/api-server.js';
import { CheckinBatcher } from '../../src/server/services/agents/checkins.js';
import { writeInTransaction } from '../../src/server/store/db.js';

describe('the check-in flush', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ devNodes: 3 });
  }, 180_000);
  afterAll(async () => t?.close());

  it('ends after the write under way, with what it held written', async () => {
    const deps = t.server.deps;
    const node = await deps.db.selectFrom('node_seen').select(['node_id', 'bytes_received']).orderBy('node_id').executeTakeFirstOrThrow();
    const events: string[] = [];
    let entered!: () => void;
    const writeBegun = new Promise<void>((r) => (entered = r));
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const write = async (statements: CompiledQuery[]) => {
      entered();
      await gate;
      const r = await (deps.write ?? ((s: CompiledQuery[]) => writeInTransaction(deps.db, s)))(statements);
      events.push('written');
      return r;
    };
    // One node pending is a full batch: the timer's write begins at once, and waits at the gate.
    const batcher = new CheckinBatcher({ ...deps, write }, { intervalMs: 3_600_000, maxNodes: 1 });
    batcher.start();
    batcher.record(node.node_id, { bytes: 7 });
    await writeBegun;
    const flushed = batcher.flush().then(() => events.push('flushed'));
    setImmediate(open);
    await flushed;
    expect(events).toEqual(['written', 'flushed']);
    const after = await deps.db
      .selectFrom('node_seen')
      .select('bytes_received')
      .where('node_id', '=', node.node_id)
      .executeTakeFirstOrThrow();
    expect(Number(after.bytes_received)).toBe(Number(node.bytes_received) + 7);
    await batcher.stop();
  });
});
