// What the agent door drives: the queries a node owes, and the answers (rows, errors, carve ids)
// it sends back.
import { inTransaction } from '../../store/db.js';
import type { Deps } from '../../context.js';
import type { NodeRow } from '../../store/schema.js';
import { recordCarveIds } from './carve-uploads.js';

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
  node: Pick<NodeRow, 'id' | 'uuid' | 'hostname'>,
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
      .select(['queries.id', 'queries.name', 'queries.type'])
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
      await trx
        .insertInto('query_results')
        .values({
          query_id: q.id,
          node_id: node.id,
          node_uuid: node.uuid,
          hostname: node.hostname,
          status,
          error,
          rows: JSON.stringify(rows),
          created_at: ts,
        })
        .execute();
      await trx
        .updateTable('node_queries')
        .set({ status: status === 0 ? 'answered' : 'error' })
        .where('query_id', '=', q.id)
        .where('node_id', '=', node.id)
        .execute();
      await trx
        .updateTable('queries')
        .set((eb) => ({ executions: eb('executions', '+', 1), errors: eb('errors', '+', status === 0 ? 0 : 1), updated_at: ts }))
        .where('id', '=', q.id)
        .execute();
      // A carve's answer names the ids its carver start will carry (carve-uploads.ts).
      if (q.type === 'carve') await recordCarveIds(trx, q.id, node.id, rows as Record<string, unknown>[]);
      recorded.push({ name: q.name, rows });
    }
  });
  return recorded;
}
