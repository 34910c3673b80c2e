// Migration 012_carve_ids (issue 26): carves as a real osquery (4.7 and later) runs them.
// - node_queries: the ids the node's answer to a carve query carries (carve_guid, request_id),
//   by which its carver start is matched, and the last refusal of a carver start of that node
//   for that carve (why it was refused, and when), shown by `carves show` and `carves run`.
// - carve_files: the archive's compression (osquery's --carver_compression: zstd) and a note on
//   what is in it ('' or why it holds no file), found when its last block arrives.
import type { Kysely, Migration } from 'kysely';

export function carveIdsMigration(): Migration {
  return {
    async up(db: Kysely<any>) {
      for (const c of ['carve_guid', 'carve_request_id', 'carve_error', 'carve_error_at']) {
        await db.schema.alterTable('node_queries').addColumn(c, 'text', (b) => b.notNull().defaultTo('')).execute();
      }
      for (const c of ['compression', 'note']) {
        await db.schema.alterTable('carve_files').addColumn(c, 'text', (b) => b.notNull().defaultTo('')).execute();
      }
    },
  };
}
