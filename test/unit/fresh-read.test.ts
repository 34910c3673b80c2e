// lib/fresh-read.ts: callers share a read only when it started after they asked (the change
// counters every admin request reads; replicas.test.ts checks the same through real replicas).
import { describe, expect, it } from 'vitest';
import { freshShared } from '../../src/server/lib/fresh-read.js';

/** A read whose answers the test gives: the value is the number of reads started so far. */
function controlled() {
  const pending: { resolve: (v: number) => void; reject: (e: Error) => void }[] = [];
  let started = 0;
  const read = freshShared(
    () =>
      new Promise<number>((resolve, reject) => {
        started++;
        pending.push({ resolve: () => resolve(started), reject });
      }),
  );
  const settle = async (fail = false) => {
    const p = pending.shift()!;
    if (fail) p.reject(new Error('database down'));
    else p.resolve(0);
    // Let the queued read start.
    for (let i = 0; i < 5; i++) await Promise.resolve();
  };
  return { read, settle, started: () => started };
}

describe('freshShared', () => {
  it('a caller arriving while a read is on its way gets the next read, shared with the others arriving then', async () => {
    const c = controlled();
    const first = c.read();
    const [x, y, z] = [c.read(), c.read(), c.read()];
    expect(c.started()).toBe(1);
    await c.settle();
    expect(await first).toBe(1);
    expect(c.started()).toBe(2); // one read for the three waiting, started after the first ended
    await c.settle();
    expect(await Promise.all([x, y, z])).toEqual([2, 2, 2]);
    // Nothing on its way: the next caller reads at once.
    const later = c.read();
    expect(c.started()).toBe(3);
    await c.settle();
    expect(await later).toBe(3);
  });

  it('a failed read fails only its own callers; the queued read still runs', async () => {
    const c = controlled();
    const first = c.read();
    const second = c.read();
    await c.settle(true);
    await expect(first).rejects.toThrow('database down');
    expect(c.started()).toBe(2);
    await c.settle();
    expect(await second).toBe(2);
  });
});
