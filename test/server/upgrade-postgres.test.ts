// Issue 27, point 6, on PostgreSQL (test/e2e/operations.test.ts does the same on SQLite with
// `server backup`): the README's backup and upgrade steps with the built CLI, real server processes
// and PostgreSQL's own tools. `pg_dump` of a live database while agents check in, restored with the
// README's `pg_restore --clean --if-exists` over a database changed since; `server migrate` of a
// database an older release left; a schema a newer release migrated refused in one line.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { Kysely, Migrator, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { Cli, DEV_PASSWORD, startServerProcess, type ServerProcess } from '../helpers/cli.js';
import { eventually } from '../helpers/osquery-agent.js';
import { testDatabaseUrl } from '../helpers/test-db.js';
import { migrationProvider } from '../../src/server/store/migrations.js';
import pkg from '../../package.json' with { type: 'json' };

describe('PostgreSQL: backup with pg_dump and pg_restore, migrate, a newer schema', () => {
  let dir: string;
  const clis: Cli[] = [];
  const servers: ServerProcess[] = [];
  const newCli = () => {
    const c = new Cli();
    clis.push(c);
    return c;
  };
  const serve = async (args: string[], input?: string) => {
    const s = await startServerProcess(args, input === undefined ? {} : { input });
    servers.push(s);
    return s;
  };
  /** A Kysely on the URL for what the CLI cannot do: a schema left at an older release's. */
  const raw = (url: string) =>
    new Kysely<unknown>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: url, max: 1 }) }) });
  const nodesOf = async (c: Cli, env: string) => {
    const r = await c.run(['nodes', 'list', '--env', env, '--all', '-o', 'json']);
    expect(r.exitCode, r.stderr).toBe(0);
    return (JSON.parse(r.stdout) as unknown[]).length;
  };

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'fleetctl-pg-ops-'));
  });
  afterAll(async () => {
    for (const s of servers) await s.stop().catch(() => undefined);
    for (const c of clis) c.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  it('pg_dump of the live database while agents check in; pg_restore --clean --if-exists brings back what was deleted since', async () => {
    const url = (await testDatabaseUrl())!;
    const s = await serve(['--dev', '--dev-password', DEV_PASSWORD, '--dev-nodes', '50', '--dev-agents', '3', '--db', url]);
    await eventually(
      () => Promise.resolve(/Simulated agents: 3 of 3 enrolled/.test(s.output()) ? true : undefined),
      'the simulated agents enrolled',
    );
    const c = newCli();
    await c.login(s.url);
    const staging = await nodesOf(c, 'staging');
    expect(staging).toBeGreaterThan(0);
    // The README's command, while the server runs and its agents write.
    const dump = join(dir, 'fleet.dump');
    const d = await execa('pg_dump', ['--format=custom', '--file', dump, url], { reject: false });
    expect(d.exitCode, d.stderr).toBe(0);
    expect(statSync(dump).size).toBeGreaterThan(0);
    // A change after the backup, to be undone by the restore.
    const del = await c.run(['env', 'delete', 'staging', '--yes']);
    expect(del.exitCode, del.stderr).toBe(0);
    expect((await c.run(['env', 'show', 'staging'])).exitCode).toBe(3);
    await s.stop();
    // Restored as the README says: every replica stopped, into the same database.
    const r = await execa('pg_restore', ['--clean', '--if-exists', '--dbname', url, dump], { reject: false });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).toBe('');
    const again = await serve(['--db', url]);
    const c2 = newCli();
    await c2.login(again.url);
    expect(await nodesOf(c2, 'staging')).toBe(staging);
    const v = await c2.run(['version', '-o', 'json']);
    expect(v.exitCode, v.stderr).toBe(0);
    await again.stop();
  });

  it('migrate brings a database an older release left to this schema, as a step of its own; then nothing to apply', async () => {
    const url = (await testDatabaseUrl())!;
    const names = Object.keys(await migrationProvider('postgres').getMigrations()).sort();
    const previous = names[names.indexOf('015_production') - 1];
    const k = raw(url);
    const m = await new Migrator({ db: k, provider: migrationProvider('postgres') }).migrateTo(previous);
    expect(m.error).toBeUndefined();
    await k.destroy();
    const later = names.slice(names.indexOf('015_production'));
    const c = newCli();
    const dry = await c.run(['server', 'migrate', '--db', url, '--dry-run']);
    expect(dry.exitCode, dry.stderr).toBe(0);
    expect(dry.stdout).toBe(`Would apply ${later.length} migration(s) to the schema at ${previous}: ${later.join(', ')}\n`);
    const run = await c.run(['server', 'migrate', '--db', url]);
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.stdout).toBe(`Applied ${later.length} migration(s): ${later.join(', ')}; the schema is now ${names.at(-1)}.\n`);
    expect((await c.run(['server', 'migrate', '--db', url])).stdout).toBe(
      `The schema is up to date (${names.at(-1)}): nothing to apply.\n`,
    );
    // The migrated database is one a server starts on.
    const s = await serve(['--db', url, '--admin-password-stdin', '--create-env', 'prod'], DEV_PASSWORD);
    await newCli().login(s.url);
    await s.stop();
  });

  it('a database a newer release migrated: the server and migrate refuse it in one line, changing nothing', async () => {
    const url = (await testDatabaseUrl())!;
    const c = newCli();
    expect((await c.run(['server', 'migrate', '--db', url])).exitCode).toBe(0);
    const k = raw(url);
    await sql`insert into kysely_migration (name, timestamp) values ('999_from_the_future', '2030-01-01T00:00:00.000Z')`.execute(k);
    const tables = async () =>
      (await sql<{ n: number }>`select count(*)::int as n from information_schema.tables where table_schema = 'public'`.execute(k)).rows[0]
        .n;
    const before = await tables();
    const line = `error: the database's schema is newer than this fleetctl ${pkg.version} knows (its migration 999_from_the_future is not one of ours): run the release that upgraded it, or restore the backup taken before the upgrade\n`;
    for (const args of [
      ['server', '--db', url, '--listen', '127.0.0.1:0', '--workers', '1'],
      ['server', 'migrate', '--db', url],
    ]) {
      const r = await c.run(args);
      expect(r.exitCode, args.join(' ')).toBe(1);
      expect(r.stderr).toBe(line);
    }
    expect(await tables()).toBe(before);
    await k.destroy();
  });
});
