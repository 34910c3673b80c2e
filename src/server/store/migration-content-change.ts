// Migration 019_content_on_change (issue 31): on PostgreSQL the content counter moves only when an
// update of nodes changed a row.
//
// nodes_au_content was a statement trigger (store/node-index.ts), and PostgreSQL fires a statement
// trigger for every UPDATE statement, also one that updated no row. The check-in flush's node
// statement (services/agents/checkins.ts) runs in every batch holding a config fetch (each agent
// every 5 minutes: every batch of a fleet) and updates only the nodes whose address, config hash or
// validity differ, usually none; so on PostgreSQL every flush moved the content counter, and every
// cached page of every node list (keyed by it) was read again each second under check-ins (the
// list figures' p99 of 98-157 ms at 100,000 nodes), where SQLite's row trigger moved nothing.
// The trigger now reads its transition table and moves the counter only when it holds a row.
import { sql, type Kysely, type Migration } from 'kysely';
import type { Dialect } from './dialect.js';

export function contentOnChangeMigration(dialect: Dialect): Migration {
  return {
    async up(db: Kysely<any>) {
      if (dialect !== 'postgres') return; // SQLite's trigger is per row: it never fired for an update of no row
      // The counters in ascending id, one statement each (migration 018_counter_lock_order).
      await sql
        .raw(
          `create function node_generation_bump_changed() returns trigger language plpgsql as $$
          declare counter int;
          begin
            if exists (select 1 from changed) then
              for counter in select unnest(tg_argv[0]::int[]) order by 1 loop
                update node_generation set generation = generation + 1 where id = counter;
              end loop;
            end if;
            return null;
          end $$`,
        )
        .execute(db);
      await sql.raw(`drop trigger nodes_au_content on nodes`).execute(db);
      await sql
        .raw(
          `create trigger nodes_au_content after update on nodes referencing new table as changed for each statement execute function node_generation_bump_changed('{2}')`,
        )
        .execute(db);
    },
  };
}
