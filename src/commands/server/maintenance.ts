// `fleetctl server backup` and `fleetctl server migrate` (issue 27): the database outside a
// running server. Loaded only when one of them runs.
import type { Context } from '../../context.js';
import { CliError, ExitCode, UsageError } from '../../errors.js';
import { printObject } from '../../output/index.js';

const mib = (n: number) => `${(n / 1048576).toFixed(1)} MiB`;

async function setupErrors<T>(fn: () => Promise<T>): Promise<T> {
  const { ServerSetupError } = await import('../../server/setup-error.js');
  const { MissingDependencyError } = await import('../../server/store/db.js');
  try {
    return await fn();
  } catch (e) {
    if (e instanceof ServerSetupError || e instanceof MissingDependencyError) throw new CliError(e.message, ExitCode.error);
    throw e;
  }
}

export async function runBackup(ctx: Context, db: string, out: string): Promise<void> {
  const { isPostgresUrl } = await import('../../server/store/db.js');
  if (isPostgresUrl(db)) {
    throw new UsageError(
      "a PostgreSQL database is backed up with PostgreSQL's own tool, while the server runs: pg_dump --format=custom --file OUT 'postgres://...' (pg_restore brings it back; README, \"Backup and restore\")",
    );
  }
  const { backupSqlite } = await import('../../server/maintenance.js');
  const r = await setupErrors(() => backupSqlite(db, out));
  if (ctx.wantsData()) return printObject(ctx.io, ctx.output(), r);
  ctx.io.out(
    `Backed up ${r.source} (schema ${r.schema || 'none'}, ${r.nodes} nodes) to ${r.out}: ${mib(r.bytes)}, checked, in ${(r.ms / 1000).toFixed(1)} s\n`,
  );
}

export async function runMigrate(ctx: Context, db: string, o: { dryRun?: boolean; dbCa?: string }): Promise<void> {
  const { migrateDatabase } = await import('../../server/maintenance.js');
  const r = await setupErrors(() => migrateDatabase(db, { dryRun: o.dryRun, caFile: o.dbCa }));
  if (ctx.wantsData()) return printObject(ctx.io, ctx.output(), { ...r, dry_run: Boolean(o.dryRun) });
  if (r.migrations.length === 0) {
    ctx.io.out(`The schema is up to date (${r.schema || 'empty'}): nothing to apply.\n`);
  } else if (o.dryRun) {
    ctx.io.out(`Would apply ${r.migrations.length} migration(s) to the schema at ${r.schema || 'empty'}: ${r.migrations.join(', ')}\n`);
  } else {
    ctx.io.out(
      `Applied ${r.migrations.length} migration(s): ${r.migrations.join(', ')}; the schema is now ${r.migrations[r.migrations.length - 1]}.\n`,
    );
  }
}
