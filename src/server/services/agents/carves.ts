// File carves (4.16 read, 4.17 actions, contract.md 5 list). A carve is a row of `queries`
// with type 'carve'; its status is derived, never stored, by one SQL expression so the list
// filter, the read and the stats all agree.
import { sql, type RawBuilder } from 'kysely';
import { atomically, inTransaction } from '../../store/db.js';
import type { Caller, Deps } from '../../context.js';
import type { CarveFileRow, EnvironmentRow, QueryRow } from '../../store/schema.js';
import {
  CarveActions,
  CarveListStatuses,
  CarveStatuses,
  LogTypes,
  NEVER,
  type CarveAction,
  type CarveDetail,
  type CarveFile,
  type CarveQuery,
  type CarveRefusalView,
  type CarvesListQuery,
  type Page,
} from '../../../api/index.js';
import { badRequest, conflict, invalidAction, notFound } from '../../errors.js';
import { likeContains, pageOf, parsePage } from '../../lib/pagination.js';
import { writeAudit } from '../audit/audit.js';

export type CarveStatus = (typeof CarveStatuses)[number];

/**
 * carve_status of the `queries` row in scope. Precedence: DELETED > EXPIRED > COMPLETED (flag
 * set, or files exist and all are COMPLETED) > PENDING (some file not COMPLETED) > ACTIVE (no
 * files yet). A deleted carve stays deleted whatever else happened to it.
 */
export function carveStatusSql(): RawBuilder<CarveStatus> {
  return sql<CarveStatus>`(case
    when queries.deleted <> 0 then 'DELETED'
    when queries.expired <> 0 then 'EXPIRED'
    when queries.completed <> 0 then 'COMPLETED'
    when not exists (select 1 from carve_files cf where cf.query_id = queries.id) then 'ACTIVE'
    when exists (select 1 from carve_files cf where cf.query_id = queries.id and cf.status <> 'COMPLETED') then 'PENDING'
    else 'COMPLETED' end)`;
}

function parseTargets(json: string): { type: string; value: string }[] {
  try {
    const v: unknown = JSON.parse(json || '[]');
    if (!Array.isArray(v)) return [];
    return v
      .filter((t): t is Record<string, unknown> => typeof t === 'object' && t !== null)
      .map((t) => ({ type: typeof t.type === 'string' ? t.type : '', value: typeof t.value === 'string' ? t.value : '' }));
  } catch {
    return [];
  }
}

export function toCarveQuery(r: QueryRow & { carve_status: string }): CarveQuery {
  return {
    id: r.id,
    name: r.name,
    query: r.query,
    path: r.path,
    type: r.type,
    target: r.target,
    targets: parseTargets(r.targets),
    creator: r.creator,
    environment_id: r.environment_id,
    active: !!r.active,
    completed: !!r.completed,
    deleted: !!r.deleted,
    expired: !!r.expired,
    hidden: !!r.hidden,
    protected: !!r.protected,
    carve_status: r.carve_status,
    errors: r.errors,
    executions: r.executions,
    expected: r.expected,
    expiration: r.expiration || NEVER,
    extra_data: r.extra_data,
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}

export function toCarveFile(r: CarveFileRow & { hostname?: string | null }): CarveFile {
  return {
    uuid: r.uuid,
    hostname: r.hostname ?? '',
    carve_id: r.carve_id,
    session_id: r.session_id,
    path: r.path,
    status: r.status,
    archived: !!r.archived,
    block_size: Number(r.block_size),
    carve_size: Number(r.carve_size),
    total_blocks: r.total_blocks,
    completed_blocks: r.completed_blocks,
    created_at: r.created_at,
    // A file still in flight has no completion time; "never" keeps the field RFC 3339.
    completed_at: r.completed_at || NEVER,
    compression: r.compression,
    note: r.note,
  };
}

export async function listCarves(deps: Deps, env: EnvironmentRow, query: CarvesListQuery): Promise<Page<CarveQuery>> {
  const pageReq = parsePage(query);
  let status: CarveStatus | undefined;
  if (query.status !== undefined && query.status !== '') {
    const s = query.status.toLowerCase();
    if (!(CarveListStatuses as readonly string[]).includes(s)) {
      throw badRequest(`invalid status "${query.status}"; valid values: ${CarveListStatuses.join(', ')}`);
    }
    status = s.toUpperCase() as CarveStatus;
  }
  let base = deps.db.selectFrom('queries').where('environment_id', '=', env.id).where('type', '=', 'carve');
  if (status) base = base.where(carveStatusSql(), '=', status);
  if (query.q) {
    const pattern = likeContains(query.q.toLowerCase());
    base = base.where((eb) =>
      eb.or([sql<boolean>`lower(queries.name) like ${pattern} escape '\\'`, sql<boolean>`lower(queries.path) like ${pattern} escape '\\'`]),
    );
  }
  const totalRow = await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirst();
  const rows = await base
    .selectAll('queries')
    .select(carveStatusSql().as('carve_status'))
    .orderBy('queries.created_at', 'desc')
    .orderBy('queries.id', 'desc')
    .limit(pageReq.pageSize)
    .offset(pageReq.offset)
    .execute();
  return pageOf(rows.map(toCarveQuery), pageReq, Number(totalRow?.n ?? 0));
}

async function findCarve(deps: Deps, env: EnvironmentRow, name: string): Promise<QueryRow & { carve_status: string }> {
  const row = await deps.db
    .selectFrom('queries')
    .selectAll('queries')
    .select(carveStatusSql().as('carve_status'))
    .where('environment_id', '=', env.id)
    .where('name', '=', name)
    .executeTakeFirst();
  if (!row) throw notFound(`carve "${name}" not found in environment ${env.name}`);
  if (row.type !== 'carve') throw notFound(`"${name}" in environment ${env.name} is a ${row.type || 'standard'} query, not a carve`);
  return row;
}

/** The files of a carve, each with the hostname of its node (issue 20: which node a file came from). */
export async function carveFilesWithHost(deps: Deps, env: EnvironmentRow, queryId: number, o: { completed?: boolean } = {}) {
  let q = deps.db
    .selectFrom('carve_files')
    .leftJoin('nodes', (j) => j.onRef('nodes.uuid', '=', 'carve_files.uuid').on('nodes.environment_id', '=', env.id))
    .selectAll('carve_files')
    .select('nodes.hostname')
    .where('carve_files.query_id', '=', queryId);
  if (o.completed) q = q.where('carve_files.status', '=', 'COMPLETED');
  return q.orderBy('carve_files.created_at').orderBy('carve_files.uuid').execute();
}

export async function readCarve(deps: Deps, env: EnvironmentRow, name: string): Promise<CarveDetail> {
  const row = await findCarve(deps, env, name);
  const files = await carveFilesWithHost(deps, env, row.id);
  return { files: files.map(toCarveFile), query: toCarveQuery(row), refusals: await carveRefusals(deps, row.id) };
}

/** The last refusal of each node's carver start for this carve (issue 26), newest first. */
async function carveRefusals(deps: Deps, queryId: number): Promise<CarveRefusalView[]> {
  const rows = await deps.db
    .selectFrom('node_queries')
    .innerJoin('nodes', 'nodes.id', 'node_queries.node_id')
    .select(['nodes.uuid', 'nodes.hostname', 'node_queries.carve_error', 'node_queries.carve_error_at'])
    .where('node_queries.query_id', '=', queryId)
    .where('node_queries.carve_error', '<>', '')
    .orderBy('node_queries.carve_error_at', 'desc')
    .limit(100)
    .execute();
  return rows.map((r) => ({ uuid: r.uuid, hostname: r.hostname, error: r.carve_error, at: r.carve_error_at }));
}

export async function carveAction(
  deps: Deps,
  caller: Caller,
  env: EnvironmentRow,
  action: string,
  name: string,
  sourceIp: string,
): Promise<string> {
  // The change and its audit row commit together (store/db.ts, atomically).
  return atomically(deps, async (deps) => {
    if (!(CarveActions as readonly string[]).includes(action)) throw invalidAction(action, CarveActions);
    const row = await findCarve(deps, env, name);
    if (row.deleted) throw conflict(`carve "${name}" is deleted; it cannot be changed any more`);
    const ts = deps.now().toISOString();
    let message: string;
    switch (action as CarveAction) {
      case 'delete': {
        // Deleting removes what was carved (issue 29): the blocks and the file rows go, so nothing
        // can be downloaded any more; the carve itself stays, listed as DELETED, for the record.
        const { files, blocks } = await removeCarvedFiles(deps, row.id);
        await deps.db.updateTable('queries').set({ deleted: 1, active: 0, updated_at: ts }).where('id', '=', row.id).execute();
        message = `carve ${name} deleted: ${files} file${files === 1 ? '' : 's'} (${blocks} block${blocks === 1 ? '' : 's'}) removed from the server`;
        break;
      }
      case 'expire':
        await deps.db.updateTable('queries').set({ expired: 1, active: 0, updated_at: ts }).where('id', '=', row.id).execute();
        message = `carve ${name} expired`;
        break;
      case 'complete':
        await deps.db.updateTable('queries').set({ completed: 1, active: 0, updated_at: ts }).where('id', '=', row.id).execute();
        message = `carve ${name} completed`;
        break;
      case 'archive': {
        const n = await inTransaction(deps.db, async (trx) => {
          const r = await trx
            .updateTable('carve_files')
            .set({ archived: 1 })
            .where('query_id', '=', row.id)
            .where('status', '=', 'COMPLETED')
            .where('archived', '=', 0)
            .executeTakeFirst();
          await trx.updateTable('queries').set({ updated_at: ts }).where('id', '=', row.id).execute();
          return Number(r.numUpdatedRows);
        });
        message = `carve ${name}: ${n} completed file${n === 1 ? '' : 's'} archived`;
        break;
      }
    }
    await writeAudit(deps, {
      line: `${message} (environment ${env.name})`,
      logType: LogTypes.carve,
      username: caller.user.username,
      sourceIp,
      env,
    });
    return message;
  });
}

/** Removes a carve's files and their blocks (blocks are keyed by the file's session). */
async function removeCarvedFiles(deps: Deps, queryId: number): Promise<{ files: number; blocks: number }> {
  const sessions = deps.db.selectFrom('carve_files').select('session_id').where('query_id', '=', queryId);
  const blocks = await deps.db.deleteFrom('carve_blocks').where('session_id', 'in', sessions).executeTakeFirst();
  const files = await deps.db.deleteFrom('carve_files').where('query_id', '=', queryId).executeTakeFirst();
  return { files: Number(files.numDeletedRows), blocks: Number(blocks.numDeletedRows) };
}
