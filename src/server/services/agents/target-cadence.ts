// What a carve of some targets would wait for, without starting one (issue 26): how many nodes the
// targets match, and the longest distributed interval among those online, as the server knows it
// (what each node's configuration last told it: nodes.distributed_interval). `carves run` takes its
// default --wait from it, so a carve right after `env intervals --query` was lowered still waits
// for the nodes that poll at the old, longer interval until their next config fetch.
import type { Deps } from '../../context.js';
import type { EnvironmentRow } from '../../store/schema.js';
import { onlineSince } from '../fleet/node-filters.js';
import { targetSelection, type LiveQueryRequest } from './live-queries.js';

export interface TargetCadence {
  /** Nodes the targets match (a run would be started on them). */
  expected: number;
  /** Seconds: the longest distributed interval of the online targets; the environment's when none is online. */
  query_interval: number;
}

export async function targetCadence(deps: Deps, env: EnvironmentRow, body: LiveQueryRequest): Promise<TargetCadence> {
  const { query } = await targetSelection(deps, env, body);
  // One row per distinct interval (few): how many targets poll at it, and the latest seen of them.
  const groups = await deps.db
    .selectFrom('nodes')
    .innerJoin('node_seen', 'node_seen.node_id', 'nodes.id')
    .select((eb) => ['nodes.distributed_interval', eb.fn.countAll<number>().as('n'), eb.fn.max('node_seen.last_seen').as('seen')])
    .where('nodes.id', 'in', query)
    .groupBy('nodes.distributed_interval')
    .execute();
  const now = deps.now().getTime();
  let expected = 0;
  let slowest = 0;
  for (const g of groups) {
    expected += Number(g.n);
    // 0: not known (enrolled before the server kept it): the environment's.
    const interval = Number(g.distributed_interval) || env.query_interval;
    const online = g.seen !== null && String(g.seen) >= onlineSince({ query_interval: interval }, now);
    if (online) slowest = Math.max(slowest, interval);
  }
  return { expected, query_interval: slowest || env.query_interval };
}
