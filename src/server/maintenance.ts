// Operating the database outside a running server (issue 27): a consistent copy of a live SQLite
// database (fleetctl server backup), and migrations applied as a step of their own
// (fleetctl server migrate).
import { closeSync, existsSync, openSync, rmSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { ServerSetupError } from './setup-error.js';
import {
  appliedMigrations,
  isPostgresUrl,
  loadSqlite,
  migrationNames,
  openSqlite,
  pendingMigrations,
  SchemaTooNewError,
  type Store,
} from './store/db.js';
import { SERVER_VERSION } from './version.js';

export interface BackupResult {
  source: string;
  out: string;
  bytes: number;
  schema: string;
  nodes: number;
  ms: number;
}

/**
 * Copies a SQLite database, live or not, into `out` with `VACUUM INTO`: one read transaction,
 * so the copy is the database as it was at one moment (WAL included) while the server goes on
 * writing; it is compacted and checked (quick_check) before this returns. `out` must not exist;
 * it is created 0600 (it holds secrets: enroll secrets, node keys, password hashes, TOTP seeds).
 */
export async function backupSqlite(dbPath: string, out: string, now: () => number = Date.now): Promise<BackupResult> {
  const source = resolve(dbPath);
  const target = resolve(out);
  if (!existsSync(source)) throw new ServerSetupError(`no database at ${source}`);
  if (source === target) throw new ServerSetupError('the backup cannot be the database itself');
  const Database = await loadSqlite();
  const t0 = now();
  // Created empty and private before SQLite writes into it (VACUUM INTO accepts an empty file).
  try {
    closeSync(openSync(target, 'wx', 0o600));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST')
      throw new ServerSetupError(`${target} already exists: give a new file name (a backup never overwrites)`);
    throw new ServerSetupError(`cannot create ${target}: ${(e as Error).message}`);
  }
  const db = new Database(source, { fileMustExist: true });
  try {
    db.pragma('busy_timeout = 10000');
    db.prepare('vacuum into ?').run(target);
  } catch (e) {
    rmSync(target, { force: true });
    throw new ServerSetupError(`backup of ${source} failed: ${(e as Error).message}`);
  } finally {
    db.close();
  }
  const copy = new Database(target, { readonly: true, fileMustExist: true });
  try {
    const check = copy.pragma('quick_check', { simple: true });
    if (check !== 'ok') throw new ServerSetupError(`the backup ${target} does not pass SQLite's quick_check: ${String(check)}`);
    const schema =
      (copy.prepare('select name from kysely_migration order by name desc limit 1').get() as { name?: string } | undefined)?.name ?? '';
    const nodes = Number((copy.prepare('select count(*) as n from nodes').get() as { n: number }).n);
    return { source, out: target, bytes: statSync(target).size, schema, nodes, ms: now() - t0 };
  } finally {
    copy.close();
  }
}

export interface MigrateResult {
  /** Applied now (or, with dryRun, those that would be). */
  migrations: string[];
  /** The schema the database is at afterwards (dryRun: now). */
  schema: string;
  dialect: 'sqlite' | 'postgres';
}

/**
 * Applies the migrations this release knows to an existing database and closes it; dryRun lists
 * them without a change. A database migrated by a newer release is refused (SchemaTooNewError).
 */
export async function migrateDatabase(db: string, o: { dryRun?: boolean; caFile?: string } = {}): Promise<MigrateResult> {
  const postgres = isPostgresUrl(db);
  if (!postgres && !existsSync(db))
    throw new ServerSetupError(`no database at ${resolve(db)} (a new database is created by the first start of fleetctl server)`);
  let store: Store;
  if (postgres) {
    const { openPostgres } = await import('./store/postgres.js');
    store = await openPostgres(db, { caFile: o.caFile, pool: 2, migrate: !o.dryRun });
  } else {
    store = await openSqlite(db, { migrate: !o.dryRun });
  }
  try {
    const applied = await appliedMigrations(store.db);
    const known = new Set(await migrationNames(store.dialect));
    const unknown = applied.filter((n) => !known.has(n));
    if (unknown.length)
      throw new SchemaTooNewError(
        `the database's schema is newer than this fleetctl ${SERVER_VERSION} knows (its migration ${unknown[unknown.length - 1]} is not one of ours): run the release that upgraded it`,
      );
    const migrations = o.dryRun ? await pendingMigrations(store.db, store.dialect) : store.migrated;
    return { migrations, schema: applied[applied.length - 1] ?? '', dialect: store.dialect };
  } finally {
    await store.close();
  }
}
