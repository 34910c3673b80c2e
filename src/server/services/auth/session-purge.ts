// Deleting dead sessions (and expired MFA challenges) on the schedule of the `admin/cleanup_sessions`
// setting (seconds). Expiry itself is enforced per request (auth.ts); this only keeps the tables
// small. Started and stopped by start.ts; the interval is read again before each run, so a
// change through the settings API applies from the next run.
import type { Deps } from '../../context.js';
import { purgeRateWindows } from '../../lib/rate-limit.js';

const SETTING = { service: 'admin', name: 'cleanup_sessions' } as const;
/** How often the setting is read again, so a changed interval applies within seconds. */
const TICK_MS = 5_000;

export async function purgeDeadSessions(deps: Deps): Promise<number> {
  const now = deps.now().toISOString();
  const r = await deps.db.deleteFrom('sessions').where('expires_at', '<=', now).executeTakeFirst();
  await deps.db.deleteFrom('mfa_challenges').where('expires_at', '<=', now).execute();
  // Rate-limit and denial windows: the longest is 15 minutes; an hour back is safely over.
  await purgeRateWindows(deps.db, deps.now().getTime() - 3_600_000);
  return Number(r.numDeletedRows);
}

export class SessionPurger {
  private loop?: Promise<void>;
  private stopped = true;
  private wake?: () => void;

  constructor(private readonly deps: Deps) {}

  /** The setting in milliseconds; missing, zero or negative: purging is off. */
  private async intervalMs(): Promise<number | undefined> {
    const row = await this.deps.db
      .selectFrom('settings')
      .select('integer_value')
      .where('service', '=', SETTING.service)
      .where('name', '=', SETTING.name)
      .where('environment_id', '=', 0)
      .where('deleted_at', 'is', null)
      .executeTakeFirst();
    const seconds = Number(row?.integer_value ?? 0);
    return seconds > 0 ? seconds * 1000 : undefined;
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      timer.unref();
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  private async run(): Promise<void> {
    let last = Date.now();
    while (!this.stopped) {
      const ms = await this.intervalMs().catch(() => undefined);
      const due = ms === undefined ? TICK_MS : Math.max(0, last + ms - Date.now());
      await this.sleep(Math.min(due, TICK_MS));
      if (this.stopped || ms === undefined || Date.now() - last < ms) continue;
      last = Date.now();
      // A failed run (database busy, down or full) is reported and retried at the next interval.
      await purgeDeadSessions(this.deps).catch((e) => void this.deps.faults.report('session purge', e));
    }
  }

  start(): void {
    this.stopped = false;
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await this.loop;
  }
}
