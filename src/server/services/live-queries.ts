// Live queries and carves (issue 13): one model, a distributed query row of `queries`; a carve
// is its type 'carve' case. The admin door starts, reads and acts on them; the agent door
// (src/server/agent) asks which queries a node owes and records answers and carve blocks.
import { createHash, randomBytes } from 'node:crypto';
import { atomically, inTransaction } from '../store/db.js';
import type { Caller, Deps } from '../context.js';
import type { EnvironmentRow, NodeRow, QueryRow } from '../store/schema.js';
import { LogTypes, NEVER } from '../../api/index.js';
import { badRequest, conflict, invalidAction, notFound } from '../errors.js';
import { writeAudit } from './audit.js';
import { toCarveQuery } from './carves.js';

export interface LiveQueryRequest {
  query?: unknown;
  path?: unknown;
  uuid_list?: unknown;
  platform_list?: unknown;
  environment_list?: unknown;
  host_list?: unknown;
  tag_list?: unknown;
  hidden?: unknown;
  exp_hours?: unknown;
}

export const QueryActions = ['delete', 'expire', 'complete', 'cancel'] as const;

const strList = (v: unknown, field: string): string[] => {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.some((s) => typeof s !== 'string')) throw badRequest(`${field} must be an array of strings`);
  return (v as string[]).map((s) => s.trim()).filter((s) => s !== '');
};

/** osctrl's carve SQL, with the path's quotes doubled. */
export const carveSql = (path: string) => `SELECT * FROM carves WHERE carve=1 AND path = '${path.replace(/'/g, "''")}';`;

/** Node ids of the env matching any of the target lists; no lists = every node of the env. */
async function targetNodes(deps: Deps, env: EnvironmentRow, body: LiveQueryRequest) {
  const uuids = strList(body.uuid_list, 'uuid_list').map((u) => u.toLowerCase());
  const platforms = strList(body.platform_list, 'platform_list').map((p) => p.toLowerCase());
  const hosts = strList(body.host_list, 'host_list').map((h) => h.toLowerCase());
  const tags = strList(body.tag_list, 'tag_list');
  for (const e of strList(body.environment_list, 'environment_list')) {
    if (e !== env.name && e.toLowerCase() !== env.uuid.toLowerCase()) throw badRequest(`environment_list names "${e}", not this environment (${env.name})`);
  }
  const targets = [
    ...uuids.map((value) => ({ type: 'uuid', value })),
    ...platforms.map((value) => ({ type: 'platform', value })),
    ...hosts.map((value) => ({ type: 'host', value })),
    ...tags.map((value) => ({ type: 'tag', value })),
  ];
  const all = targets.length === 0;
  let base = deps.db.selectFrom('nodes').select('id').where('environment_id', '=', env.id);
  if (!all) {
    base = base.where((eb) => {
      const ors = [];
      if (uuids.length) ors.push(eb(eb.fn('lower', ['uuid']), 'in', uuids));
      if (hosts.length) ors.push(eb(eb.fn('lower', ['hostname']), 'in', hosts), eb(eb.fn('lower', ['localname']), 'in', hosts));
      if (platforms.length) ors.push(eb(eb.fn('lower', ['platform']), 'in', platforms), eb('platform_bucket', 'in', platforms));
      if (tags.length) {
        ors.push(
          eb('id', 'in', eb.selectFrom('node_tags').innerJoin('tags', 'tags.id', 'node_tags.tag_id').select('node_tags.node_id').where('tags.name', 'in', tags).where('tags.environment_id', '=', env.id)),
        );
      }
      return eb.or(ors);
    });
  }
  const rows = await base
    .execute();
  return { ids: rows.map((r) => r.id), targets: all ? [{ type: 'environment', value: env.name }] : targets };
}

export async function startLiveQuery(
  deps: Deps,
  caller: Caller,
  env: EnvironmentRow,
  body: LiveQueryRequest,
  kind: 'query' | 'carve',
  sourceIp: string,
): Promise<{ query_name: string; expected: number }> {
  // The change and its audit row commit together (store/db.ts, atomically).
  return atomically(deps, async (deps) => {
    let text: string;
    let path = '';
    if (kind === 'carve') {
      if (typeof body.path !== 'string' || body.path.trim() === '') throw badRequest('path can not be empty');
      path = body.path.trim();
      if (path.includes('\0')) throw badRequest('path must not contain NUL');
      text = carveSql(path);
    } else {
      if (typeof body.query !== 'string' || body.query.trim() === '') throw badRequest('query can not be empty');
      text = body.query.trim();
    }
    const exp = body.exp_hours ?? 0;
    if (typeof exp !== 'number' || !Number.isInteger(exp) || exp < 0 || exp > 8760) throw badRequest('exp_hours must be an integer from 0 to 8760');
    if (body.hidden !== undefined && typeof body.hidden !== 'boolean') throw badRequest('hidden must be a boolean');
    const { ids, targets } = await targetNodes(deps, env, body);
    if (ids.length === 0) throw badRequest('no nodes match the targets');
    const now = deps.now();
    const ts = now.toISOString();
    const name = `${kind}_${createHash('md5').update(randomBytes(16)).digest('hex')}`;
    await inTransaction(deps.db, async (trx) => {
      const q = await trx
        .insertInto('queries')
        .values({
          name,
          query: text,
          path,
          type: kind,
          target: targets.map((t) => t.type).join(','),
          targets: JSON.stringify(targets),
          creator: caller.user.username,
          environment_id: env.id,
          active: 1,
          completed: 0,
          deleted: 0,
          expired: 0,
          hidden: body.hidden ? 1 : 0,
          protected: 0,
          errors: 0,
          executions: 0,
          expected: ids.length,
          expiration: exp ? new Date(now.getTime() + exp * 3600_000).toISOString() : '',
          extra_data: '',
          created_at: ts,
          updated_at: ts,
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      for (let i = 0; i < ids.length; i += 500) {
        await trx.insertInto('node_queries').values(ids.slice(i, i + 500).map((node_id) => ({ query_id: q.id, node_id, status: 'pending' }))).execute();
      }
    });
    await writeAudit(deps, {
      line: `${kind === 'carve' ? `carve of ${path}` : 'query'} ${name} started on ${ids.length} node${ids.length === 1 ? '' : 's'} (environment ${env.name})`,
      logType: kind === 'carve' ? LogTypes.carve : LogTypes.query,
      username: caller.user.username,
      sourceIp,
      env,
    });
    return { query_name: name, expected: ids.length };
  });
}

/** Status of a live query: DELETED > EXPIRED (flag or past expiration) > COMPLETED (flag or every node answered) > ACTIVE. */
export function queryStatus(r: QueryRow, now: Date): string {
  if (r.deleted) return 'DELETED';
  if (r.expired || (r.expiration && r.expiration !== NEVER && new Date(r.expiration) <= now)) return 'EXPIRED';
  if (r.completed || (r.expected > 0 && r.executions >= r.expected)) return 'COMPLETED';
  return 'ACTIVE';
}

function toLiveQuery(r: QueryRow, now: Date) {
  const { carve_status: _omit, ...rest } = toCarveQuery({ ...r, carve_status: '' });
  void _omit;
  return { ...rest, status: queryStatus(r, now) };
}

async function findQuery(deps: Deps, env: EnvironmentRow, name: string): Promise<QueryRow> {
  const row = await deps.db.selectFrom('queries').selectAll().where('environment_id', '=', env.id).where('name', '=', name).executeTakeFirst();
  if (!row) throw notFound(`query "${name}" not found in environment ${env.name}`);
  return row;
}

export async function listLiveQueries(deps: Deps, env: EnvironmentRow, q: { status?: string; page?: string; page_size?: string }) {
  const statuses = ['active', 'completed', 'expired', 'deleted'];
  const want = q.status?.toLowerCase();
  if (want !== undefined && want !== '' && !statuses.includes(want)) throw badRequest(`invalid status "${q.status}"; valid values: ${statuses.join(', ')}`);
  const page = Math.max(1, Number.parseInt(q.page ?? '1', 10) || 1);
  const size = Math.min(500, Math.max(1, Number.parseInt(q.page_size ?? '50', 10) || 50));
  const now = deps.now();
  const rows = await deps.db.selectFrom('queries').selectAll().where('environment_id', '=', env.id).where('type', '=', 'query').orderBy('created_at', 'desc').orderBy('id', 'desc').execute();
  const items = rows.map((r) => toLiveQuery(r, now)).filter((r) => !want || r.status === want.toUpperCase());
  const total = items.length;
  return { items: items.slice((page - 1) * size, page * size), page, page_size: size, total_items: total, total_pages: total ? Math.ceil(total / size) : 0 };
}

export async function readLiveQuery(deps: Deps, env: EnvironmentRow, name: string) {
  return toLiveQuery(await findQuery(deps, env, name), deps.now());
}

export async function liveQueryResults(deps: Deps, env: EnvironmentRow, name: string, q: { page?: string; page_size?: string; after_id?: string; since?: string }) {
  const row = await findQuery(deps, env, name);
  const page = Math.max(1, Number.parseInt(q.page ?? '1', 10) || 1);
  const size = Math.min(1000, Math.max(1, Number.parseInt(q.page_size ?? '100', 10) || 100));
  const after = Number.parseInt(q.after_id ?? '0', 10) || 0;
  let base = deps.db.selectFrom('query_results').where('query_id', '=', row.id).where('id', '>', after);
  if (q.since && !Number.isNaN(Date.parse(q.since))) base = base.where('created_at', '>=', new Date(q.since).toISOString());
  const total = Number((await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirst())?.n ?? 0);
  const rows = await base.selectAll().orderBy('id').limit(size).offset((page - 1) * size).execute();
  const items = rows.map((r) => {
    let data: unknown = [];
    try {
      data = JSON.parse(r.rows);
    } catch {
      data = [];
    }
    return { id: r.id, uuid: r.node_uuid, hostname: r.hostname, status: r.status, error: r.error, rows: data, created_at: r.created_at };
  });
  return {
    items,
    page,
    page_size: size,
    total_items: total,
    total_pages: total ? Math.ceil(total / size) : 0,
    expected: row.expected,
    answered: row.executions,
    query_status: queryStatus(row, deps.now()),
  };
}

export async function liveQueryAction(deps: Deps, caller: Caller, env: EnvironmentRow, action: string, name: string, sourceIp: string) {
  // The change and its audit row commit together (store/db.ts, atomically).
  return atomically(deps, async (deps) => {
    if (!(QueryActions as readonly string[]).includes(action)) throw invalidAction(action, QueryActions);
    const row = await findQuery(deps, env, name);
    if (row.deleted) throw conflict(`query "${name}" is deleted; it cannot be changed any more`);
    const ts = deps.now().toISOString();
    const set = action === 'delete' ? { deleted: 1 } : action === 'complete' ? { completed: 1 } : { expired: 1 };
    await deps.db.updateTable('queries').set({ ...set, active: 0, updated_at: ts }).where('id', '=', row.id).execute();
    const verb = { delete: 'deleted', complete: 'completed', expire: 'expired', cancel: 'cancelled' }[action as (typeof QueryActions)[number]];
    const message = `query ${name} ${verb}`;
    await writeAudit(deps, { line: `${message} (environment ${env.name})`, logType: row.type === 'carve' ? LogTypes.carve : LogTypes.query, username: caller.user.username, sourceIp, env });
    return message;
  });
}

/** The reassembled bytes of a completed carve file (see docs/api.md: raw bytes, not re-wrapped). */
export async function carveArchive(deps: Deps, env: EnvironmentRow, name: string, session?: string) {
  const row = await findQuery(deps, env, name);
  if (row.type !== 'carve') throw notFound(`"${name}" in environment ${env.name} is a query, not a carve`);
  const files = await deps.db.selectFrom('carve_files').selectAll().where('query_id', '=', row.id).where('status', '=', 'COMPLETED').orderBy('created_at').execute();
  if (files.length === 0) throw notFound('no carved files yet');
  let file = files[0]!;
  if (session) {
    const f = files.find((x) => x.session_id === session);
    if (!f) throw notFound('session not found for carve');
    file = f;
  } else if (files.length > 1) {
    throw conflict(`carve has ${files.length} files; pass ?session=<id> to select one (sessions: ${files.map((f) => f.session_id).join(', ')})`, { sessions: files.map((f) => f.session_id) });
  }
  const blocks = await deps.db.selectFrom('carve_blocks').select(['block_id', 'data']).where('session_id', '=', file.session_id).orderBy('block_id').execute();
  const bytes = Buffer.concat(blocks.map((b) => Buffer.from(b.data, 'base64')));
  const filename = `${file.uuid}_${file.session_id}_${file.path.replace(/[/\\]/g, '-')}.tar`;
  return { bytes, filename, size: Number(file.carve_size), blocks: file.total_blocks, sha256: createHash('sha256').update(bytes).digest('hex') };
}

// ---- the agent door's side ----

/** Queries a node owes: active, not expired/completed/deleted, no answer yet. name -> sql. */
export async function pendingQueriesFor(deps: Deps, nodeId: number): Promise<Record<string, string>> {
  const now = deps.now().toISOString();
  const rows = await deps.db
    .selectFrom('node_queries')
    .innerJoin('queries', 'queries.id', 'node_queries.query_id')
    .select(['queries.name', 'queries.query'])
    .where('node_queries.node_id', '=', nodeId)
    .where('node_queries.status', '=', 'pending')
    .where('queries.active', '=', 1)
    .where('queries.deleted', '=', 0)
    .where('queries.expired', '=', 0)
    .where('queries.completed', '=', 0)
    .where((eb) => eb.or([eb('queries.expiration', '=', ''), eb('queries.expiration', '>', now)]))
    .execute();
  return Object.fromEntries(rows.map((r) => [r.name, r.query]));
}

/** One node's answers (distributed write). Unknown or not-owed query names are ignored. */
export async function recordAnswers(
  deps: Deps,
  node: NodeRow,
  queries: Record<string, unknown>,
  statuses: Record<string, unknown>,
  messages: Record<string, unknown>,
): Promise<{ name: string; rows: unknown[] }[]> {
  const names = [...new Set([...Object.keys(queries), ...Object.keys(statuses)])];
  if (names.length === 0) return [];
  const ts = deps.now().toISOString();
  const recorded: { name: string; rows: unknown[] }[] = [];
  await inTransaction(deps.db, async (trx) => {
    const owed = await trx
      .selectFrom('node_queries')
      .innerJoin('queries', 'queries.id', 'node_queries.query_id')
      .select(['queries.id', 'queries.name'])
      .where('node_queries.node_id', '=', node.id)
      .where('node_queries.status', '=', 'pending')
      .where('queries.name', 'in', names)
      .execute();
    for (const q of owed) {
      // osquery's rows are objects of column -> text; anything else from an agent is dropped, so
      // readers of the results can rely on that shape.
      const rows = (Array.isArray(queries[q.name]) ? (queries[q.name] as unknown[]) : []).filter(
        (r) => typeof r === 'object' && r !== null && !Array.isArray(r),
      );
      const status = Number(statuses[q.name] ?? 0) || 0;
      const error = typeof messages[q.name] === 'string' ? (messages[q.name] as string) : '';
      await trx.insertInto('query_results').values({ query_id: q.id, node_id: node.id, node_uuid: node.uuid, hostname: node.hostname, status, error, rows: JSON.stringify(rows), created_at: ts }).execute();
      await trx.updateTable('node_queries').set({ status: status === 0 ? 'answered' : 'error' }).where('query_id', '=', q.id).where('node_id', '=', node.id).execute();
      await trx
        .updateTable('queries')
        .set((eb) => ({ executions: eb('executions', '+', 1), errors: eb('errors', '+', status === 0 ? 0 : 1), updated_at: ts }))
        .where('id', '=', q.id)
        .execute();
      recorded.push({ name: q.name, rows });
    }
  });
  return recorded;
}

/** carver start: a session for a carve the node was asked for (request_id = query name). */
export async function carveStart(deps: Deps, node: NodeRow, b: Record<string, unknown>): Promise<string | undefined> {
  const name = typeof b.request_id === 'string' ? b.request_id : '';
  const blockCount = Number(b.block_count);
  const blockSize = Number(b.block_size);
  const carveSize = Number(b.carve_size);
  if (![blockCount, blockSize, carveSize].every((n) => Number.isInteger(n) && n >= 0) || blockCount > 100_000) return undefined;
  const q = await deps.db.selectFrom('queries').select(['id', 'path']).where('name', '=', name).where('type', '=', 'carve').where('environment_id', '=', node.environment_id).where('deleted', '=', 0).executeTakeFirst();
  if (!q) return undefined;
  const session = randomBytes(16).toString('hex');
  await deps.db
    .insertInto('carve_files')
    .values({
      uuid: node.uuid,
      query_id: q.id,
      carve_id: typeof b.carve_id === 'string' ? b.carve_id.slice(0, 200) : '',
      session_id: session,
      path: q.path,
      status: blockCount === 0 ? 'COMPLETED' : 'IN PROGRESS',
      archived: 0,
      block_size: blockSize,
      carve_size: carveSize,
      total_blocks: blockCount,
      completed_blocks: 0,
      created_at: deps.now().toISOString(),
      completed_at: blockCount === 0 ? deps.now().toISOString() : '',
    })
    .execute();
  return session;
}

/** carver continue: store one block; the file completes when every block has arrived. */
export async function carveBlock(deps: Deps, b: Record<string, unknown>): Promise<boolean> {
  const session = typeof b.session_id === 'string' ? b.session_id : '';
  const blockId = Number(b.block_id);
  const data = typeof b.data === 'string' ? b.data : undefined;
  if (!session || !Number.isInteger(blockId) || blockId < 0 || data === undefined || !/^[A-Za-z0-9+/=\r\n]*$/.test(data)) return false;
  const ts = deps.now().toISOString();
  return inTransaction(deps.db, async (trx) => {
    const f = await trx.selectFrom('carve_files').select(['total_blocks', 'completed_blocks', 'status']).where('session_id', '=', session).executeTakeFirst();
    if (!f || blockId >= f.total_blocks) return false;
    const r = await trx.insertInto('carve_blocks').values({ session_id: session, block_id: blockId, data }).onConflict((oc) => oc.doNothing()).executeTakeFirst();
    if (Number(r.numInsertedOrUpdatedRows ?? 0) === 0) return true; // a retried block
    const done = f.completed_blocks + 1 >= f.total_blocks;
    await trx
      .updateTable('carve_files')
      .set({ completed_blocks: f.completed_blocks + 1, ...(done ? { status: 'COMPLETED', completed_at: ts } : {}) })
      .where('session_id', '=', session)
      .execute();
    return true;
  });
}
