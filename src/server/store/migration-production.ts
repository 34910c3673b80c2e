// Migration 015_production (issue 27): what an environment follows of the server, and when each
// node last reported its details.
// - environments.hostname_pinned / certificate_pinned: 0 = the environment follows the server's
//   agent URL (--agent-url, else the agent listener's address) and trust anchor, rewritten at
//   every start and SIGHUP; 1 = set for this environment (env edit --agent-host, enroll update
//   --certificate) and kept. Certificates an operator set before this migration (an audit row of
//   `enroll update` with a certificate says so) stay pinned.
// - environments.detail_refresh: seconds between detail refreshes of its nodes; 0 = the server's
//   --detail-refresh.
// - nodes.details_at: when the node last reported its details (enroll, or a detail refresh);
//   null = never since the upgrade, so the next distributed read asks for them.
// - audit_logs and query_results by created_at: the retention purge finds the rows older than its
//   cutoff through them, a bounded step at a time (services/retention/purge.ts).
import { sql, type Kysely, type Migration } from 'kysely';

export function productionMigration(): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .alterTable('environments')
        .addColumn('hostname_pinned', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema
        .alterTable('environments')
        .addColumn('certificate_pinned', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema
        .alterTable('environments')
        .addColumn('detail_refresh', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema.alterTable('nodes').addColumn('details_at', 'text').execute();
      await db.schema.createIndex('audit_logs_created').on('audit_logs').column('created_at').execute();
      await db.schema.createIndex('query_results_created').on('query_results').column('created_at').execute();
      await db
        .updateTable('environments')
        .set({ certificate_pinned: 1 })
        .where('certificate', '!=', '')
        .where((eb) =>
          eb.exists(
            eb
              .selectFrom('audit_logs')
              .select(sql`1`.as('one'))
              .whereRef('audit_logs.environment_id', '=', 'environments.id')
              .where('audit_logs.line', 'like', 'enrollment of % updated: %certificate%'),
          ),
        )
        .execute();
    },
  };
}
