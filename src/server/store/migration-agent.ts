// Migration 011_agent_counters (issue 21): the change counters the agent door's caches are keyed
// by (agent/state.ts), so an agent request needs no SQL of its own, on every process and replica:
// - 7 (node keys): a node deleted, or its key or environment changed (a re-enroll re-keys it).
//   A new node is not counted: its key is simply not cached yet.
// - 8 (live queries): a live query or carve created, deleted, or its state changed (active,
//   deleted, expired, completed, expiration). Not an answer: answers count executions only.
// - 4 (configuration, already moved by environments and settings): also a log sink added,
//   removed or changed, except the delivery counters (bytes_sent, exports_count) added every
//   second.
import { sql, type Kysely, type Migration } from 'kysely';
import type { Dialect } from './dialect.js';

export const NODE_KEYS_GENERATION = 7;
export const LIVE_QUERIES_GENERATION = 8;
const CONFIG_GENERATION = 4;

const QUERY_STATE = ['active', 'deleted', 'expired', 'completed', 'expiration', 'environment_id', 'name', 'query'];
const SINK_CONFIG = ['name', 'type', 'source', 'enabled', 'environment_id', 'sort_order', 'config'];
const NODE_KEY = ['node_key', 'environment_id'];

const changed = (cols: readonly string[]) => cols.map((c) => `old.${c} is not new.${c}`).join(' or ');

export function agentCountersMigration(dialect: Dialect): Migration {
  return {
    async up(db: Kysely<any>) {
      await db
        .insertInto('node_generation')
        .values([
          { id: NODE_KEYS_GENERATION, generation: 0 },
          { id: LIVE_QUERIES_GENERATION, generation: 0 },
        ])
        .execute();
      if (dialect === 'postgres') {
        const bump = (id: number) => `execute function node_generation_bump('{${id}}')`;
        await sql.raw(`create trigger nodes_key_delete after delete on nodes for each statement ${bump(NODE_KEYS_GENERATION)}`).execute(db);
        await sql
          .raw(
            `create trigger nodes_key_update after update of ${NODE_KEY.join(', ')} on nodes for each statement ${bump(NODE_KEYS_GENERATION)}`,
          )
          .execute(db);
        await sql
          .raw(`create trigger queries_state_insdel after insert or delete on queries for each statement ${bump(LIVE_QUERIES_GENERATION)}`)
          .execute(db);
        await sql
          .raw(
            `create trigger queries_state_update after update of ${QUERY_STATE.join(', ')} on queries for each statement ${bump(LIVE_QUERIES_GENERATION)}`,
          )
          .execute(db);
        await sql
          .raw(
            `create trigger log_sinks_insdel_generation after insert or delete on log_sinks for each statement ${bump(CONFIG_GENERATION)}`,
          )
          .execute(db);
        await sql
          .raw(
            `create trigger log_sinks_update_generation after update of ${SINK_CONFIG.join(', ')} on log_sinks for each statement ${bump(CONFIG_GENERATION)}`,
          )
          .execute(db);
        return;
      }
      const bump = (id: number) => `update node_generation set generation = generation + 1 where id = ${id};`;
      await sql.raw(`create trigger nodes_key_delete after delete on nodes begin ${bump(NODE_KEYS_GENERATION)} end`).execute(db);
      await sql
        .raw(
          `create trigger nodes_key_update after update of ${NODE_KEY.join(', ')} on nodes when ${changed(NODE_KEY)} begin ${bump(NODE_KEYS_GENERATION)} end`,
        )
        .execute(db);
      for (const event of ['insert', 'delete'])
        await sql
          .raw(`create trigger queries_state_${event} after ${event} on queries begin ${bump(LIVE_QUERIES_GENERATION)} end`)
          .execute(db);
      await sql
        .raw(
          `create trigger queries_state_update after update of ${QUERY_STATE.join(', ')} on queries when ${changed(QUERY_STATE)} begin ${bump(LIVE_QUERIES_GENERATION)} end`,
        )
        .execute(db);
      for (const event of ['insert', 'delete'])
        await sql
          .raw(`create trigger log_sinks_${event}_generation after ${event} on log_sinks begin ${bump(CONFIG_GENERATION)} end`)
          .execute(db);
      await sql
        .raw(
          `create trigger log_sinks_update_generation after update of ${SINK_CONFIG.join(', ')} on log_sinks when ${changed(SINK_CONFIG)} begin ${bump(CONFIG_GENERATION)} end`,
        )
        .execute(db);
    },
  };
}
