// Migration 020_carve_files_counter (issue 31): counter 11 moves whenever a carve file is added or
// removed or its status changes, on any replica, so the dashboard's count of running carves
// (services/fleet/stats.ts) is kept between changes instead of counted on every request. A carve's
// state follows its files (carveStatusSql: ACTIVE with none, PENDING while one is not complete),
// and a file completing changes no queries row, so the live-queries counter (8) does not see it.
// Counter 8 is not moved here on purpose: the agent door reloads its live queries on every move
// of 8, and every node's carve start and last block would then reload them.
import { sql, type Kysely, type Migration } from 'kysely';
import type { Dialect } from './dialect.js';

export const CARVE_FILES_GENERATION = 11;

export function carveFilesCounterMigration(dialect: Dialect): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.insertInto('node_generation').values({ id: CARVE_FILES_GENERATION, generation: 0 }).execute();
      const id = CARVE_FILES_GENERATION;
      if (dialect === 'postgres') {
        await sql
          .raw(
            `create trigger carve_files_insdel_generation after insert or delete on carve_files for each statement execute function node_generation_bump('{${id}}')`,
          )
          .execute(db);
        // A row trigger with a condition: each block's upload updates the file's status column
        // (to the same value until the last block), and only a change of value counts.
        await sql
          .raw(
            `create trigger carve_files_status_generation after update of status on carve_files for each row when (old.status is distinct from new.status) execute function node_generation_bump_row('{${id}}')`,
          )
          .execute(db);
        return;
      }
      const bump = `update node_generation set generation = generation + 1 where id = ${id};`;
      for (const event of ['insert', 'delete'])
        await sql.raw(`create trigger carve_files_${event}_generation after ${event} on carve_files begin ${bump} end`).execute(db);
      await sql
        .raw(
          `create trigger carve_files_status_generation after update of status on carve_files when old.status is not new.status begin ${bump} end`,
        )
        .execute(db);
    },
  };
}
