// Migration 017_node_seen (issue 31): what every check-in changes moves out of the node's row.
//
// A check-in set last_seen and bytes_received on `nodes`: a wide row (system_info, a dozen text
// columns) with two dozen indexes and, on PostgreSQL, a trigram GIN index, every one of which a
// PostgreSQL update of a last_seen (an indexed column) adds an entry to. At 100,000 agents
// (3,700 check-ins a second) that was 2.6 s of PostgreSQL CPU per second's batch on this 2-core
// machine against 0.15 s for a narrow table, and on SQLite about 20 us a row against 2.
//
// `node_seen` has one row per node: last_seen ('' for a node never seen: it sorts before every
// time, so "inactive" is one range of an index, and both databases order it alike without NULLS
// clauses), bytes_received and config_fetched_at (written by
// the check-in flush), and copies of the four node columns the time-dependent filters combine
// with last_seen (environment, platform bucket, config_valid, osquery version key), kept by
// triggers on `nodes`, so status, health, risk and platform counts read its indexes alone. The
// indexes on last_seen move with it. The change counters: the flush moves the content counter
// (2) itself, once per batch, and a new counter, seen (9), only when a node of the batch had not
// checked in for longer than the shortest window a cached total depends on (services/agents/
// checkins.ts): a node seen a minute ago and seen again now changes no total.
//
// The counts counter now follows changed values only, on both databases (row triggers with a
// WHEN clause: PostgreSQL's statement triggers fired for every statement naming a column, even
// one that changed nothing), and also moves with config_valid and config_hash and with tagging,
// so every cached total (health, --config-stale, tags) is keyed by it instead of by the content
// counter, which every check-in batch moves.
import { sql, type Kysely, type Migration } from 'kysely';
import type { Dialect } from './dialect.js';
import { WATCHED } from './node-index.js';

/** node_generation row moved by a check-in that brings a node back across a window (store/node-index.ts: Generations.seen). */
export const SEEN_GENERATION = 9;

/** node_generation row moved by every batch of check-ins written (Generations.checkins). */
export const CHECKINS_GENERATION = 10;

/** The node columns copied into node_seen. */
export const SEEN_COPIES = ['environment_id', 'platform_bucket', 'config_valid', 'osquery_version_key'] as const;

const changed = (cols: readonly string[], op = 'is not') => cols.map((c) => `old.${c} ${op} new.${c}`).join(' or ');

/** Indexes of node_seen: name and columns. */
const SEEN_INDEXES: [string, string[]][] = [
  ['node_seen_env_lastseen', ['environment_id', 'last_seen', 'node_id']],
  ['node_seen_env_bucket_lastseen', ['environment_id', 'platform_bucket', 'last_seen', 'node_id']],
  ['node_seen_env_lastseen_bucket', ['environment_id', 'last_seen', 'platform_bucket']],
  ['node_seen_env_health', ['environment_id', 'last_seen', 'config_valid', 'osquery_version_key']],
];

/** The node indexes on last_seen, which node_seen's replace. */
const OLD_INDEXES = ['nodes_env_lastseen', 'nodes_env_bucket_lastseen', 'nodes_env_lastseen_bucket', 'nodes_env_health'];

export function nodeSeenMigration(dialect: Dialect): Migration {
  return {
    async up(db: Kysely<any>) {
      const big = dialect === 'postgres' ? 'bigint' : 'integer';
      await sql
        .raw(
          `create table node_seen (
        node_id integer primary key,
        environment_id integer not null,
        platform_bucket text not null default '',
        config_valid integer not null default 1,
        osquery_version_key text not null default '',
        last_seen text not null default '',
        bytes_received ${big} not null default 0,
        config_fetched_at text
      )`,
        )
        .execute(db);
      await sql
        .raw(
          `insert into node_seen (node_id, ${SEEN_COPIES.join(', ')}, last_seen, bytes_received, config_fetched_at)
        select id, ${SEEN_COPIES.join(', ')}, coalesce(last_seen, ''), bytes_received, config_fetched_at from nodes`,
        )
        .execute(db);
      for (const [name, cols] of SEEN_INDEXES) {
        await sql.raw(`create index ${name} on node_seen (${cols.join(', ')})`).execute(db);
      }
      const watched = WATCHED;
      if (dialect === 'postgres') {
        await sql
          .raw(
            `create function node_seen_sync() returns trigger language plpgsql as $$
          begin
            if tg_op = 'INSERT' then
              insert into node_seen (node_id, ${SEEN_COPIES.join(', ')}) values (new.id, ${SEEN_COPIES.map((c) => `new.${c}`).join(', ')});
            elsif tg_op = 'UPDATE' then
              update node_seen set ${SEEN_COPIES.map((c) => `${c} = new.${c}`).join(', ')} where node_id = new.id;
            else
              delete from node_seen where node_id = old.id;
            end if;
            return null;
          end $$`,
          )
          .execute(db);
        await sql.raw(`create trigger node_seen_ins after insert on nodes for each row execute function node_seen_sync()`).execute(db);
        await sql
          .raw(
            `create trigger node_seen_upd after update of ${SEEN_COPIES.join(', ')} on nodes for each row when (${changed(SEEN_COPIES, 'is distinct from')}) execute function node_seen_sync()`,
          )
          .execute(db);
        await sql.raw(`create trigger node_seen_del after delete on nodes for each row execute function node_seen_sync()`).execute(db);
        await sql.raw(`drop trigger nodes_au_generation on nodes`).execute(db);
        await sql
          .raw(
            `create function node_generation_bump_row() returns trigger language plpgsql as $$
          begin
            update node_generation set generation = generation + 1 where id = any (tg_argv[0]::int[]);
            return null;
          end $$`,
          )
          .execute(db);
        await sql
          .raw(
            `create trigger nodes_au_generation after update of ${watched.join(', ')} on nodes for each row when (${changed(watched, 'is distinct from')}) execute function node_generation_bump_row('{1,2}')`,
          )
          .execute(db);
        await sql.raw(`drop trigger node_tags_content on node_tags`).execute(db);
        await sql.raw(`drop trigger tags_content on tags`).execute(db);
        for (const table of ['node_tags', 'tags'])
          await sql
            .raw(
              `create trigger ${table}_content after insert or update or delete on ${table} for each statement execute function node_generation_bump('{1,2}')`,
            )
            .execute(db);
        await sql.raw(`drop index if exists nodes_env_bucket_lastseen_id`).execute(db);
      } else {
        await sql
          .raw(
            `create trigger node_seen_ins after insert on nodes begin
          insert into node_seen (node_id, ${SEEN_COPIES.join(', ')}) values (new.id, ${SEEN_COPIES.map((c) => `new.${c}`).join(', ')}); end`,
          )
          .execute(db);
        await sql
          .raw(
            `create trigger node_seen_upd after update of ${SEEN_COPIES.join(', ')} on nodes when ${changed(SEEN_COPIES)} begin
          update node_seen set ${SEEN_COPIES.map((c) => `${c} = new.${c}`).join(', ')} where node_id = new.id; end`,
          )
          .execute(db);
        await sql
          .raw(`create trigger node_seen_del after delete on nodes begin delete from node_seen where node_id = old.id; end`)
          .execute(db);
        // last_seen leaves the counted columns (and SQLite drops no column a trigger names).
        await sql.raw(`drop trigger nodes_au_generation`).execute(db);
        await sql
          .raw(
            `create trigger nodes_au_generation after update of ${watched.join(', ')} on nodes when ${changed(watched)} begin
          update node_generation set generation = generation + 1 where id in (1, 2); end`,
          )
          .execute(db);
        for (const [table, event] of [
          ['node_tags', 'insert'],
          ['node_tags', 'delete'],
          ['node_tags', 'update'],
          ['tags', 'update'],
          ['tags', 'delete'],
        ]) {
          await sql.raw(`drop trigger ${table}_${event}_content`).execute(db);
          await sql
            .raw(
              `create trigger ${table}_${event}_content after ${event} on ${table} begin update node_generation set generation = generation + 1 where id in (1, 2); end`,
            )
            .execute(db);
        }
      }
      await db
        .insertInto('node_generation')
        .values([
          { id: SEEN_GENERATION, generation: 0 },
          { id: CHECKINS_GENERATION, generation: 0 },
        ])
        .execute();
      for (const name of OLD_INDEXES) await sql.raw(`drop index if exists ${name}`).execute(db);
      for (const col of ['last_seen', 'bytes_received', 'config_fetched_at'])
        await sql.raw(`alter table nodes drop column ${col}`).execute(db);
    },
  };
}
