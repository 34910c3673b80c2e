// Migration 003_perf (issue 11): the node change counter that cached counts are keyed by, and
// the trigram search index over the searched node columns (store/node-index.ts), and an index
// for moving cached active counts along with time.
import type { Kysely, Migration } from 'kysely';
import type { Dialect } from './dialect.js';
import { createNodeIndex } from './node-index.js';

export function perfMigration(dialect: Dialect): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('node_generation')
        .addColumn('id', 'integer', (c) => c.primaryKey())
        .addColumn('generation', 'bigint', (c) => c.notNull().defaultTo(0))
        .execute();
      await db
        .insertInto('node_generation')
        .values([
          { id: 1, generation: 0 },
          { id: 2, generation: 0 },
        ])
        .execute();
      // Moving cached active counts to a new cutoff reads the nodes last seen between the two
      // cutoffs, per environment and platform bucket: a range of this index, bucket included.
      await db.schema
        .createIndex('nodes_env_lastseen_bucket')
        .on('nodes')
        .columns(['environment_id', 'last_seen', 'platform_bucket'])
        .execute();
      await createNodeIndex(db, dialect);
    },
  };
}
