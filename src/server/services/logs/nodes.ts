// The node a logs or report request names (`?node=`): a UUID, hostname or local name in the
// environment, as a node read takes it (4.12): unknown 404, several 409 listing their UUIDs.
import type { Deps } from '../../context.js';
import type { EnvironmentRow, NodeRow } from '../../store/schema.js';
import { conflict, notFound } from '../../errors.js';
import { findNodeRows } from '../fleet/nodes.js';

export async function resolveNode(deps: Deps, env: EnvironmentRow, ref: string): Promise<NodeRow> {
  const rows = await findNodeRows(deps, env, ref);
  if (rows.length === 0) throw notFound(`node "${ref}" not found in environment ${env.name}`);
  if (rows.length > 1)
    throw conflict(`"${ref}" matches ${rows.length} nodes: ${rows.map((r) => r.uuid).join(', ')}; use a UUID`, {
      uuids: rows.map((r) => r.uuid),
    });
  return rows[0];
}
