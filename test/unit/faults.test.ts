// The server's fault handling in isolation (issue 18): which errors are database trouble, how a
// background task backs off and recovers, and that an outage is a few log lines, not a flood.
import { describe, expect, it, vi } from 'vitest';
import { dbFault, storeClosed } from '../../src/server/lib/db-errors.js';
import { Faults } from '../../src/server/lib/faults.js';
import { Periodic } from '../../src/server/lib/periodic.js';

describe('dbFault', () => {
  it('classifies SQLite and PostgreSQL errors; anything else is not database trouble', () => {
    const e = (code: string, message = 'x') => Object.assign(new Error(message), { code });
    expect(dbFault(e('SQLITE_FULL'))).toBe('no_space');
    expect(dbFault(e('SQLITE_BUSY'))).toBe('busy');
    expect(dbFault(e('SQLITE_IOERR_SHORT_READ'))).toBe('unavailable');
    expect(dbFault(e('53100'))).toBe('no_space');
    expect(dbFault(e('57P01'))).toBe('unavailable');
    expect(dbFault(e('08006'))).toBe('unavailable');
    expect(dbFault(e('40P01'))).toBe('busy');
    expect(dbFault(e('ECONNREFUSED'))).toBe('unavailable');
    expect(dbFault(new Error('Connection terminated unexpectedly'))).toBe('unavailable');
    expect(dbFault(new Error('timeout exceeded when trying to connect'))).toBe('unavailable');
    expect(dbFault(e('23505'))).toBeUndefined(); // a unique violation is a bug, not an outage
    expect(dbFault(new TypeError('x is undefined'))).toBeUndefined();
    expect(dbFault(undefined)).toBeUndefined();
  });
});

describe('storeClosed', () => {
  it('knows what a query meets on a closed store (Kysely, better-sqlite3, node-postgres, our threads), nothing else', () => {
    expect(storeClosed(new Error('driver has already been destroyed'))).toBe(true);
    expect(storeClosed(new TypeError('The database connection is not open'))).toBe(true);
    expect(storeClosed(new Error('Cannot use a pool after calling end on the pool'))).toBe(true);
    expect(storeClosed(new Error('Client was closed and is not queryable'))).toBe(true);
    expect(storeClosed(Object.assign(new Error('the database thread ended'), { code: 'SQLITE_CANTOPEN' }))).toBe(true);
    expect(storeClosed(new Error('the database writer thread is closed'))).toBe(true);
    expect(storeClosed(new TypeError("Cannot read properties of undefined (reading 'id')"))).toBe(false);
    expect(storeClosed(Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' }))).toBe(false);
    expect(storeClosed('driver has already been destroyed')).toBe(false); // not an Error thrown by a driver
  });
});

describe('Faults', () => {
  it('logs the first fault of a kind at once, then one summary line with the count', () => {
    let t = 0;
    const lines: string[] = [];
    const f = new Faults(
      (l) => lines.push(l),
      () => t,
    );
    for (let i = 0; i < 1000; i++) f.report('agent log', new Error('Connection terminated unexpectedly'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^agent log failed \(database unavailable\): Connection terminated/);
    t = 10_000;
    f.summarise();
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatch(/failed 999 more times/);
    expect(f.counts.get('agent log\u0000unavailable')).toBe(1000);
    f.stop();
  });

  it('remembers a refused write for space for a while (PostgreSQL /healthz)', () => {
    let t = 0;
    const f = new Faults(
      () => undefined,
      () => t,
    );
    f.report('x', Object.assign(new Error('disk full'), { code: '53100' }));
    expect(f.recentlyOutOfSpace()).toBe(true);
    t = 60_000;
    expect(f.recentlyOutOfSpace()).toBe(false);
    f.stop();
  });
});

describe('Periodic', () => {
  it('a failing run is reported and retried with a doubling backoff; success restores the period; nothing throws', async () => {
    vi.useFakeTimers();
    try {
      const reported: string[] = [];
      const faults = new Faults((l) => reported.push(l));
      let fail = true;
      let runs = 0;
      const p = new Periodic(
        'flush',
        1000,
        async () => {
          runs++;
          if (fail) throw Object.assign(new Error('down'), { code: 'ECONNREFUSED' });
        },
        faults,
        8000,
      );
      p.start();
      await vi.advanceTimersByTimeAsync(1000);
      expect(runs).toBe(1);
      expect(p.delayMs).toBe(2000);
      await vi.advanceTimersByTimeAsync(2000);
      expect(runs).toBe(2);
      expect(p.delayMs).toBe(4000);
      await vi.advanceTimersByTimeAsync(4000);
      await vi.advanceTimersByTimeAsync(8000);
      expect(runs).toBe(4);
      expect(p.delayMs).toBe(8000); // capped
      fail = false;
      await vi.advanceTimersByTimeAsync(8000);
      expect(runs).toBe(5);
      expect(p.failing).toBe(false);
      expect(p.delayMs).toBe(1000);
      expect(reported[0]).toMatch(/^flush failed \(database unavailable\)/);
      await p.stop();
      expect(runs).toBe(6); // the final run at stop
      faults.stop();
    } finally {
      vi.useRealTimers();
    }
  });

  /** A task whose runs wait at a gate while one is closed (it starts closed), then record their end; run `failOn` throws. */
  function gatedTask(faults: Faults, failOn?: number) {
    const s = { runs: 0, events: [] as string[], open: () => {}, gate: undefined as Promise<void> | undefined };
    const close = () => void (s.gate = new Promise<void>((r) => (s.open = r)));
    const p = new Periodic(
      'flush',
      1000,
      async () => {
        const n = ++s.runs;
        const wait = s.gate;
        s.gate = undefined;
        await wait;
        s.events.push(`run ${n} done`);
        if (n === failOn) throw new Error('disk gone');
      },
      faults,
    );
    close();
    return { p, s, close };
  }

  it('runNow waits for the run in progress, then runs once more; a timer that fired meanwhile runs after it', async () => {
    vi.useFakeTimers();
    try {
      const faults = new Faults(() => undefined);
      const { p, s, close } = gatedTask(faults);
      p.start();
      await vi.advanceTimersByTimeAsync(1000); // run 1 begins and waits at the gate
      expect(s.runs).toBe(1);
      const now = p.runNow().then(() => s.events.push('runNow resolved'));
      await vi.advanceTimersByTimeAsync(0);
      expect(s.events).toEqual([]);
      s.open();
      await now;
      expect(s.events).toEqual(['run 1 done', 'run 2 done', 'runNow resolved']);
      // The timer goes on with its period.
      await vi.advanceTimersByTimeAsync(1000);
      expect(s.runs).toBe(3);
      // A timer that fires during runNow's own run is not lost.
      close();
      const again = p.runNow();
      await vi.advanceTimersByTimeAsync(1000); // the period ends while runNow's run waits
      expect(s.runs).toBe(4);
      s.open();
      await again;
      await vi.advanceTimersByTimeAsync(0);
      expect(s.runs).toBe(5);
      // A failing runNow throws to its caller and leaves the timer's period alone.
      const failing = new Periodic('x', 1000, () => Promise.reject(new Error('down')), faults);
      await expect(failing.runNow()).rejects.toThrow('down');
      expect(failing.failing).toBe(false);
      await p.stop(false);
      faults.stop();
    } finally {
      vi.useRealTimers();
    }
  });

  it('stop waits for the run in progress, then runs a final time; its failure is reported, not thrown', async () => {
    vi.useFakeTimers();
    try {
      const reported: string[] = [];
      const faults = new Faults((l) => reported.push(l));
      const { p, s } = gatedTask(faults, 2);
      p.start();
      await vi.advanceTimersByTimeAsync(1000); // run 1 begins and waits at the gate
      const stopped = p.stop().then(() => s.events.push('stopped'));
      await vi.advanceTimersByTimeAsync(0);
      expect(s.events).toEqual([]);
      s.open();
      await stopped;
      expect(s.events).toEqual(['run 1 done', 'run 2 done', 'stopped']);
      expect(reported.join('\n')).toMatch(/^flush failed.*disk gone/);
      // Stopped: the period no longer runs it.
      await vi.advanceTimersByTimeAsync(5000);
      expect(s.runs).toBe(2);
      faults.stop();
    } finally {
      vi.useRealTimers();
    }
  });
});
