// Nodes (4.11 list, 4.12 read, 4.13 delete), filtered, sorted and counted in SQL.
import type { Deps, Caller } from '../../context.js';
import type { EnvironmentRow, NodeRow } from '../../store/schema.js';
import { LogTypes, type Node, type NodesQuery, type Page } from '../../../api/index.js';
import { badRequest, conflict, notFound } from '../../errors.js';
import { pageOf, parsePage } from '../../lib/pagination.js';
import { inTransaction } from '../../store/db.js';
import { MIN_INDEXED_QUERY, readGenerations, type Generations } from '../../store/node-index.js';
import { writeAudit } from '../audit/audit.js';
import { hasLevel } from '../../permissions.js';
import { healthBounds } from './node-filters.js';
import { agentConfig } from '../environments/osquery-config.js';
import { shapeContext, toNode, tagsByNode } from './node-shape.js';
import {
  type Filters,
  SEEN_FIELDS,
  crossedOnce,
  filteredTotal,
  nodesWithSeen,
  parseNodeQuery,
  tagIdOf,
  taggedCount,
} from './node-query.js';
import { derivedPage, derivedTotal, pageRows, shapedPage, statusClock } from './node-pages.js';

/** `gens`: the change counters this request's authentication read (one read per request). */
export async function listNodes(deps: Deps, env: EnvironmentRow, query: NodesQuery, gens?: Generations): Promise<Page<Node>> {
  const params = parseNodeQuery(query);
  if (params.config) params.configHash = agentConfig(env).hash;
  const pageReq = parsePage(query);
  const generation = gens ?? (await readGenerations(deps.db, deps.readNow));
  const ctx = await shapeContext(deps, env, generation);
  const cutoff = new Date(ctx.nowMs - ctx.inactiveHours * 3600_000).toISOString();
  const filters: Filters = { ...params };
  if (params.tag !== undefined) {
    filters.tagId = await tagIdOf(deps, env, params.tag, generation.counts);
    if (filters.tagId === undefined) return pageOf([], pageReq, 0);
  }
  if (params.health || params.risk) {
    // Health and risk move with two cutoffs (inactive, stale) and the fleet's newest osquery: the
    // total is moved with them (derivedTotal), a page read again once a node crossed (derivedPage).
    filters.bounds = healthBounds(ctx.nowMs, ctx.inactiveHours, env, ctx.newestOsqueryVersion);
    const total = await derivedTotal(deps, env, filters, generation, ctx);
    if (pageReq.offset >= total) return pageOf([], pageReq, total);
    const page = await derivedPage(deps, env, filters, pageReq, generation);
    return shapedPage(page, pageReq, total, ctx);
  }
  // Totals follow the counts counter: tagging, a node's config hash and validity move it too, and
  // a check-in only when it brings a node back across a window (migration 017_node_seen), so under steady
  // check-ins a total is counted once, not every second.
  const countGeneration = generation.counts;
  const cross = crossedOnce(deps, env, filters, countGeneration);
  const total = await filteredTotal(deps, env, filters, cutoff, countGeneration, cross, generation.seen);
  if (pageReq.offset >= total) return pageOf([], pageReq, total);
  // Which end to read a tag's page from: walking the sort index visits about
  // (offset + size) * nodes / matches nodes to fill the page; the tag's own range visits each
  // tagged node once. The cheaper one (a rare tag, or a page deep into a common one).
  let fromTag = false;
  if (filters.tagId !== undefined || (params.q && [...params.q].length < MIN_INDEXED_QUERY)) {
    const all = await filteredTotal(deps, env, { sort: params.sort, order: params.order }, cutoff, generation.counts, cross);
    const walked = ((pageReq.offset + pageReq.pageSize) * all) / Math.max(1, total);
    if (filters.tagId !== undefined) fromTag = (await taggedCount(deps, filters.tagId, generation.counts)) < walked;
    // The same choice for a short search: test the nodes along the sort index while few are
    // walked per match, else read the matches from the search-text index and sort them.
    else filters.qScan = walked > all / 8;
  }
  const page = await pageRows(deps, env, filters, pageReq, cutoff, generation, statusClock(filters, cutoff, generation, cross), fromTag);
  return shapedPage(page, pageReq, total, ctx);
}

export async function findNodeRows(deps: Deps, env: EnvironmentRow, ref: string): Promise<NodeRow[]> {
  return nodesWithSeen(deps.db)
    .selectAll('nodes')
    .select(SEEN_FIELDS)
    .where('nodes.environment_id', '=', env.id)
    .where((eb) =>
      eb.or([
        eb('nodes.uuid', '=', ref.toLowerCase()),
        eb('nodes.uuid', '=', ref.toUpperCase()),
        eb('nodes.hostname', '=', ref),
        eb('nodes.localname', '=', ref),
      ]),
    )
    .orderBy('nodes.id')
    .execute();
}

export async function readNode(deps: Deps, caller: Caller, env: EnvironmentRow, ref: string): Promise<Node> {
  let rows = await findNodeRows(deps, env, ref);
  if (rows.length === 0) throw notFound(`node "${ref}" not found in environment ${env.name}`);
  // A node's own identifier wins over other nodes' hostnames (issue 26): osquery's default
  // --host_identifier is the hostname, and such a node shares its identifier with the hostname of
  // every other node of that host (clones, a host enrolled again by instance or UUID).
  const exact = rows.filter((r) => r.uuid.toLowerCase() === ref.toLowerCase());
  if (exact.length === 1) rows = exact;
  if (rows.length > 1) {
    const uuids = rows.map((r) => r.uuid);
    throw conflict(`"${ref}" matches ${rows.length} nodes: ${uuids.join(', ')}; use a UUID`, { uuids });
  }
  const row = rows[0]!;
  const ctx = await shapeContext(deps, env, caller.generations ?? (await readGenerations(deps.db, deps.readNow)));
  const tags = await tagsByNode(deps, [row.id]);
  const isEnvAdmin = hasLevel(caller.isSuperAdmin, caller.access.get(env.id), 'admin');
  return toNode(row, tags.get(row.id) ?? [], ctx, isEnvAdmin);
}

export async function deleteNode(deps: Deps, caller: Caller, env: EnvironmentRow, uuid: string, sourceIp: string): Promise<string> {
  if (!uuid) throw badRequest('uuid is required');
  const node = await deps.db
    .selectFrom('nodes')
    .select(['id', 'uuid', 'hostname'])
    .where('environment_id', '=', env.id)
    .where((eb) => eb.or([eb('uuid', '=', uuid.toLowerCase()), eb('uuid', '=', uuid.toUpperCase())]))
    .executeTakeFirst();
  if (!node) throw notFound(`node ${uuid} not found in environment ${env.name}`);
  // The delete (with its live-query assignments) and its audit row commit together.
  await inTransaction(deps.db, async (trx) => {
    await trx.deleteFrom('node_tags').where('node_id', '=', node.id).execute();
    await trx.deleteFrom('node_queries').where('node_id', '=', node.id).execute();
    await trx.deleteFrom('nodes').where('id', '=', node.id).execute();
    await writeAudit(
      { ...deps, db: trx },
      {
        line: `node ${node.uuid} (${node.hostname}) deleted from ${env.name}`,
        logType: LogTypes.node,
        username: caller.user.username,
        sourceIp,
        env,
      },
    );
  });
  return `node ${node.uuid} deleted`;
}
