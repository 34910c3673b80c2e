// Migrations of issue 26 (the real osquery agent).
// 012_carve_ids: carves as a real osquery (4.7 and later) runs them.
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
        await db.schema
          .alterTable('node_queries')
          .addColumn(c, 'text', (b) => b.notNull().defaultTo(''))
          .execute();
      }
      for (const c of ['compression', 'note']) {
        await db.schema
          .alterTable('carve_files')
          .addColumn(c, 'text', (b) => b.notNull().defaultTo(''))
          .execute();
      }
    },
  };
}

/**
 * Migration 013_agent_cadence (issue 26):
 * - nodes.distributed_interval: the distributed interval the node polls at, as far as the server
 *   knows (its flags at enroll, then the configuration's options it fetched; 0: unknown), so
 *   "online" follows each node's own cadence; distributed_interval_told: the one it was told at
 *   its last fetch. A lower interval counts from the second fetch that tells it: after the first
 *   the node may still be waiting out its old interval.
 * - The old default options `{"disable_distributed":false,"host_identifier":"uuid"}`, left as they
 *   were created, lose host_identifier: from the configuration it overrode each host's own
 *   --host_identifier (a host enrolled by hostname came back as a new node after a restart).
 */
export function agentCadenceMigration(): Migration {
  return {
    async up(db: Kysely<any>) {
      for (const c of ['distributed_interval', 'distributed_interval_told']) {
        await db.schema
          .alterTable('nodes')
          .addColumn(c, 'integer', (b) => b.notNull().defaultTo(0))
          .execute();
      }
      await db
        .updateTable('environments')
        .set({ options: '{"disable_distributed":false}' })
        .where('options', '=', '{"disable_distributed":false,"host_identifier":"uuid"}')
        .execute();
    },
  };
}
