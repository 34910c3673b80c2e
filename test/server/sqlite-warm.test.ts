// Issue 31: the event loop read pages of the database from the disk (major faults through the
// map) when the machine had dropped them, and stopped for as long as the disk took. The warmer
// reads the whole file in the background; this checks with the kernel (fincore: which pages of
// a file are in the page cache) that a file whose pages were dropped is cached again after a pass.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, openSync, fsyncSync, closeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { startWarmer, type Warmer } from '../../src/server/store/sqlite-warm.js';

const MiB = 1024 * 1024;
const dirs: string[] = [];
const warmers: Warmer[] = [];
afterEach(async () => {
  for (const w of warmers.splice(0)) await w.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** Bytes of the file in the page cache, as the kernel counts them. */
function cachedBytes(path: string): number {
  const r = spawnSync('fincore', ['--bytes', '--noheadings', '--output', 'RES', path], { encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  return Number(r.stdout.trim());
}

/** Asks the kernel to drop the file's cached pages (posix_fadvise DONTNEED, through GNU dd). */
function dropCached(path: string): void {
  const r = spawnSync('dd', [`if=${path}`, 'iflag=nocache', 'count=0', 'status=none'], { encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
}

// Skipped off Linux: fincore and the page cache it reads are Linux's; elsewhere there is nothing to check with.
describe.runIf(process.platform === 'linux')('the database file kept in the page cache', () => {
  it('reads every page of the file, up to its bound, into the page cache again', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fleetctl-warm-'));
    dirs.push(dir);
    const path = join(dir, 'main.db');
    writeFileSync(path, randomBytes(24 * MiB));
    const fd = openSync(path, 'r+');
    fsyncSync(fd); // dirty pages are never dropped
    closeSync(fd);
    dropCached(path);
    expect(cachedBytes(path)).toBeLessThan(2 * MiB);

    const w = startWarmer(path, { periodMs: 0 });
    warmers.push(w);
    expect(await w.pass()).toBe(24 * MiB);
    expect(cachedBytes(path)).toBeGreaterThanOrEqual(24 * MiB);

    // Past the bound nothing is read (what the kernel then caches by reading ahead is its own).
    dropCached(path);
    const bounded = startWarmer(path, { periodMs: 0, maxBytes: 8 * MiB });
    warmers.push(bounded);
    expect(await bounded.pass()).toBe(8 * MiB);
    expect(cachedBytes(path)).toBeGreaterThanOrEqual(8 * MiB);
  });

  it('reports a file it cannot read, and reads it on the next pass', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fleetctl-warm-'));
    dirs.push(dir);
    const path = join(dir, 'later.db');
    const w = startWarmer(path, { periodMs: 0 });
    warmers.push(w);
    await expect(w.pass()).rejects.toThrow(/ENOENT/);
    writeFileSync(path, Buffer.alloc(3 * MiB + 5, 1));
    expect(await w.pass()).toBe(3 * MiB + 5);
  });
});
