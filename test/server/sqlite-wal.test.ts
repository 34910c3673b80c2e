// Issue 31: under a steady stream of writes SQLite's write-ahead log never started over with
// PASSIVE checkpoints alone, so it grew as long as agents wrote, and the commit that finally
// started it over truncated hundreds of MB on the event loop. The checkpoint thread now makes
// the log start over (RESTART) once it passes a bound: the file stays near that bound however
// much is written.
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { startCheckpointer, type Checkpointer } from '../../src/server/store/sqlite-checkpoint.js';

const PAGE = 4096;
const RESTART_FRAMES = 256; // 1 MiB of log
const ROUNDS = 24;
const MIN_TX_PER_ROUND = 64; // 8 pages each: at least 2 MiB of log a round
const MAX_TX_PER_ROUND = 256;

const dirs: string[] = [];
const threads: Checkpointer[] = [];
afterEach(async () => {
  for (const t of threads.splice(0)) await t.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A WAL database as the server opens one (no automatic checkpoint), with a table of page-sized rows. */
function walDb() {
  const dir = mkdtempSync(join(tmpdir(), 'fleetctl-wal-'));
  dirs.push(dir);
  const path = join(dir, 'wal.db');
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('wal_autocheckpoint = 0');
  // A RESTART holds writers back while it finishes: this writer waits for it as the server's do.
  db.pragma('busy_timeout = 5000');
  db.exec('create table t (id integer primary key, v blob)');
  const insert = db.prepare('insert into t (v) values (?)');
  /** `n` rows of about a page each, in one transaction: about `n` frames of log. */
  const pages = db.transaction((n: number) => {
    for (let k = 0; k < n; k++) insert.run(Buffer.alloc(PAGE - 64, k % 251));
  });
  return { path, db, insert, pages };
}

describe('SQLite WAL under a steady stream of writes', () => {
  it('starts the log over past its bound, so the WAL file stays small while writes never pause', async () => {
    const { path, db, insert } = walDb();
    // Eight pages per transaction, rewritten in place so the database itself stays small.
    const write = db.transaction((round: number, i: number) => {
      for (let k = 0; k < 8; k++) insert.run(Buffer.alloc(PAGE - 64, (round + i + k) % 251));
      db.prepare('delete from t where id <= (select max(id) - 64 from t)').run();
    });
    const cp = startCheckpointer(path, (m) => expect.fail(m), { intervalMs: 0, restartFrames: RESTART_FRAMES });
    threads.push(cp);

    let written = 0;
    const modes = new Set<string>();
    // A tick that finds this connection inside a transaction gives up its RESTART until the next
    // (by design: writers are never held for a busy checkpoint), and the log grows a round more.
    let missed = 0;
    let longestMiss = 0;
    for (let round = 0; round < ROUNDS; round++) {
      // The checkpoint runs while this connection keeps writing, as agents do.
      let ticked = false;
      const tick = cp.tick().then((t) => {
        ticked = true;
        modes.add(t.mode);
        missed = t.mode === 'RESTART' ? 0 : missed + 1;
        longestMiss = Math.max(longestMiss, missed);
      });
      for (let i = 0; (i < MIN_TX_PER_ROUND || !ticked) && i < MAX_TX_PER_ROUND; i++) {
        write(round, i);
        written += 8;
        await new Promise((r) => setImmediate(r));
      }
      await tick;
    }
    db.close();
    const walBytes = statSync(`${path}-wal`, { throwIfNoEntry: false })?.size ?? 0;
    // At least ROUNDS x 2 MiB went through the log; without restarts the file holds all of it.
    expect(written * PAGE).toBeGreaterThan(ROUNDS * 2 * 1024 * 1024);
    expect(modes).toContain('RESTART');
    // Bound: the restart mark plus what two rounds at most can write, and a round more for each
    // tick in a row that gave up its RESTART (CI of 339a144, under load: one such tick, 21.7 MB
    // against the 20.0 MB of two rounds); and far less than what went through the log.
    expect(walBytes).toBeLessThan((RESTART_FRAMES + (2 + longestMiss) * MAX_TX_PER_ROUND * 9) * (PAGE + 24));
    expect(walBytes).toBeLessThan((written * PAGE) / 2);
  });
});

describe('the RESTART and a busy disk', () => {
  it('puts the RESTART off while the PASSIVE before it is slow, until the log passes four times its bound', async () => {
    const { path, db, pages } = walDb();
    const timed: string[] = [];
    // Every PASSIVE counts as slow (over 0 ms): the disk is "busy" throughout.
    const cp = startCheckpointer(path, (m) => expect.fail(m), {
      intervalMs: 0,
      restartFrames: RESTART_FRAMES,
      slowPassiveMs: -1,
      onTiming: (mode, ms) => {
        expect(ms).toBeGreaterThanOrEqual(0);
        timed.push(mode);
      },
    });
    threads.push(cp);

    // Past the bound but under four times it: copied back, not restarted.
    pages(RESTART_FRAMES * 2);
    const put = await cp.tick();
    expect(put).toMatchObject({ mode: 'PASSIVE', deferred: true });
    expect(put.log).toBeGreaterThan(RESTART_FRAMES);
    expect(put.log).toBeLessThan(RESTART_FRAMES * 4);
    expect(put.timings.map(([m]) => m)).toEqual(['PASSIVE', 'PASSIVE']);
    // Alone, this writer starts the log over itself once all of it is copied back; under agents'
    // writes the log grows instead. Either way, once it passes four times its bound:
    pages(RESTART_FRAMES * 5);
    const forced = await cp.tick();
    expect(forced.log).toBeGreaterThan(RESTART_FRAMES * 4);
    expect(forced).toMatchObject({ mode: 'RESTART', deferred: false });
    expect(forced.timings.map(([m]) => m)).toEqual(['PASSIVE', 'PASSIVE', 'RESTART']);
    // Started over: the next write goes to the start of the log.
    pages(8);
    expect((await cp.tick()).log).toBeLessThan(RESTART_FRAMES);
    expect(timed).toEqual(['PASSIVE', 'PASSIVE', 'PASSIVE', 'PASSIVE', 'RESTART', 'PASSIVE']);
    db.close();
  });

  it('restarts at once when the PASSIVE before it was quick', async () => {
    const { path, db, pages } = walDb();
    pages(RESTART_FRAMES * 2);
    const cp = startCheckpointer(path, (m) => expect.fail(m), { intervalMs: 0, restartFrames: RESTART_FRAMES, slowPassiveMs: 60_000 });
    threads.push(cp);
    expect(await cp.tick()).toMatchObject({ mode: 'RESTART', deferred: false });
    db.close();
  });
});
