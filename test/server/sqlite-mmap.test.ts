// Issue 31: every connection of the server reads the database through a memory map, so the pages
// it touched stay in memory where Linux drops unmapped file cache (store/sqlite-mmap.ts), and a
// read on the event loop never waits for the disk. Checked from the kernel's side: the process's
// own list of mappings names the database file once per connection that read it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CompiledQuery, sql } from 'kysely';
import { openSqlite, type Store } from '../../src/server/store/db.js';

// Skipped off Linux: /proc/self/maps, what this test reads, is Linux's, and so is the pageout it guards against.
describe.runIf(process.platform === 'linux')('SQLite: the database file is memory-mapped', () => {
  let dir: string;
  let path: string;
  let store: Store;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fleetctl-mmap-'));
    path = join(dir, 'fleet.db');
    store = await openSqlite(path);
  });
  afterAll(async () => {
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const mappingsOfDb = () =>
    readFileSync('/proc/self/maps', 'utf8')
      .split('\n')
      .filter((line) => line.endsWith(` ${path}`)).length;

  it('by the event loop, the agent writer and the admin readers alike', async () => {
    // A connection maps the file at its first read of a page there, not in the write-ahead log:
    // the schema the migrations wrote goes into the file first.
    await sql`pragma wal_checkpoint(TRUNCATE)`.execute(store.db);
    const count = 'select count(*) as n from sqlite_master';
    await sql.raw(count).execute(store.db);
    expect(mappingsOfDb()).toBe(1);
    await store.write([CompiledQuery.raw(count)]);
    expect(mappingsOfDb()).toBe(2);
    await sql.raw(count).execute(store.adminDb);
    expect(mappingsOfDb()).toBe(3);
  });
});
