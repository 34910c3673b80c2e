// Deleting dead sessions (and expired MFA challenges) on the schedule of the `admin/cleanup_sessions`
// setting (seconds). Expiry itself is enforced per request (auth.ts); this only keeps the tables
// small. Started and stopped by start.ts; a changed interval applies from the next run.
import type { Deps } from '../../context.js';
import { purgeRateWindows } from '../../lib/rate-limit.js';
import { SettingInterval } from '../../lib/setting-interval.js';
import { serverSettingMs } from '../environments/settings-values.js';

export async function purgeDeadSessions(deps: Deps): Promise<number> {
  const now = deps.now().toISOString();
  const r = await deps.db.deleteFrom('sessions').where('expires_at', '<=', now).executeTakeFirst();
  await deps.db.deleteFrom('mfa_challenges').where('expires_at', '<=', now).execute();
  // Rate-limit and denial windows: the longest is 15 minutes; an hour back is safely over.
  await purgeRateWindows(deps.db, deps.now().getTime() - 3_600_000);
  return Number(r.numDeletedRows);
}

export class SessionPurger extends SettingInterval {
  constructor(deps: Deps) {
    super(
      'session purge',
      () => serverSettingMs(deps, 'admin', 'cleanup_sessions'),
      () => purgeDeadSessions(deps),
      deps.faults,
    );
  }
}
