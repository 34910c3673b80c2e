// The spool's commit spacing (issue 31): commits of one process start at most every
// COMMIT_SPACING_MS, so appends arriving within it of the last commit wait and commit together
// (what costs is the commit, not its lines), an append after a quiet spell commits on the next
// turn, and a shutdown's drain commits a waiting group at once. The clock (setTimeout and
// performance.now) is faked, so the test does not depend on how fast the machine is; turns are
// real.
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/api-server.js';
import { COMMIT_SPACING_MS, Spool, type SpoolInput } from '../../src/server/services/delivery/spool.js';

let t: TestServer;
let entry: (tag: string) => SpoolInput;
beforeAll(async () => {
  t = await startTestServer();
  const db = t.server.store.db;
  const env = await db.selectFrom('environments').select('id').orderBy('id').executeTakeFirstOrThrow();
  const node = await db
    .selectFrom('nodes')
    .select(['id', 'uuid', 'hostname'])
    .where('environment_id', '=', env.id)
    .executeTakeFirstOrThrow();
  entry = (tag) => ({
    environmentId: env.id,
    nodeId: node.id,
    hostIdentifier: node.uuid,
    hostname: node.hostname,
    logType: 'status',
    severity: 0,
    line: JSON.stringify({ tag }),
  });
});
afterAll(async () => t?.close());
afterEach(() => vi.useRealTimers());

const turns = async (n: number) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

/** The tags committed, a commit a list, as the spool reports its commits. */
function commits(spool: Spool): { ids: number[][]; tags: () => Promise<string[][]> } {
  const ids: number[][] = [];
  let last = 0;
  spool.on('committed', (_streams, maxId) => {
    ids.push([last, maxId]);
    last = maxId;
  });
  return {
    ids,
    tags: async () => {
      const out: string[][] = [];
      const rows = await t.server.store.db
        .selectFrom('log_spool')
        .select(['id', 'line'])
        .where('line', 'like', '{"tag":"spacing-%')
        .orderBy('id')
        .execute();
      for (const [from, to] of ids) out.push(rows.filter((r) => r.id > from && r.id <= to).map((r) => JSON.parse(r.line).tag));
      return out;
    },
  };
}

describe('spool commit spacing', () => {
  it('commits the first append on the next turn; appends within the spacing wait and commit together; drain commits a waiting group at once', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    const spool = new Spool(t.server.deps);
    const seen = commits(spool);
    let done = 0;
    const track = (p: Promise<void>) => p.then(() => done++);

    // After a quiet spell: committed on the next turn, no timer needed.
    await track(spool.append([entry('spacing-a')]));
    expect(seen.ids.length).toBe(1);

    // Within the spacing: b and c (appended turns apart) wait for it, and commit in one transaction.
    const b = track(spool.append([entry('spacing-b')]));
    await turns(5);
    const c = track(spool.append([entry('spacing-c')]));
    await turns(5);
    expect(done).toBe(1);
    expect(seen.ids.length).toBe(1);
    vi.advanceTimersByTime(COMMIT_SPACING_MS - 1);
    await turns(5);
    expect(done).toBe(1);
    vi.advanceTimersByTime(1);
    await Promise.all([b, c]);
    expect(seen.ids.length).toBe(2);

    // A shutdown does not wait out the spacing.
    const d = track(spool.append([entry('spacing-d')]));
    await turns(5);
    expect(done).toBe(3);
    await spool.drain();
    await d;
    expect(done).toBe(4);

    expect(await seen.tags()).toEqual([['spacing-a'], ['spacing-b', 'spacing-c'], ['spacing-d']]);
  });
});
