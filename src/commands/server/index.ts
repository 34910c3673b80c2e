import type { Command } from 'commander';
import { verb } from '../define.js';
import { defaultDbPath, serverOptions, type ServerOpts } from './options.js';

type Ctx = import('../../context.js').Context;

export function registerServer(program: Command): void {
  const server = verb<ServerOpts>(
    program,
    {
      name: 'server',
      summary: 'Run the reference Fleet Management API server',
      description:
        'Run the reference server on an embedded SQLite database, or on PostgreSQL (--db postgres://...) so that\n' +
        'several replicas serve one fleet. --dev starts it on a temporary database\n' +
        'with a demo fleet and prints how to log in.\n\n' +
        'Two doors: the admin API (--listen, what fleetctl talks to) and the agent listener (--agent-listen, osquery\n' +
        "agents' TLS API: enroll, config, logs, live queries, carves). --dev opens the agent listener with a\n" +
        "self-signed certificate on --listen's port + 1 (8081 for 8080; any free port when --listen's is 0) and\n" +
        'prints it. The demo fleet is records; --dev-agents N adds N simulated osquery agents (in this process)\n' +
        'that enroll in prod over the agent listener, are tagged live-agents, and answer live queries and\n' +
        'carves: fleetctl query run "SELECT * FROM os_version" --target tag:live-agents.\n\n' +
        'Outside --dev, the first start of a new database\n' +
        'creates the super-admin from --admin-password-stdin or FLEETCTL_ADMIN_PASSWORD; the JWT secret comes\n' +
        'from FLEETCTL_JWT_SECRET or is generated once and kept in the database. The database is kept 0600 in\n' +
        'a 0700 directory; one that other users can read is refused until --fix-permissions (which also\n' +
        'rotates the JWT secret, ending every session).\n\n' +
        'In production (README, "Running it in production"; docs/deploy.md): --agent-url names the agent door for\n' +
        'agents (the --tls_hostname of every environment that follows the server), --agent-ca the root they are\n' +
        'handed (or system for a public CA); the leaf and its intermediates are served. SIGHUP reads the certificate,\n' +
        'key and CA files again (a renewal); SIGTERM drains. server backup copies a live SQLite database, server\n' +
        "migrate applies this release's migrations and exits.",
      examples: [
        'fleetctl server --dev',
        'fleetctl server --dev --dev-agents 5 --dev-password s3cret-demo --listen 127.0.0.1:9090   # agents on :9091',
        'printf %s "$ADMIN_PW" | fleetctl server --db /var/lib/fleetctl/fleet.db --admin-password-stdin --create-env prod',
        'FLEETCTL_DB=postgres://fleet:pw@db.internal/fleet?sslmode=verify-full fleetctl server --db-ca ca.pem --listen 0.0.0.0:8080',
      ],
    },
    serverOptions,
    async (ctx, _args, o) => (await import('./serve.js')).serve(ctx, o),
  );
  registerMaintenance(server);
}

/**
 * The database a maintenance verb works on: --db, FLEETCTL_DB, or the server's default. `server`
 * declares --db too, and commander gives an option both declare to the parent: read either.
 */
const dbOf = (ctx: Ctx, server: Command, db: string | undefined) =>
  db ?? server.opts<ServerOpts>().db ?? (ctx.env.FLEETCTL_DB || defaultDbPath(ctx.env));

/** `server backup` and `server migrate` (issue 27). */
function registerMaintenance(server: Command): void {
  verb<{ db?: string }>(
    server,
    {
      name: 'backup',
      summary: 'Copy a SQLite database, live or not, into a new file',
      description:
        "Take a consistent copy of the server's SQLite database into OUT while the server runs (one read transaction: " +
        "the database as it was at one moment, write-ahead log included), compacted and checked with SQLite's " +
        'quick_check. OUT must not exist; it is created 0600, as it holds enroll secrets and password hashes. To restore: ' +
        'stop the server, put the copy in place of the database file (removing its -wal and -shm files), start it. ' +
        'A PostgreSQL database is backed up with pg_dump instead (README, "Backup and restore").',
      examples: [
        'fleetctl server backup --db /var/lib/fleetctl/fleet.db /var/backups/fleet-$(date +%F).db',
        'fleetctl server backup fleet-backup.db -o json',
      ],
    },
    (cmd) =>
      cmd
        .argument('<out>', 'the new file to write the copy to')
        .option('--db <path>', "the SQLite database (env FLEETCTL_DB; default: the server's)"),
    async (ctx, [out], o) => (await import('./maintenance.js')).runBackup(ctx, dbOf(ctx, server, o.db), out),
  );
  verb<{ db?: string; dbCa?: string; dryRun?: boolean }>(
    server,
    {
      name: 'migrate',
      summary: 'Apply the database migrations of this release, then exit',
      description:
        'Bring an existing database to the schema of this release and exit, as a step of an upgrade of its own: ' +
        "take a backup, stop the server (or every replica), run the new release's migrate, start the new release. " +
        '--dry-run lists what would be applied. A database migrated by a newer release is refused, as the server refuses ' +
        'to start on it. (fleetctl server also migrates at start; this makes the step explicit and checkable.)',
      examples: [
        'fleetctl server migrate --db /var/lib/fleetctl/fleet.db --dry-run',
        'fleetctl server migrate --db /var/lib/fleetctl/fleet.db',
        "FLEETCTL_DB='postgres://fleet:pw@db.internal/fleet?sslmode=verify-full' fleetctl server migrate --db-ca ca.pem",
      ],
    },
    (cmd) =>
      cmd
        .option('--db <path|url>', "the SQLite database or postgres:// URL (env FLEETCTL_DB; default: the server's)")
        .option('--db-ca <file>', 'PostgreSQL: CA certificate (PEM) to verify the database server')
        .option('--dry-run', 'list the migrations that would be applied; change nothing'),
    async (ctx, _args, o) =>
      (await import('./maintenance.js')).runMigrate(ctx, dbOf(ctx, server, o.db), { ...o, dbCa: o.dbCa ?? server.opts<ServerOpts>().dbCa }),
  );
}
