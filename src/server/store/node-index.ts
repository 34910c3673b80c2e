// The node search index and the node change counter: the one place with SQLite-only SQL
// (FTS5 and triggers). Everything else reaches them through searchMatch() and nodeGeneration(),
// so PostgreSQL (another issue) plugs in here: a pg_trgm GIN index over the same columns, ILIKE
// in searchMatch(), and a plpgsql trigger bumping the same node_generation row.
import { sql, type Expression, type Kysely, type SqlBool } from 'kysely';
import type { Dialect } from './migrations.js';
import { likeContains } from '../lib/pagination.js';

/** The columns `q` matches (contract.md 4.11), case-insensitive substring. */
export const SEARCH_COLUMNS = ['uuid', 'hostname', 'localname', 'ip_address', 'username', 'osquery_user', 'platform', 'osquery_version'] as const;

/** Trigram indexes need three characters; shorter `q` falls back to a scan (same results). */
export const MIN_INDEXED_QUERY = 3;

/** Columns whose change can change a count, a filter, a sort or a search result. */
const WATCHED = ['environment_id', 'last_seen', 'platform_bucket', 'osquery_version_key', ...SEARCH_COLUMNS];

export async function createNodeIndex(db: Kysely<any>, dialect: Dialect): Promise<void> {
  if (dialect !== 'sqlite') throw new Error(`node search index for ${dialect} is not implemented`);
  const cols = SEARCH_COLUMNS.join(', ');
  const newCols = SEARCH_COLUMNS.map((c) => `new.${c}`).join(', ');
  const oldCols = SEARCH_COLUMNS.map((c) => `old.${c}`).join(', ');
  // External-content FTS5 table: the text lives once, in nodes; the index holds trigrams only.
  await sql.raw(`create virtual table nodes_search using fts5(${cols}, content='nodes', content_rowid='id', tokenize='trigram case_sensitive 0')`).execute(db);
  await sql.raw(`insert into nodes_search(nodes_search) values('rebuild')`).execute(db);
  // Row 1 (counts): nodes added, removed, or a counted/filtered/searched column changed.
  // Row 2 (content): anything a listed node shows changed, its tags included.
  const bump = `update node_generation set generation = generation + 1 where id in (1, 2);`;
  const bumpContent = `update node_generation set generation = generation + 1 where id = 2;`;
  await sql.raw(`create trigger nodes_ai after insert on nodes begin
    insert into nodes_search(rowid, ${cols}) values (new.id, ${newCols}); ${bump} end`).execute(db);
  await sql.raw(`create trigger nodes_ad after delete on nodes begin
    insert into nodes_search(nodes_search, rowid, ${cols}) values ('delete', old.id, ${oldCols}); ${bump} end`).execute(db);
  await sql.raw(`create trigger nodes_au_search after update of ${cols} on nodes begin
    insert into nodes_search(nodes_search, rowid, ${cols}) values ('delete', old.id, ${oldCols});
    insert into nodes_search(rowid, ${cols}) values (new.id, ${newCols}); end`).execute(db);
  await sql.raw(`create trigger nodes_au_generation after update of ${WATCHED.join(', ')} on nodes begin ${bump} end`).execute(db);
  await sql.raw(`create trigger nodes_au_content after update on nodes begin ${bumpContent} end`).execute(db);
  for (const [table, event] of [['node_tags', 'insert'], ['node_tags', 'delete'], ['node_tags', 'update'], ['tags', 'update'], ['tags', 'delete']])
    await sql.raw(`create trigger ${table}_${event}_content after ${event} on ${table} begin ${bumpContent} end`).execute(db);
}

/** A condition on `nodes` matching `q` as a case-insensitive substring of any search column. */
export function searchMatch(dialect: Dialect, q: string): Expression<SqlBool> {
  if (dialect === 'sqlite' && [...q].length >= MIN_INDEXED_QUERY) {
    // A quoted FTS5 phrase of trigrams is an exact substring match within one column.
    const phrase = `"${q.replaceAll('"', '""')}"`;
    return sql<SqlBool>`nodes.id in (select rowid from nodes_search where nodes_search match ${phrase})`;
  }
  const pattern = likeContains(q.toLowerCase());
  const ors = SEARCH_COLUMNS.map((c) => sql`lower(${sql.ref(`nodes.${c}`)}) like ${pattern} escape '\\'`);
  return sql<SqlBool>`(${sql.join(ors, sql` or `)})`;
}

export interface NodeGenerations {
  /** Changes whenever a node is added, removed, or changes a counted, filtered or searched column. */
  counts: number;
  /** Changes whenever anything a listed node shows changes (any column, its tags). */
  content: number;
}

export async function nodeGeneration(db: Kysely<any>): Promise<NodeGenerations> {
  const rows = await db.selectFrom('node_generation').select(['id', 'generation']).execute();
  const of = (id: number) => Number(rows.find((r) => r.id === id)?.generation ?? 0);
  return { counts: of(1), content: of(2) };
}
