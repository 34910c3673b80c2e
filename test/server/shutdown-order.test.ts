// Shutdown order: the store closes last, after every background task that reads or writes it has
// ended. A task stopped while a run of it was still reading, and the store closed under it, showed
// as "log delivery failed (error): driver has already been destroyed" (or "The database connection
// is not open") when a server was stopped right after it started (the README's examples, Ctrl-C
// as soon as the server says it listens). Each test holds a task's read in flight, asks the task
// to stop, and checks that the stop ends only after that read did.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Kysely, KyselyPlugin } from 'kysely';
import { startTestServer, type TestServer } from '../helpers/api-server.js';
import { Delivery } from '../../src/server/services/delivery/delivery.js';
import { LogWatch } from '../../src/server/services/logs/follow.js';
import type { DB } from '../../src/server/store/schema.js';

let t: TestServer;

beforeAll(async () => {
  t = await startTestServer({ devNodes: 10 });
});

afterAll(async () => {
  await t?.close();
});

/** The admin connections with every read held until release(); `reading` resolves at the first one. */
function heldReads(): { db: Kysely<DB>; reading: Promise<void>; release: () => void } {
  let started!: () => void;
  const reading = new Promise<void>((r) => (started = r));
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const plugin: KyselyPlugin = {
    transformQuery: (a) => a.node,
    async transformResult(a) {
      started();
      await gate;
      return a.result;
    },
  };
  return { db: t.server.store.adminDb.withPlugin(plugin), reading, release };
}

/** Asks `stop` while a read is held, releases the read on the next turn; what ended first. */
async function orderOf(reading: Promise<void>, release: () => void, stop: () => Promise<void>): Promise<string[]> {
  await reading;
  const order: string[] = [];
  const stopped = stop().then(() => void order.push('stopped'));
  setImmediate(() => {
    order.push('read released');
    release();
  });
  await stopped;
  return order;
}

describe('stopping waits for the run in progress', () => {
  it("log delivery: stop() ends after the start's first reconcile, which was still reading", async () => {
    const { db, reading, release } = heldReads();
    const delivery = new Delivery(t.server.deps, db, t.server.spool, false);
    delivery.start();
    expect(await orderOf(reading, release, () => delivery.stop(0))).toEqual(['read released', 'stopped']);
  });

  it('log followers: close() resolves after the look at the spool in progress', async () => {
    const { db, reading, release } = heldReads();
    const watch = new LogWatch(db);
    // A follower waiting makes the watch look at the spool (every POLL_MS): that look is held.
    const waiting = watch.wait(1, Number.MAX_SAFE_INTEGER, 600_000);
    expect(await orderOf(reading, release, () => watch.close())).toEqual(['read released', 'stopped']);
    await waiting;
  });
});
