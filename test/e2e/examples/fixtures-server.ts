// Fixtures of the `fleetctl server` examples: they run until Ctrl-C, on the fixed ports they
// name (8080, 9090) in a network namespace of their own, and write system paths
// (/var/lib/fleetctl) in a mount namespace whose /var is an overlay in the sandbox.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { expect } from 'vitest';
import Database from 'better-sqlite3';
import { Kysely, Migrator, SqliteDialect } from 'kysely';
import { migrationProvider } from '../../../src/server/store/migrations.js';
import { postgresBinDir } from '../../../scripts/pg-cluster.mjs';
import type { Fixture } from './types.js';
import type { Sandbox } from './world.js';

const PG_SCRIPT = join(import.meta.dirname, 'pg-db-internal.mjs');
const q = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;

/**
 * The PostgreSQL the deployment examples name, db.internal:5432 over TLS (role fleet, database
 * fleet), started inside the example's namespaces (its own /etc/hosts and loopback) with its CA
 * certificate where the example reads it; stopped afterwards.
 */
export function dbInternal(caPaths: (sb: Sandbox) => string[]): Pick<Fixture, 'namespaces' | 'prelude' | 'after'> {
  const state = (sb: Sandbox) => join(sb.root, 'pg.json');
  return {
    namespaces: ['mount', 'net'],
    prelude: (sb) =>
      `echo '127.0.0.1 db.internal' >> /etc/hosts && ${q(process.execPath)} ${q(PG_SCRIPT)} ${q(state(sb))} ${caPaths(sb).map(q).join(' ')}`,
    after: (sb) => {
      if (!existsSync(state(sb))) return;
      const { dir, data } = JSON.parse(readFileSync(state(sb), 'utf8')) as { dir: string; data: string };
      try {
        const ctl = [join(postgresBinDir()!, 'pg_ctl'), '-D', data, '-m', 'immediate', '-w', 'stop'];
        execFileSync(
          process.getuid?.() === 0 ? 'runuser' : ctl[0],
          process.getuid?.() === 0 ? ['-u', 'postgres', '--', ...ctl] : ctl.slice(1),
          { stdio: 'ignore' },
        );
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

/**
 * A SQLite database at `path` with the schema of this release (`latest`) or of the one before its
 * last migration (`previous`: what `server migrate` is for), made by the server's own migrations.
 */
export async function database(path: string, schema: 'latest' | 'previous'): Promise<void> {
  mkdirSync(dirname(path), { recursive: true });
  const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database: new Database(path) }) });
  try {
    const migrator = new Migrator({ db, provider: migrationProvider('sqlite') });
    const names = (await migrator.getMigrations()).map((m) => m.name);
    const r = schema === 'latest' ? await migrator.migrateToLatest() : await migrator.migrateTo(names.at(-2)!);
    if (r.error) throw r.error instanceof Error ? r.error : new Error(JSON.stringify(r.error));
  } finally {
    await db.destroy();
  }
}

/** The server's database where the deployment examples keep it, in the sandbox's /var overlay. */
export const varLibDb = (sb: Sandbox) => join(sb.root, 'root', 'var', 'lib', 'fleetctl', 'fleet.db');
/** The default --db (under the example's home). */
const homeDb = (sb: Sandbox) => join(sb.home, '.local', 'share', 'fleetctl', 'fleet.db');

export const SERVER_FIXTURES: Record<string, Fixture> = {
  'fleetctl server --dev': { namespaces: ['net'], stop: /Press Ctrl-C to stop\./ },
  'fleetctl server --dev --dev-agents 5 --dev-password s3cret-demo --listen 127.0.0.1:9090   # agents on :9091': {
    namespaces: ['net'],
    stop: /Simulated agents: 5 of 5 enrolled in prod over https:\/\/127\.0\.0\.1:9091/,
  },
  'printf %s "$ADMIN_PW" | fleetctl server --db /var/lib/fleetctl/fleet.db --admin-password-stdin --create-env prod': {
    namespaces: ['mount', 'net'],
    setup: (sb) => void (sb.env.ADMIN_PW = 'first-admin-pass-1'),
    stop: /listening on http:\/\/127\.0\.0\.1:8080/,
    check: (_r, sb) => expect(existsSync(join(sb.root, 'root', 'var', 'lib', 'fleetctl', 'fleet.db'))).toBe(true),
  },
  // A first start on a new database: the super-admin's password from the environment.
  'FLEETCTL_DB=postgres://fleet:pw@db.internal/fleet?sslmode=verify-full fleetctl server --db-ca ca.pem --listen 0.0.0.0:8080': {
    ...dbInternal((sb) => [join(sb.cwd, 'ca.pem')]),
    setup: (sb) => void (sb.env.FLEETCTL_ADMIN_PASSWORD = 'first-admin-pass-1'),
    stop: /reference server listening on /,
  },
  // Issue 27's operations verbs, on databases made as the server makes them.
  'fleetctl server backup --db /var/lib/fleetctl/fleet.db /var/backups/fleet-$(date +%F).db': {
    namespaces: ['mount'],
    setup: (sb) => database(varLibDb(sb), 'latest'),
    check: (_r, sb) =>
      expect(readdirSync(join(sb.root, 'root', 'var', 'backups')).filter((f) => /^fleet-\d{4}-\d\d-\d\d\.db$/.test(f))).toHaveLength(1),
  },
  'fleetctl server backup fleet-backup.db -o json': {
    setup: (sb) => database(homeDb(sb), 'latest'),
    check: (r, sb) => {
      expect(JSON.parse(r.stdout)).toMatchObject({ nodes: 0 });
      expect(existsSync(join(sb.cwd, 'fleet-backup.db'))).toBe(true);
    },
  },
  'fleetctl server migrate --db /var/lib/fleetctl/fleet.db --dry-run': {
    namespaces: ['mount'],
    setup: (sb) => database(varLibDb(sb), 'previous'),
    check: (r) => expect(r.stdout).toMatch(/^Would apply 1 migration\(s\) to the schema at /),
  },
  'fleetctl server migrate --db /var/lib/fleetctl/fleet.db': {
    namespaces: ['mount'],
    setup: (sb) => database(varLibDb(sb), 'previous'),
    check: (r) => expect(r.stdout).toMatch(/^Applied 1 migration\(s\): /),
  },
  // A new PostgreSQL database: migrate creates the schema there (the server would at its first start).
  "FLEETCTL_DB='postgres://fleet:pw@db.internal/fleet?sslmode=verify-full' fleetctl server migrate --db-ca ca.pem": {
    ...dbInternal((sb) => [join(sb.cwd, 'ca.pem')]),
  },
};
