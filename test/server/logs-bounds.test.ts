import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/api-server.js';
import { Spool } from '../../src/server/services/delivery/spool.js';
import { keepFromIdForBytes } from '../../src/server/services/logs/retention.js';
import { firstIdAtOrAfter } from '../../src/server/services/logs/time-bounds.js';

let t: TestServer;
beforeAll(async () => { t = await startTestServer({ devNodes: 20 }); }, 120_000);
afterAll(async () => t?.close());
it('bytes bound', async () => {
  const spool = new Spool(t.server.deps);
  const db = t.server.store.db;
  const env = await db.selectFrom('environments').selectAll().where('name', '=', 'prod').executeTakeFirstOrThrow();
  const n = await db.selectFrom('nodes').select(['id', 'uuid', 'hostname']).where('environment_id', '=', env.id).executeTakeFirstOrThrow();
  const base = Date.now() - 100 * 60_000;
  for (let k = 0; k < 100; k++) {
    t.server.deps.now = () => new Date(base + k * 60_000);
    await spool.append(Array.from({ length: 10 }, (_, i) => ({ environmentId: env.id, nodeId: n.id, hostIdentifier: n.uuid, hostname: n.hostname, logType: (i % 3 ? 'result' : 'status') as 'result', name: 'q', line: JSON.stringify({ k, i, pad: 'x'.repeat(100 + i) }) })));
  }
  const sumFrom = async (id: number) => Number((await db.selectFrom('log_spool').select((eb) => eb.fn.sum<number>(eb.fn('length', ['line'])).as('b')).where('environment_id', '=', env.id).where('id', '>=', id).executeTakeFirst())?.b ?? 0);
  const k = await keepFromIdForBytes(db, env.id, 50_000);
  console.log('keep', k, await sumFrom(k), await sumFrom(k - 1));
  expect(await sumFrom(k)).toBeLessThanOrEqual(50_000);
  expect(await sumFrom(k - 1)).toBeGreaterThan(50_000);
  const id = await firstIdAtOrAfter(db, new Date(base + 50 * 60_000).toISOString());
  const row = await db.selectFrom('log_spool').select(['id', 'received_at']).where('id', '=', id!).executeTakeFirst();
  const prev = await db.selectFrom('log_spool').select(['id', 'received_at']).where('id', '=', id! - 1).executeTakeFirst();
  console.log(id, row, prev);
  expect(row!.received_at).toBe(new Date(base + 50 * 60_000).toISOString());
  expect(prev!.received_at < row!.received_at).toBe(true);
});
