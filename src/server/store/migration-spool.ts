// Migration 014_log_spool (issue 28): the durable log spool between the agent door and the sinks
// (services/delivery/spool.ts), the head of each stream of it, and each sink's cursor, lease and
// delivery state. Design: docs/api.md "Log delivery".
// - log_spool: one row per log entry, in commit order (id). tseq/tpos and eseq/epos are the
//   entries and bytes before the row in its type stream (all environments, one log type) and in
//   its environment stream, so a sink's backlog is a subtraction, never a scan.
// - log_streams: the head (entries, bytes) of each stream; (0, '*') counts everything, holds the
//   newest id, and is the row every append transaction locks first, so ids become visible in id
//   order on PostgreSQL too (SQLite serialises writers itself).
// - sink_state: per sink, the cursor (last spool id handled, and entries and bytes handled in its
//   stream), the lease of the process delivering it, its counters and its last error. The
//   pruner's lease is the row of sink_id 0.
import { sql, type Kysely, type Migration } from 'kysely';
import type { Dialect } from './dialect.js';

export function spoolMigration(dialect: Dialect): Migration {
  return {
    // Migrations see the schema as it was then, not as schema.ts types it now.

    async up(db: Kysely<any>) {
      let spool = db.schema.createTable('log_spool');
      spool =
        dialect === 'postgres'
          ? spool.addColumn('id', 'bigserial', (c) => c.primaryKey())
          : // AUTOINCREMENT: an id is never reused, even after the newest rows were pruned (a cursor
            // past them must never see a new row below it).
            spool.addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement());
      await spool
        .addColumn('environment_id', 'integer', (c) => c.notNull())
        .addColumn('node_id', 'integer', (c) => c.notNull())
        .addColumn('host_identifier', 'text', (c) => c.notNull())
        .addColumn('hostname', 'text', (c) => c.notNull())
        .addColumn('log_type', 'text', (c) => c.notNull())
        .addColumn('name', 'text')
        .addColumn('severity', 'integer')
        .addColumn('time', 'bigint', (c) => c.notNull())
        .addColumn('received_at', 'text', (c) => c.notNull())
        .addColumn('line', 'text', (c) => c.notNull())
        .addColumn('tseq', 'bigint', (c) => c.notNull())
        .addColumn('tpos', 'bigint', (c) => c.notNull())
        .addColumn('eseq', 'bigint', (c) => c.notNull())
        .addColumn('epos', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('log_spool_type').on('log_spool').columns(['log_type', 'id']).execute();
      await db.schema.createIndex('log_spool_env_type').on('log_spool').columns(['environment_id', 'log_type', 'id']).execute();

      await db.schema
        .createTable('log_streams')
        .addColumn('environment_id', 'integer', (c) => c.notNull())
        .addColumn('log_type', 'text', (c) => c.notNull())
        .addColumn('entries', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('bytes', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('last_id', 'bigint', (c) => c.notNull().defaultTo(0))
        .addPrimaryKeyConstraint('log_streams_pk', ['environment_id', 'log_type'])
        .execute();
      await db.insertInto('log_streams').values({ environment_id: 0, log_type: '*', entries: 0, bytes: 0, last_id: 0 }).execute();

      await db.schema
        .createTable('sink_state')
        .addColumn('sink_id', 'integer', (c) => c.primaryKey())
        .addColumn('cursor_id', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('cursor_seq', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('cursor_pos', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('lease_owner', 'text', (c) => c.notNull().defaultTo(''))
        .addColumn('lease_until', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('delivered', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('failed', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('dropped', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('rejected', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('last_success_at', 'text', (c) => c.notNull().defaultTo(''))
        .addColumn('last_error', 'text', (c) => c.notNull().defaultTo(''))
        .addColumn('last_error_at', 'text', (c) => c.notNull().defaultTo(''))
        .addColumn('retrying_since', 'text', (c) => c.notNull().defaultTo(''))
        .execute();
      // The pruner's lease (sink_id 0 is never a sink).
      await db.insertInto('sink_state').values({ sink_id: 0 }).execute();
      // Sinks that exist start at the head of their (empty) streams.
      await sql`insert into sink_state (sink_id) select id from log_sinks`.execute(db);
    },
  };
}
