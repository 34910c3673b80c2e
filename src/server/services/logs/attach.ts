// Issue 30 on the spool of issue 28, wired where the server starts: the query reports are kept in
// the spool's append transaction, the log followers of this process are woken by its commits, and
// the spool's pruner keeps each environment's retention.
import type { Deps } from '../../context.js';
import type { Spool } from '../delivery/spool.js';
import type { Delivery } from '../delivery/delivery.js';
import type { LogWatch } from './follow.js';
import { reportsHook } from './reports.js';
import { retention } from './retention.js';

/** The environments of the spool's stream keys (`env\0type`; env 0 is a type stream of all environments). */
export function environmentsOf(streams: Iterable<string>): number[] {
  const envs = new Set<number>();
  for (const k of streams) {
    const env = Number(k.split('\u0000')[0]);
    if (env > 0) envs.add(env);
  }
  return [...envs];
}

export function attachLogs(o: { spool: Spool; delivery: Delivery; deps: Deps; adminDeps: Deps; logWatch: LogWatch }): void {
  o.spool.onCommit.push(reportsHook(o.deps));
  o.spool.on('committed', (streams) => o.logWatch.committed(environmentsOf(streams)));
  // Settings and stream positions read on the admin connections (SQLite: reader threads).
  o.delivery.spoolPruner.retention = (envId) => retention(o.adminDeps, envId);
}
