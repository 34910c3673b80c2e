// Migration 018_counter_lock_order (issue 29, found by test/server/crash.test.ts under load): the
// change counters are locked in one order, so two writers never deadlock on them.
//
// The PostgreSQL trigger functions moved several node_generation rows with one statement, `update
// ... where id = any ('{1,2}')`. On a table this small PostgreSQL reads it sequentially, and each
// update moves a row's live version within the page, so one transaction could lock row 2 before
// row 1 while another locked 1 and waited for 2: "deadlock detected", answered 503 to whichever
// PostgreSQL chose (two concurrent `tags tag` on two replicas hit it a few times in a thousand).
// The functions now move the rows one statement at a time in ascending id; every other writer of
// the counters moves one row per statement in ascending id too (services/agents/agent-nodes.ts).
// SQLite has one writer at a time and needs nothing.
import { sql, type Kysely, type Migration } from 'kysely';
import type { Dialect } from './dialect.js';

const inOrder = `begin
      for counter in select unnest(tg_argv[0]::int[]) order by 1 loop
        update node_generation set generation = generation + 1 where id = counter;
      end loop;
      return null;
    end`;

export function counterLockOrderMigration(dialect: Dialect): Migration {
  return {
    async up(db: Kysely<any>) {
      if (dialect !== 'postgres') return;
      for (const fn of ['node_generation_bump', 'node_generation_bump_row'])
        await sql
          .raw(`create or replace function ${fn}() returns trigger language plpgsql as $$ declare counter int; ${inOrder} $$`)
          .execute(db);
    },
  };
}
