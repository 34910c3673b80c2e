// Issue 30: the two binary searches over the spool's ids, on SQLite and PostgreSQL, against a
// thousand lines appended by the spool itself over 100 minutes of the server's clock: the lowest id
// from which an environment's lines (status and result together) fit a bytes bound, and the first
// id received at or after a time.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/api-server.js';
import { keepFromIdForBytes } from '../../src/server/services/logs/retention.js';
import { firstIdAtOrAfter } from '../../src/server/services/logs/time-bounds.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ devNodes: 20 });
}, 120_000);
afterAll(async () => t?.close());

it('bytes bound as an id, and time as an id', async () => {
  const db = t.server.store.db;
  const env = await db.selectFrom('environments').selectAll().where('name', '=', 'staging').executeTakeFirstOrThrow();
  const n = await db.selectFrom('nodes').select(['id', 'uuid', 'hostname']).where('environment_id', '=', env.id).executeTakeFirstOrThrow();
  const base = Date.now() - 100 * 60_000;
  const real = t.server.deps.now;
  try {
    for (let k = 0; k < 100; k++) {
      t.server.deps.now = () => new Date(base + k * 60_000);
      await t.server.spool.append(
        Array.from({ length: 10 }, (_, i) => ({
          environmentId: env.id,
          nodeId: n.id,
          hostIdentifier: n.uuid,
          hostname: n.hostname,
          logType: i % 3 ? 'result' : 'status',
          name: i % 3 ? 'q' : null,
          line: JSON.stringify({ k, i, pad: 'x'.repeat(100 + i) }),
        })),
      );
    }
  } finally {
    t.server.deps.now = real;
  }
  const bytesFrom = async (id: number) =>
    Number(
      (
        await db
          .selectFrom('log_spool')
          .select((eb) => eb.fn.sum<number>(eb.fn('length', ['line'])).as('b'))
          .where('environment_id', '=', env.id)
          .where('id', '>=', id)
          .executeTakeFirst()
      )?.b ?? 0,
    );
  const keep = await keepFromIdForBytes(db, env.id, 50_000);
  expect(await bytesFrom(keep)).toBeLessThanOrEqual(50_000);
  expect(await bytesFrom(keep - 1)).toBeGreaterThan(50_000);
  expect(await keepFromIdForBytes(db, env.id, 10_000_000)).toBe(0); // everything fits: nothing goes for bytes

  const at = new Date(base + 50 * 60_000).toISOString();
  const id = await firstIdAtOrAfter(db, at);
  const row = await db.selectFrom('log_spool').select(['received_at']).where('id', '=', id!).executeTakeFirstOrThrow();
  const before = await db
    .selectFrom('log_spool')
    .select(['received_at'])
    .where('id', '<', id!)
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirstOrThrow();
  expect(row.received_at).toBe(at);
  expect(before.received_at < at).toBe(true);
  expect(await firstIdAtOrAfter(db, new Date(Date.now() + 3600_000).toISOString())).toBeUndefined();
});
