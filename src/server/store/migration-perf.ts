// Migration 003_perf (issue 11): the node change counter that cached counts are keyed by, and
// the trigram search index over the searched node columns (store/node-index.ts).
import type { Kysely, Migration } from 'kysely';
import type { Dialect } from './migrations.js';
import { createNodeIndex } from './node-index.js';

export function perfMigration(dialect: Dialect): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('node_generation')
        .addColumn('id', 'integer', (c) => c.primaryKey())
        .addColumn('generation', 'bigint', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.insertInto('node_generation').values({ id: 1, generation: 0 }).execute();
      await createNodeIndex(db, dialect);
    },
  };
}
