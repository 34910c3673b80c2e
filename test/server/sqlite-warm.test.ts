// Issue 31: the event loop read pages of the database from the disk (major faults through its
// map) when the machine had paged them out, and stopped for as long as the disk took. The machine
// (DAMON's reclaim) pages out only file pages no process maps, so a serving `fleetctl server`
// walks every page of its database through a map it keeps open. This checks it with the kernel:
// /proc/PID/smaps (how much of the file the server maps) and fincore (which pages are cached)
// after a cache drop that spares mapped pages only, as the reclaim does.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { afterEach, describe, expect, it } from 'vitest';
import { startServerProcess, type ServerProcess } from '../helpers/cli.js';
import { eventually } from '../helpers/osquery-agent.js';

const MiB = 1024 * 1024;
const PASSWORD = 'warm-test-password-1';
const dirs: string[] = [];
const servers: ServerProcess[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.stop();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** Bytes of the file in the page cache, as the kernel counts them. */
function cachedBytes(path: string): number {
  const r = spawnSync('fincore', ['--bytes', '--noheadings', '--output', 'RES', path], { encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  return Number(r.stdout.trim());
}

/** Asks the kernel to drop the file's cached pages (posix_fadvise DONTNEED, through GNU dd): it leaves mapped ones. */
function dropCached(path: string): void {
  const r = spawnSync('dd', [`if=${path}`, 'iflag=nocache', 'count=0', 'status=none'], { encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
}

/** The most of the file any one mapping of process `pid` has resident (smaps' Rss), in bytes. */
function mappedBytes(pid: number, path: string): number {
  let most = 0;
  for (const block of readFileSync(`/proc/${pid}/smaps`, 'utf8').split(/\n(?=[0-9a-f]+-[0-9a-f]+ )/)) {
    if (!block.split('\n', 1)[0].endsWith(` ${path}`)) continue;
    const rss = /^Rss:\s+(\d+) kB$/m.exec(block);
    most = Math.max(most, rss ? Number(rss[1]) * 1024 : 0);
  }
  return most;
}

const serve = async (db: string) => {
  const s = await startServerProcess(['--db', db, '--admin-password-stdin'], { input: PASSWORD });
  servers.push(s);
  return s;
};

// Skipped off Linux: smaps, fincore and the page cache they read are Linux's; elsewhere there is nothing to check with.
describe.runIf(process.platform === 'linux')('the database file kept mapped', () => {
  it('maps every page of the database, so a cache drop leaves them cached', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fleetctl-warm-'));
    dirs.push(dir);
    const db = join(dir, 'fleet.db');
    await (await serve(db)).stop();
    servers.pop();

    // 24 MiB of rows the server itself never reads (b-tree and overflow pages alike), written back
    // into the file and dropped from the cache: only a walk of every page brings them back.
    const Database = createRequire(import.meta.url)('better-sqlite3') as typeof import('better-sqlite3');
    const before = statSync(db).size;
    const sqlite = new Database(db);
    sqlite.exec('create table warm_probe (id integer primary key, small blob, large blob)');
    const insert = sqlite.prepare('insert into warm_probe (small, large) values (randomblob(200), randomblob(?))');
    sqlite.transaction(() => {
      for (let i = 0; i < 3000; i++) insert.run(i % 3 === 0 ? 20_000 : 1_000);
    })();
    // Analysed here, or the server's start-up optimize (db.ts) would analyse the new table and read it all.
    sqlite.exec('analyze warm_probe');
    sqlite.pragma('wal_checkpoint(TRUNCATE)');
    sqlite.close();
    const probeBytes = statSync(db).size - before;
    expect(probeBytes).toBeGreaterThan(20 * MiB);
    dropCached(db);
    expect(cachedBytes(db)).toBeLessThan(2 * MiB);

    const server = await serve(db);
    const pid = server.proc.pid!;
    // The first walk runs at start, on a thread: waited for as the mapping it leaves.
    await eventually(async () => (mappedBytes(pid, db) >= probeBytes ? true : undefined), `${probeBytes} bytes of ${db} mapped`);
    dropCached(db);
    expect(cachedBytes(db)).toBeGreaterThanOrEqual(probeBytes);
  });
});
