// Migration 016_logs (issue 30): what `fleetctl logs`, `schedule report` and `nodes show` read.
// - Indexes on the spool (log_spool, migration 014) for the filters of GET /api/v1/logs/{env}: a
//   query's lines (environment, name, id), a node's lines by type (node, log_type, id), and a
//   node's status warnings and errors (node, id) kept small by holding only those (partial).
//   Each pages by id, the cursor, in either order; time bounds become id bounds
//   (services/logs/time-bounds.ts), so no index on time is needed.
// - query_reports: a scheduled query's current rows per node, kept in the spool's append
//   transaction (services/logs/reports.ts): one row per (environment, query name, node).
import { sql, type Kysely, type Migration } from 'kysely';

export function logsMigration(): Migration {
  return {
    async up(db: Kysely<any>) {
      await sql`create index log_spool_env_name on log_spool (environment_id, name, id) where name is not null`.execute(db);
      await sql`create index log_spool_node_type on log_spool (node_id, log_type, id)`.execute(db);
      await sql`create index log_spool_node_problems on log_spool (node_id, id) where severity >= 1`.execute(db);
      await db.schema
        .createTable('query_reports')
        .addColumn('environment_id', 'integer', (c) => c.notNull().references('environments.id').onDelete('cascade'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('node_id', 'integer', (c) => c.notNull().references('nodes.id').onDelete('cascade'))
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('epoch', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('counter', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('rows', 'text', (c) => c.notNull())
        .addColumn('row_count', 'integer', (c) => c.notNull())
        .addColumn('truncated', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('reported_at', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('query_reports_pk', ['environment_id', 'name', 'node_id'])
        .execute();
      // Reports of nodes that stopped reporting go with the environment's log retention.
      await db.schema.createIndex('query_reports_age').on('query_reports').columns(['environment_id', 'reported_at']).execute();
      await db.schema.createIndex('query_reports_node').on('query_reports').columns(['node_id']).execute();
    },
  };
}
