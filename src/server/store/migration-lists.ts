// Migration 010_list_indexes (issue 21): every filter and sort of `nodes list` and `audit list`
// answered from an index at 100,000 nodes and 1,000,000 audit rows.
//
// - nodes: an (environment, uuid) index for the uuid sort; (environment, platform, sort column)
//   for every sort within a platform (a platform whose values sort last made a page walk every
//   other node first); node_tags by (tag, node), covering, so a tag's nodes are counted and
//   read from the index alone (services/nodes.ts picks the tag's range or the sort's index).
// - nodes (SQLite): the searched text as one expression indexed with the environment, so a
//   search too short for trigrams (one or two characters) counts on an index instead of
//   lower-casing eight columns of every node.
// - nodes (SQLite): the search-index and counter triggers fire only when a watched value really
//   changed. SQLite fires `after update of col` whenever col is in the SET list, and a check-in
//   sets ip_address (a searched column) every time: each check-in re-indexed the node's trigrams.
// - audit_logs: one index per combination of the equality filters (username, service,
//   environment) ending in id, so every combination pages newest-first and counts on one range;
//   a trigram index over the line for `q` (FTS5 on SQLite, pg_trgm on PostgreSQL); counter 6 of
//   node_generation, moved by every audit write, keys the cached totals (services/audit-query.ts).
import { sql, type Kysely, type Migration } from 'kysely';
import type { Dialect } from './dialect.js';
import { SEARCH_COLUMNS, WATCHED, sqliteSearchText } from './node-index.js';

/** node_generation row moved by every change to audit_logs (cached audit totals). */
export const AUDIT_GENERATION = 6;

const AUDIT_INDEXES: [string, string[]][] = [
  ['audit_logs_user_service', ['username', 'service', 'id']],
  ['audit_logs_user_env', ['username', 'environment_id', 'id']],
  ['audit_logs_service_env', ['service', 'environment_id', 'id']],
  ['audit_logs_user_service_env', ['username', 'service', 'environment_id', 'id']],
];

/** The columns an audit list filters or searches on: changing one moves the audit counter. */
const AUDIT_WATCHED = ['username', 'service', 'environment_id', 'line'];

const changed = (cols: readonly string[]) => cols.map((c) => `old.${c} is not new.${c}`).join(' or ');

async function sqliteTriggers(db: Kysely<any>): Promise<void> {
  const cols = SEARCH_COLUMNS.join(', ');
  const newCols = SEARCH_COLUMNS.map((c) => `new.${c}`).join(', ');
  const oldCols = SEARCH_COLUMNS.map((c) => `old.${c}`).join(', ');
  await sql.raw(`drop trigger nodes_au_search`).execute(db);
  await sql
    .raw(
      `create trigger nodes_au_search after update of ${cols} on nodes when ${changed(SEARCH_COLUMNS)} begin
    insert into nodes_search(nodes_search, rowid, ${cols}) values ('delete', old.id, ${oldCols});
    insert into nodes_search(rowid, ${cols}) values (new.id, ${newCols}); end`,
    )
    .execute(db);
  await sql.raw(`drop trigger nodes_au_generation`).execute(db);
  await sql
    .raw(
      `create trigger nodes_au_generation after update of ${WATCHED.join(', ')} on nodes when ${changed(WATCHED)} begin
    update node_generation set generation = generation + 1 where id in (1, 2); end`,
    )
    .execute(db);

  // External-content FTS5 over audit_logs.line, as nodes_search over the node columns.
  await sql
    .raw(
      `create virtual table audit_search using fts5(line, content='audit_logs', content_rowid='id', tokenize='trigram case_sensitive 0')`,
    )
    .execute(db);
  await sql.raw(`insert into audit_search(audit_search) values('rebuild')`).execute(db);
  const bump = `update node_generation set generation = generation + 1 where id = ${AUDIT_GENERATION};`;
  await sql
    .raw(
      `create trigger audit_logs_ai after insert on audit_logs begin
    insert into audit_search(rowid, line) values (new.id, new.line); ${bump} end`,
    )
    .execute(db);
  await sql
    .raw(
      `create trigger audit_logs_ad after delete on audit_logs begin
    insert into audit_search(audit_search, rowid, line) values ('delete', old.id, old.line); ${bump} end`,
    )
    .execute(db);
  await sql
    .raw(
      `create trigger audit_logs_au_line after update of line on audit_logs when old.line is not new.line begin
    insert into audit_search(audit_search, rowid, line) values ('delete', old.id, old.line);
    insert into audit_search(rowid, line) values (new.id, new.line); end`,
    )
    .execute(db);
  await sql
    .raw(
      `create trigger audit_logs_au_generation after update of ${AUDIT_WATCHED.join(', ')} on audit_logs when ${changed(AUDIT_WATCHED)} begin ${bump} end`,
    )
    .execute(db);
}

async function postgresTriggers(db: Kysely<any>): Promise<void> {
  await sql.raw(`create index audit_logs_line_trgm on audit_logs using gin ((lower(line)) gin_trgm_ops)`).execute(db);
  await sql
    .raw(
      `create trigger audit_logs_ins_del after insert or delete on audit_logs for each statement execute function node_generation_bump('{${AUDIT_GENERATION}}')`,
    )
    .execute(db);
  await sql
    .raw(
      `create trigger audit_logs_au_generation after update of ${AUDIT_WATCHED.join(', ')} on audit_logs for each statement execute function node_generation_bump('{${AUDIT_GENERATION}}')`,
    )
    .execute(db);
}

export function listIndexesMigration(dialect: Dialect): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.schema.createIndex('nodes_env_uuid').on('nodes').columns(['environment_id', 'uuid', 'id']).execute();
      for (const col of [
        'hostname',
        'localname',
        'uuid',
        'ip_address',
        'platform',
        'platform_version',
        'osquery_version_key',
        'created_at',
      ])
        await db.schema
          .createIndex(`nodes_env_bucket_${col}`)
          .on('nodes')
          .columns(['environment_id', 'platform_bucket', col, 'id'])
          .execute();
      // SQLite's (environment, platform, last_seen) index ends in the rowid already; PostgreSQL's
      // needs the id and SQLite's NULL order (store/node-index.ts: nullableOrder).
      if (dialect === 'postgres')
        await sql
          .raw(`create index nodes_env_bucket_lastseen_id on nodes (environment_id, platform_bucket, last_seen nulls first, id)`)
          .execute(db);
      else await sql.raw(`create index nodes_env_search_text on nodes (environment_id, ${sqliteSearchText()})`).execute(db);
      await db.schema.createIndex('node_tags_tag_node').on('node_tags').columns(['tag_id', 'node_id']).execute();
      await db.schema.dropIndex('node_tags_tag').execute();
      for (const [name, cols] of AUDIT_INDEXES) await db.schema.createIndex(name).on('audit_logs').columns(cols).execute();
      await db.insertInto('node_generation').values({ id: AUDIT_GENERATION, generation: 0 }).execute();
      if (dialect === 'postgres') await postgresTriggers(db);
      else await sqliteTriggers(db);
    },
  };
}
