// Live queries and carves (issue 13): one model, a distributed query row of `queries`; a carve
// is its type 'carve' case. The admin door starts, reads and acts on them; the agent door
// (src/server/agent) asks which queries a node owes and records answers and carve blocks.
import { createHash, randomBytes } from 'node:crypto';
import type { ExpressionBuilder } from 'kysely';
import { atomically, inTransaction } from '../../store/db.js';
import type { Caller, Deps } from '../../context.js';
import type { DB, EnvironmentRow, QueryRow } from '../../store/schema.js';
import { HealthStatuses, LogTypes, NEVER, RiskLevels } from '../../../api/index.js';
import { badRequest, conflict, invalidAction, notFound } from '../../errors.js';
import { writeAudit } from '../audit/audit.js';
import { toCarveQuery } from './carves.js';
import { healthBoundsOf } from '../fleet/node-shape.js';
import { healthWhere, onSeen, onlineSince, riskWhere, statusWhere } from '../fleet/node-filters.js';

export interface LiveQueryRequest {
  query?: unknown;
  path?: unknown;
  uuid_list?: unknown;
  platform_list?: unknown;
  environment_list?: unknown;
  host_list?: unknown;
  tag_list?: unknown;
  /** Issue 20 (fleetctl's server only): targets by activity, derived health and risk, as `nodes list` filters them. */
  status_list?: unknown;
  health_list?: unknown;
  risk_list?: unknown;
  hidden?: unknown;
  exp_hours?: unknown;
  /** Issue 20: expiry in seconds (wins over exp_hours, which osctrl reads). */
  expire_seconds?: unknown;
}

/** A live query or carve started without exp_hours or expire_seconds ends after a day (docs/api.md). */
export const DEFAULT_EXPIRE_SECONDS = 24 * 3600;
export const MAX_EXPIRE_SECONDS = 8760 * 3600;

export const QueryActions = ['delete', 'expire', 'complete', 'cancel'] as const;

const strList = (v: unknown, field: string): string[] => {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.some((s) => typeof s !== 'string')) throw badRequest(`${field} must be an array of strings`);
  return (v as string[]).map((s) => s.trim()).filter((s) => s !== '');
};

/**
 * The carve SQL, with the path's quotes doubled: osctrl's `path =` for a file; `path LIKE` for a
 * pattern with osquery's wildcards (% within a directory, %% recursively), which osquery expands
 * only for LIKE (issue 26: `=` carved the literal name, an empty archive).
 */
export const carveSql = (path: string) =>
  `SELECT * FROM carves WHERE carve=1 AND path ${path.includes('%') ? 'LIKE' : '='} '${path.replace(/'/g, "''")}';`;

/** A carve path refused before anything is started: osquery would carve nothing from it. */
function carvePathProblem(path: string): string | undefined {
  if (path.includes('\0')) return 'path must not contain NUL';
  if (/[/\\]$/.test(path))
    return `${path} is a directory: osquery carves files, not directories; carve the files in it with a pattern, e.g. ${path}%`;
  if (/[*?]/.test(path))
    return `carve patterns use osquery's wildcards, not the shell's: % matches within a directory and %% recursively (e.g. /var/log/%.log)`;
  return undefined;
}

/** A list whose values must each be one of `allowed` (lower-cased). */
function choiceList<T extends string>(v: unknown, field: string, allowed: readonly T[]): T[] {
  const list = strList(v, field).map((s) => s.toLowerCase());
  const bad = list.find((s) => !(allowed as readonly string[]).includes(s));
  if (bad !== undefined) throw badRequest(`${field}: invalid value "${bad}"; valid values: ${allowed.join(', ')}`);
  return [...new Set(list)] as T[];
}

/** Node ids of the env matching any of the target lists; no lists = every node of the env. */
async function targetNodes(deps: Deps, env: EnvironmentRow, body: LiveQueryRequest) {
  const { query, targets } = await targetSelection(deps, env, body);
  const rows = await query.execute();
  return { ids: rows.map((r) => r.id), targets };
}

/** The query of the target nodes' ids (targetNodes), to run or to use as a subquery, and the targets as stored. */
export async function targetSelection(deps: Deps, env: EnvironmentRow, body: LiveQueryRequest) {
  const uuids = strList(body.uuid_list, 'uuid_list').map((u) => u.toLowerCase());
  const platforms = strList(body.platform_list, 'platform_list').map((p) => p.toLowerCase());
  const hosts = strList(body.host_list, 'host_list').map((h) => h.toLowerCase());
  const tags = strList(body.tag_list, 'tag_list');
  const statuses = choiceList(body.status_list, 'status_list', ['active', 'inactive'] as const);
  const healths = choiceList(body.health_list, 'health_list', HealthStatuses);
  const risks = choiceList(body.risk_list, 'risk_list', RiskLevels);
  const bounds = statuses.length || healths.length || risks.length ? await healthBoundsOf(deps, env) : undefined;
  for (const e of strList(body.environment_list, 'environment_list')) {
    if (e !== env.name && e.toLowerCase() !== env.uuid.toLowerCase())
      throw badRequest(`environment_list names "${e}", not this environment (${env.name})`);
  }
  const targets = [
    ...uuids.map((value) => ({ type: 'uuid', value })),
    ...platforms.map((value) => ({ type: 'platform', value })),
    ...hosts.map((value) => ({ type: 'host', value })),
    ...tags.map((value) => ({ type: 'tag', value })),
    ...statuses.map((value) => ({ type: 'status', value })),
    ...healths.map((value) => ({ type: 'health', value })),
    ...risks.map((value) => ({ type: 'risk', value })),
  ];
  const all = targets.length === 0;
  let base = deps.db
    .selectFrom('nodes')
    .innerJoin('node_seen', 'node_seen.node_id', 'nodes.id')
    .select('nodes.id')
    .where('nodes.environment_id', '=', env.id);
  if (!all) {
    base = base.where((eb) => {
      const ors = [];
      if (uuids.length) ors.push(eb(eb.fn('lower', ['nodes.uuid']), 'in', uuids));
      if (hosts.length) ors.push(eb(eb.fn('lower', ['nodes.hostname']), 'in', hosts), eb(eb.fn('lower', ['nodes.localname']), 'in', hosts));
      if (platforms.length) ors.push(eb(eb.fn('lower', ['nodes.platform']), 'in', platforms), eb('nodes.platform_bucket', 'in', platforms));
      if (tags.length) {
        ors.push(
          eb(
            'nodes.id',
            'in',
            eb
              .selectFrom('node_tags')
              .innerJoin('tags', 'tags.id', 'node_tags.tag_id')
              .select('node_tags.node_id')
              .where('tags.name', 'in', tags)
              .where('tags.environment_id', '=', env.id),
          ),
        );
      }
      // The union, like the lists above: a node in any of them is targeted.
      for (const s of statuses) ors.push(statusWhere(onSeen(eb), s, bounds!));
      for (const h of healths) ors.push(healthWhere(onSeen(eb), h, bounds!));
      for (const r of risks) ors.push(riskWhere(onSeen(eb), r, bounds!));
      return eb.or(ors);
    });
  }
  return { query: base, targets: all ? [{ type: 'environment', value: env.name }] : targets };
}

/**
 * Seconds until the query expires, 0 for never. `expire_seconds` (1 to a year) wins; else
 * `exp_hours` (0 to 8760, 0 = never, osctrl's meaning); neither: a day, so a query nobody
 * cancels does not stay active for ever (issue 20).
 */
function expirySeconds(body: LiveQueryRequest): number {
  if (body.expire_seconds !== undefined && body.expire_seconds !== null) {
    const s = body.expire_seconds;
    if (typeof s !== 'number' || !Number.isInteger(s) || s < 1 || s > MAX_EXPIRE_SECONDS)
      throw badRequest(`expire_seconds must be an integer from 1 to ${MAX_EXPIRE_SECONDS}`);
    return s;
  }
  if (body.exp_hours === undefined || body.exp_hours === null) return DEFAULT_EXPIRE_SECONDS;
  const h = body.exp_hours;
  if (typeof h !== 'number' || !Number.isInteger(h) || h < 0 || h > 8760) throw badRequest('exp_hours must be an integer from 0 to 8760');
  return h * 3600;
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
      const problem = carvePathProblem(path);
      if (problem) throw badRequest(problem);
      text = carveSql(path);
    } else {
      if (typeof body.query !== 'string' || body.query.trim() === '') throw badRequest('query can not be empty');
      text = body.query.trim();
    }
    const expireSeconds = expirySeconds(body);
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
          expiration: expireSeconds ? new Date(now.getTime() + expireSeconds * 1000).toISOString() : '',
          extra_data: '',
          created_at: ts,
          updated_at: ts,
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      for (let i = 0; i < ids.length; i += 500) {
        await trx
          .insertInto('node_queries')
          .values(ids.slice(i, i + 500).map((node_id) => ({ query_id: q.id, node_id, status: 'pending' })))
          .execute();
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

export async function findQuery(deps: Deps, env: EnvironmentRow, name: string): Promise<QueryRow> {
  const row = await deps.db
    .selectFrom('queries')
    .selectAll()
    .where('environment_id', '=', env.id)
    .where('name', '=', name)
    .executeTakeFirst();
  if (!row) throw notFound(`query "${name}" not found in environment ${env.name}`);
  return row;
}

export async function listLiveQueries(deps: Deps, env: EnvironmentRow, q: { status?: string; page?: string; page_size?: string }) {
  const statuses = ['active', 'completed', 'expired', 'deleted'];
  const want = q.status?.toLowerCase();
  if (want !== undefined && want !== '' && !statuses.includes(want))
    throw badRequest(`invalid status "${q.status}"; valid values: ${statuses.join(', ')}`);
  const page = Math.max(1, Number.parseInt(q.page ?? '1', 10) || 1);
  const size = Math.min(500, Math.max(1, Number.parseInt(q.page_size ?? '50', 10) || 50));
  const now = deps.now();
  const rows = await deps.db
    .selectFrom('queries')
    .selectAll()
    .where('environment_id', '=', env.id)
    .where('type', '=', 'query')
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
  const items = rows.map((r) => toLiveQuery(r, now)).filter((r) => !want || r.status === want.toUpperCase());
  const total = items.length;
  return {
    items: items.slice((page - 1) * size, page * size),
    page,
    page_size: size,
    total_items: total,
    total_pages: total ? Math.ceil(total / size) : 0,
  };
}

/**
 * Where the targets stand (issue 20): how many are online now (onlineSince), how many of those
 * have not answered yet (a client waiting with --exit stops when none are left), and the longest
 * hostname among them (a streamed table sizes its NODE column from it, so no hostname is cut).
 */
async function targetState(
  deps: Deps,
  env: EnvironmentRow,
  queryId: number,
): Promise<{ online: number; online_pending: number; hostname_width: number }> {
  const now = deps.now().getTime();
  // Each node is online within its own cadence (issue 26): the distributed interval it was last
  // told (0: unknown, the environment's), so a lowered interval that has not reached a node yet
  // does not make it look offline. The targets have few distinct intervals: one test per interval.
  const cadences = await deps.db
    .selectFrom('node_queries')
    .innerJoin('nodes', 'nodes.id', 'node_queries.node_id')
    .select('nodes.distributed_interval')
    .distinct()
    .where('node_queries.query_id', '=', queryId)
    .limit(50)
    .execute();
  const online = (eb: ExpressionBuilder<DB, 'nodes' | 'node_queries' | 'node_seen'>) =>
    eb.or([
      ...cadences.map(({ distributed_interval: i }) =>
        eb.and([
          eb('nodes.distributed_interval', '=', i),
          eb('node_seen.last_seen', '>=', onlineSince({ query_interval: i || env.query_interval }, now)),
        ]),
      ),
      // Past the 50 intervals looked at (never in practice): the environment's.
      eb.and([
        eb('nodes.distributed_interval', 'not in', [...cadences.map((c) => c.distributed_interval), -1]),
        eb('node_seen.last_seen', '>=', onlineSince(env, now)),
      ]),
    ]);
  const row = await deps.db
    .selectFrom('node_queries')
    .innerJoin('nodes', 'nodes.id', 'node_queries.node_id')
    .innerJoin('node_seen', 'node_seen.node_id', 'node_queries.node_id')
    .select((eb) => [
      eb.fn.sum<number>(eb.case().when(online(eb)).then(1).else(0).end()).as('online'),
      eb.fn
        .sum<number>(
          eb
            .case()
            .when(eb.and([online(eb), eb('node_queries.status', '=', 'pending')]))
            .then(1)
            .else(0)
            .end(),
        )
        .as('online_pending'),
      eb.fn.max<number>(eb.fn('length', ['nodes.hostname'])).as('hostname_width'),
    ])
    .where('node_queries.query_id', '=', queryId)
    .executeTakeFirst();
  return {
    online: Number(row?.online ?? 0),
    online_pending: Number(row?.online_pending ?? 0),
    hostname_width: Number(row?.hostname_width ?? 0),
  };
}

export async function readLiveQuery(deps: Deps, env: EnvironmentRow, name: string) {
  const row = await findQuery(deps, env, name);
  const { online, online_pending } = await targetState(deps, env, row.id);
  return { ...toLiveQuery(row, deps.now()), online, online_pending };
}

/** Hostnames (lower-case) that several targets of the query share: clones, named with their UUID too (issue 26). */
async function cloneHostnames(deps: Deps, queryId: number): Promise<Set<string>> {
  const rows = await deps.db
    .selectFrom('node_queries')
    .innerJoin('nodes', 'nodes.id', 'node_queries.node_id')
    .select((eb) => eb.fn('lower', ['nodes.hostname']).as('h'))
    .where('node_queries.query_id', '=', queryId)
    .groupBy((eb) => eb.fn('lower', ['nodes.hostname']))
    .having((eb) => eb.fn.countAll(), '>', 1)
    .limit(1000)
    .execute();
  return new Set(rows.map((r) => String(r.h)));
}

export async function liveQueryResults(
  deps: Deps,
  env: EnvironmentRow,
  name: string,
  q: { page?: string; page_size?: string; after_id?: string; since?: string },
) {
  const row = await findQuery(deps, env, name);
  const page = Math.max(1, Number.parseInt(q.page ?? '1', 10) || 1);
  const size = Math.min(1000, Math.max(1, Number.parseInt(q.page_size ?? '100', 10) || 100));
  const after = Number.parseInt(q.after_id ?? '0', 10) || 0;
  // The targets' state is read before the answers: an answer is committed with its target's
  // state, so a state that says no online target is pending comes with a page that holds every
  // answer. Read after the page, an answer committed between the two reads was counted as given
  // and missing from the page, and a client waiting with --exit stopped without it (found with
  // the real osquery agent on a slower machine).
  const targets = await targetState(deps, env, row.id);
  let base = deps.db.selectFrom('query_results').where('query_id', '=', row.id).where('id', '>', after);
  if (q.since && !Number.isNaN(Date.parse(q.since))) base = base.where('created_at', '>=', new Date(q.since).toISOString());
  const total = Number((await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirst())?.n ?? 0);
  const rows = await base
    .selectAll()
    .orderBy('id')
    .limit(size)
    .offset((page - 1) * size)
    .execute();
  const clones = await cloneHostnames(deps, row.id);
  const label = (hostname: string, uuid: string) =>
    hostname && !clones.has(hostname.toLowerCase()) ? hostname : `${hostname || uuid} (${uuid.slice(0, 8)})`;
  const items = rows.map((r) => {
    let data: unknown = [];
    try {
      data = JSON.parse(r.rows);
    } catch {
      data = [];
    }
    return {
      id: r.id,
      uuid: r.node_uuid,
      hostname: r.hostname,
      node: label(r.hostname, r.node_uuid),
      status: r.status,
      error: r.error,
      rows: data,
      created_at: r.created_at,
    };
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
    ...targets,
    hostname_width: targets.hostname_width + (clones.size > 0 ? 11 : 0),
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
    await deps.db
      .updateTable('queries')
      .set({ ...set, active: 0, updated_at: ts })
      .where('id', '=', row.id)
      .execute();
    const verb = { delete: 'deleted', complete: 'completed', expire: 'expired', cancel: 'cancelled' }[
      action as (typeof QueryActions)[number]
    ];
    const message = `query ${name} ${verb}`;
    await writeAudit(deps, {
      line: `${message} (environment ${env.name})`,
      logType: row.type === 'carve' ? LogTypes.carve : LogTypes.query,
      username: caller.user.username,
      sourceIp,
      env,
    });
    return message;
  });
}
