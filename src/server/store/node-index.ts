// The node search index and the node change counter: the one place with dialect-specific SQL.
// SQLite: an FTS5 trigram table kept by triggers. PostgreSQL: a pg_trgm GIN index over one
// expression joining the searched columns, and statement-level plpgsql triggers bumping the same
// node_generation rows. Everything else reaches them through searchMatch() and nodeGeneration().
import { CompiledQuery, sql, type Expression, type Kysely, type SqlBool } from 'kysely';
import type { Dialect } from './dialect.js';
import type { ReadNow } from './sqlite-read-now.js';
import { freshShared } from '../lib/fresh-read.js';
import { likeContains } from '../lib/pagination.js';

/** The columns `q` matches (contract.md 4.11), case-insensitive substring. */
export const SEARCH_COLUMNS = [
  'uuid',
  'hostname',
  'localname',
  'ip_address',
  'username',
  'osquery_user',
  'platform',
  'osquery_version',
] as const;

/** Trigram indexes need three characters; shorter `q` falls back to a scan (same results). */
export const MIN_INDEXED_QUERY = 3;

/**
 * Columns of `nodes` whose change can change a count, a filter, a sort or a search result.
 * last_seen lives in node_seen since migration 017_node_seen, and moves the counts counter only when a
 * node crosses a window (services/agents/checkins.ts); config_valid and config_hash joined then
 * (health and --config-stale totals are counted per this counter).
 */
export const WATCHED = ['environment_id', 'platform_bucket', 'osquery_version_key', 'config_valid', 'config_hash', ...SEARCH_COLUMNS];

/**
 * PostgreSQL's indexed search text: the searched columns lower-cased, joined by a character
 * that `q` may not hold (searchMatch rechecks each column, so a match across columns never counts).
 */
const pgSearchText = (prefix = '') => `lower(${SEARCH_COLUMNS.map((c) => prefix + c).join(` || chr(31) || `)})`;

/**
 * SQLite's counterpart, indexed with the environment by nodes_env_search_text (migration 010):
 * a query too short for trigrams counts its matches on that index (about 20x less work than the
 * per-column scan). The expression must stay exactly the one the index was built on.
 */
export const sqliteSearchText = (prefix = '') => `lower(${SEARCH_COLUMNS.map((c) => prefix + c).join(` || char(31) || `)})`;

async function createPostgresNodeIndex(db: Kysely<any>): Promise<void> {
  // pg_trgm is a trusted extension (PostgreSQL 13+): the database owner may create it.
  await sql.raw(`create extension if not exists pg_trgm`).execute(db);
  await sql.raw(`create index nodes_search_trgm on nodes using gin ((${pgSearchText()}) gin_trgm_ops)`).execute(db);
  // Statement-level: one bump per statement, not per row (a 100k-row seed bumps once), and
  // the bump's row lock is held only to the end of the writing transaction.
  await sql
    .raw(
      `create function node_generation_bump() returns trigger language plpgsql as $$
    begin
      update node_generation set generation = generation + 1 where id = any (tg_argv[0]::int[]);
      return null;
    end $$`,
    )
    .execute(db);
  const both = `'{1,2}'`;
  const content = `'{2}'`;
  await sql
    .raw(`create trigger nodes_ins_del after insert or delete on nodes for each statement execute function node_generation_bump(${both})`)
    .execute(db);
  await sql
    .raw(
      `create trigger nodes_au_generation after update of ${WATCHED.join(', ')} on nodes for each statement execute function node_generation_bump(${both})`,
    )
    .execute(db);
  await sql
    .raw(`create trigger nodes_au_content after update on nodes for each statement execute function node_generation_bump(${content})`)
    .execute(db);
  for (const table of ['node_tags', 'tags'])
    await sql
      .raw(
        `create trigger ${table}_content after insert or update or delete on ${table} for each statement execute function node_generation_bump(${content})`,
      )
      .execute(db);
}

export async function createNodeIndex(db: Kysely<any>, dialect: Dialect): Promise<void> {
  if (dialect === 'postgres') return createPostgresNodeIndex(db);
  const cols = SEARCH_COLUMNS.join(', ');
  const newCols = SEARCH_COLUMNS.map((c) => `new.${c}`).join(', ');
  const oldCols = SEARCH_COLUMNS.map((c) => `old.${c}`).join(', ');
  // External-content FTS5 table: the text lives once, in nodes; the index holds trigrams only.
  await sql
    .raw(`create virtual table nodes_search using fts5(${cols}, content='nodes', content_rowid='id', tokenize='trigram case_sensitive 0')`)
    .execute(db);
  await sql.raw(`insert into nodes_search(nodes_search) values('rebuild')`).execute(db);
  // Row 1 (counts): nodes added, removed, or a counted/filtered/searched column changed.
  // Row 2 (content): anything a listed node shows changed, its tags included.
  const bump = `update node_generation set generation = generation + 1 where id in (1, 2);`;
  const bumpContent = `update node_generation set generation = generation + 1 where id = 2;`;
  await sql
    .raw(
      `create trigger nodes_ai after insert on nodes begin
    insert into nodes_search(rowid, ${cols}) values (new.id, ${newCols}); ${bump} end`,
    )
    .execute(db);
  await sql
    .raw(
      `create trigger nodes_ad after delete on nodes begin
    insert into nodes_search(nodes_search, rowid, ${cols}) values ('delete', old.id, ${oldCols}); ${bump} end`,
    )
    .execute(db);
  await sql
    .raw(
      `create trigger nodes_au_search after update of ${cols} on nodes begin
    insert into nodes_search(nodes_search, rowid, ${cols}) values ('delete', old.id, ${oldCols});
    insert into nodes_search(rowid, ${cols}) values (new.id, ${newCols}); end`,
    )
    .execute(db);
  await sql.raw(`create trigger nodes_au_generation after update of ${WATCHED.join(', ')} on nodes begin ${bump} end`).execute(db);
  await sql.raw(`create trigger nodes_au_content after update on nodes begin ${bumpContent} end`).execute(db);
  for (const [table, event] of [
    ['node_tags', 'insert'],
    ['node_tags', 'delete'],
    ['node_tags', 'update'],
    ['tags', 'update'],
    ['tags', 'delete'],
  ])
    await sql.raw(`create trigger ${table}_${event}_content after ${event} on ${table} begin ${bumpContent} end`).execute(db);
}

/**
 * A condition on `nodes` matching `q` as a case-insensitive substring of any search column.
 * `scan`: for a query too short for trigrams, the form that reads every node of the environment
 * from one index (for counts, and pages of rare matches); otherwise the per-column form, which
 * is cheap to test node by node while a sort index is walked and stops when the page is full.
 */
export function searchMatch(dialect: Dialect, q: string, scan = false): Expression<SqlBool> {
  if (dialect === 'sqlite' && [...q].length >= MIN_INDEXED_QUERY) {
    // A quoted FTS5 phrase of trigrams is an exact substring match within one column.
    const phrase = `"${q.replaceAll('"', '""')}"`;
    return sql<SqlBool>`nodes.id in (select rowid from nodes_search where nodes_search match ${phrase})`;
  }
  const pattern = likeContains(q.toLowerCase());
  // The joined text has the separator between columns: without it in q, a match never spans two.
  if (dialect === 'sqlite' && scan && !q.includes('\x1f'))
    return sql<SqlBool>`${sql.raw(sqliteSearchText('nodes.'))} like ${pattern} escape '\\'`;
  const ors = SEARCH_COLUMNS.map((c) => sql`lower(${sql.ref(`nodes.${c}`)}) like ${pattern} escape '\\'`);
  const any = sql<SqlBool>`(${sql.join(ors, sql` or `)})`;
  if (dialect === 'postgres' && [...q].length >= MIN_INDEXED_QUERY && !q.includes('\x1f')) {
    // The GIN trigram index finds candidates on the joined text; the per-column test keeps only true matches.
    return sql<SqlBool>`(${sql.raw(pgSearchText('nodes.'))} like ${pattern} escape '\\' and ${any})`;
  }
  return any;
}

export interface Generations {
  /** Changes whenever a node is added, removed, or changes a counted, filtered or searched column. */
  counts: number;
  /** Changes whenever anything a listed node shows changes (any column, its tags). */
  content: number;
  /** Changes whenever a session ends or a user or their access changes (cached callers). */
  auth: number;
  /** Changes whenever an environment or a setting changes (cached environments and settings). */
  config: number;
  /** Changes whenever an audit row is added, removed, or changes a filtered or searched column. */
  audit: number;
  /** Changes whenever a node is deleted, re-keyed or moved to another environment (agent door). */
  nodeKeys: number;
  /** Changes whenever a live query or carve starts, ends or is deleted (agent door). */
  liveQueries: number;
  /**
   * Changes whenever a check-in brings a node back across a window (not seen for longer than the
   * shortest window a total compares last_seen with): totals that depend on last_seen recount
   * (migration 017_node_seen; fleet/node-counts.ts `soft`).
   */
  seen: number;
  /** Changes with every batch of check-ins written (node_seen's last_seen, bytes, config time). */
  checkins: number;
  /** Changes whenever a carve file is added or removed or its status changes (migration 020_carve_files_counter). */
  carveFiles: number;
}

/**
 * Every change counter in one read. The counters are bumped by triggers in the writing
 * transaction, so a request that reads them after a write committed (on any replica) sees the
 * new values and misses every cache keyed by the old ones.
 */
// Compiled once: this runs on every authenticated request.
const READ_GENERATIONS = CompiledQuery.raw('select id, generation from node_generation', []);

type GenerationRow = { id: number; generation: number | string };
/** Per database: concurrent requests share a read that started after they asked (lib/fresh-read.ts). */
const sharedReads = new WeakMap<Kysely<any>, () => Promise<GenerationRow[]>>();

function sharedRead(db: Kysely<any>): Promise<GenerationRow[]> {
  let read = sharedReads.get(db);
  if (!read) sharedReads.set(db, (read = freshShared(async () => (await db.executeQuery<GenerationRow>(READ_GENERATIONS)).rows)));
  return read();
}

/** The counters; `now` (Store.readNow) reads them without Kysely's chain of promises when it can. */
export async function readGenerations(db: Kysely<any>, now?: ReadNow): Promise<Generations> {
  const rows = (now?.(READ_GENERATIONS) as GenerationRow[] | undefined) ?? (await sharedRead(db));
  const of = (id: number) => Number(rows.find((r) => r.id === id)?.generation ?? 0);
  return {
    counts: of(1),
    content: of(2),
    auth: of(3),
    config: of(4),
    audit: of(6),
    nodeKeys: of(7),
    liveQueries: of(8),
    seen: of(9),
    checkins: of(10),
    carveFiles: of(11),
  };
}

/** The tables whose changes move the auth (3) and config (4) counters. */
const REQUEST_CACHE_TABLES: [table: string, events: ('insert' | 'update' | 'delete')[], id: 3 | 4][] = [
  ['sessions', ['update', 'delete'], 3], // a new session is a new key: no cached caller to drop
  ['users', ['update', 'delete'], 3],
  ['user_env_access', ['insert', 'update', 'delete'], 3],
  ['environments', ['insert', 'update', 'delete'], 4],
  ['settings', ['insert', 'update', 'delete'], 4],
];

/** 006_request_caches: counters 3 (auth) and 4 (config) and the triggers that move them. */
export async function createRequestCacheCounters(db: Kysely<any>, dialect: Dialect): Promise<void> {
  await db
    .insertInto('node_generation')
    .values([
      { id: 3, generation: 0 },
      { id: 4, generation: 0 },
    ])
    .execute();
  for (const [table, events, id] of REQUEST_CACHE_TABLES) {
    if (dialect === 'postgres') {
      await sql
        .raw(
          `create trigger ${table}_generation after ${events.join(' or ')} on ${table} for each statement execute function node_generation_bump('{${id}}')`,
        )
        .execute(db);
    } else {
      for (const event of events)
        await sql
          .raw(
            `create trigger ${table}_${event}_generation after ${event} on ${table} begin update node_generation set generation = generation + 1 where id = ${id}; end`,
          )
          .execute(db);
    }
  }
}
