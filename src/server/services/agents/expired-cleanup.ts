// The clean-up of what has expired, every `admin/cleanup_expired` seconds (as osctrl-admin does):
// live queries and carves past their expiration are marked expired and inactive (a carve's status
// is read from its flags, so until then it still lists as ACTIVE or PENDING), then any other
// clean-up the server registers runs (start.ts), each on its own: one failing does not stop the
// others. Every process runs it; the updates are idempotent, so replicas may overlap.
import type { Deps } from '../../context.js';
import { NEVER } from '../../../api/index.js';
import { SettingInterval } from '../../lib/setting-interval.js';
import { serverSettingMs } from '../environments/settings-values.js';

export type Cleanup = { name: string; run: (deps: Deps) => Promise<unknown> };

/** Marks the live queries and carves whose expiration has passed expired; returns how many. */
export async function expireOverdueQueries(deps: Deps): Promise<number> {
  const now = deps.now().toISOString();
  const r = await deps.db
    .updateTable('queries')
    .set({ expired: 1, active: 0, updated_at: now })
    .where('expired', '=', 0)
    .where('deleted', '=', 0)
    .where('completed', '=', 0)
    .where('expiration', '<>', '')
    .where('expiration', '<>', NEVER)
    .where('expiration', '<=', now)
    .executeTakeFirst();
  return Number(r.numUpdatedRows);
}

export class ExpiredCleanup extends SettingInterval {
  constructor(deps: Deps, more: Cleanup[] = []) {
    super(
      'expired clean-up',
      () => serverSettingMs(deps, 'admin', 'cleanup_expired'),
      async () => {
        await expireOverdueQueries(deps);
        for (const c of more) await c.run(deps).catch((e: unknown) => void deps.faults.report(c.name, e));
      },
      deps.faults,
    );
  }
}
