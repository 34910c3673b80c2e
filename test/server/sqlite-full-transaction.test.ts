// A transaction that runs out of space on SQLite (issue 18, found on a real full tmpfs): SQLite
// ends the transaction itself on SQLITE_FULL, and the ROLLBACK that follows used to fail with
// "cannot rollback - no transaction is active", which replaced the real error, so the server
// reported every failed check-in flush as a bug instead of as the database being out of space.
// Here the page limit stands in for the full disk; the real one is described in docs/api.md.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { openSqlite, type Store } from '../../src/server/store/db.js';
import { dbFault } from '../../src/server/lib/db-errors.js';

describe('SQLite: a transaction that runs out of space', () => {
  let dir: string;
  let store: Store;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fleetctl-full-'));
    store = await openSqlite(join(dir, 'fleet.db'));
  });
  afterAll(async () => {
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  // Both doors' connections: the agent door's `db`, and the admin door's, whose transactions run
  // on the same SQLite connection through store/sqlite-thread.ts.
  for (const which of ['db', 'adminDb'] as const) {
    it(`${which}: fails with the out-of-space error, not a failed ROLLBACK, and works again afterwards`, async () => {
      const db = store[which];
      await sql`create table if not exists ballast (b blob)`.execute(store.db);
      await sql`delete from ballast`.execute(store.db);
      const pages = Number((await sql<{ page_count: number }>`pragma page_count`.execute(store.db)).rows[0].page_count);
      await sql.raw(`pragma max_page_count = ${pages + 2}`).execute(store.db);
      const err = await db
        .transaction()
        .execute(async (tx) => {
          for (let i = 0; i < 50; i++) await sql`insert into ballast (b) values (${randomBytes(5000)})`.execute(tx);
        })
        .then(
          () => undefined,
          (e: unknown) => e as Error,
        );
      expect(err?.message).toMatch(/full/);
      expect(err?.message).not.toMatch(/rollback/);
      expect(dbFault(err)).toBe('no_space');
      await sql`pragma max_page_count = 1073741823`.execute(store.db);
      await db.transaction().execute(async (tx) => {
        await sql`insert into ballast (b) values (${randomBytes(5000)})`.execute(tx);
      });
      expect(Number((await sql<{ n: number }>`select count(*) as n from ballast`.execute(store.db)).rows[0].n)).toBe(1);
    });
  }
});
