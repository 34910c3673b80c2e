// Rate limits kept in the database (rate_windows), so every replica counts the same hits. A
// window starts at the first hit after the previous window ended and lasts `windowMs`; one row
// per scope and key holds the current window. A hit is one upsert that either adds to the
// current window or, when it has ended, starts a new one, and returns the count: atomic on
// SQLite and PostgreSQL alike (SET expressions see the row as it was).
//
// Exact mode (login attempts, denied requests, failed logins per account): one upsert per hit;
// these are rare, and the limit holds exactly across replicas.
// Batched mode (the API limit, on every authenticated request): hits are counted in memory and
// added to the row every `syncMs`; a replica decides on the shared count of its last sync plus its
// own unsynced hits. Over-allowance is bounded: N replicas can each let through at most the hits
// of one sync interval beyond the limit before they see each other's counts.
import { sql, type Kysely } from 'kysely';
import type { DB } from '../store/schema.js';

export type RateScope = 'login' | 'denied' | 'api' | 'account' | 'enroll' | 'sql';

interface Local {
  windowStart: number;
  /** The shared count as of the last sync (this replica's synced hits included). */
  shared: number;
  pending: number;
}

export class RateLimiter {
  private readonly local = new Map<string, Local>();
  private timer?: NodeJS.Timeout;
  private syncing: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: Kysely<DB>,
    private readonly scope: RateScope,
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly now: () => number,
    private readonly opts: { syncMs?: number; onError?: (e: unknown) => void } = {},
  ) {}

  private waitSeconds(windowStart: number, t: number): number {
    return Math.max(1, Math.ceil((windowStart + this.windowMs - t) / 1000));
  }

  /** Adds n hits at time t to the key's window (a new one if it ended); its count and start. */
  private async add(key: string, n: number, t: number): Promise<{ count: number; windowStart: number }> {
    const ended = t - this.windowMs;
    const row = await this.db
      .insertInto('rate_windows')
      .values({ scope: this.scope, key, window_start: t, count: n })
      .onConflict((oc) =>
        oc.columns(['scope', 'key']).doUpdateSet({
          count: sql<number>`case when rate_windows.window_start <= ${ended} then ${n} else rate_windows.count + ${n} end`,
          window_start: sql<number>`case when rate_windows.window_start <= ${ended} then ${t} else rate_windows.window_start end`,
        }),
      )
      .returning(['count', 'window_start'])
      .executeTakeFirstOrThrow();
    return { count: Number(row.count), windowStart: Number(row.window_start) };
  }

  /** Counts a hit. Returns the seconds until the window ends when over the limit, else 0. */
  async hit(key: string): Promise<number> {
    const t = this.now();
    if (this.opts.syncMs === undefined) {
      const { count, windowStart } = await this.add(key, 1, t);
      return count <= this.limit ? 0 : this.waitSeconds(windowStart, t);
    }
    let l = this.local.get(key);
    if (!l || t - l.windowStart >= this.windowMs) {
      l = { windowStart: t, shared: 0, pending: 0 };
      this.local.set(key, l);
    }
    l.pending++;
    return l.shared + l.pending <= this.limit ? 0 : this.waitSeconds(l.windowStart, t);
  }

  /**
   * Exact mode, for costs rather than hits: adds `n` to the key's window unless that would pass
   * the limit; then nothing is added and the seconds until the window ends are returned (else 0).
   * Replicas taking at the same moment may each pass the check: the limit can be exceeded by what
   * they take at once.
   */
  async take(key: string, n: number): Promise<number> {
    const { count, retryAfter } = await this.count(key);
    if (count > 0 && count + n > this.limit) return retryAfter;
    await this.add(key, n, this.now());
    return 0;
  }

  /** The count of the key's current window, without counting a hit (0 when it has ended). */
  async count(key: string): Promise<{ count: number; retryAfter: number }> {
    const t = this.now();
    const row = await this.db
      .selectFrom('rate_windows')
      .select(['count', 'window_start'])
      .where('scope', '=', this.scope)
      .where('key', '=', key)
      .executeTakeFirst();
    if (!row || Number(row.window_start) <= t - this.windowMs) return { count: 0, retryAfter: 0 };
    return { count: Number(row.count), retryAfter: this.waitSeconds(Number(row.window_start), t) };
  }

  /** Batched mode: adds every replica-local hit to the shared rows and reads their totals back. */
  sync(): Promise<void> {
    this.syncing = this.syncing.then(async () => {
      const t = this.now();
      for (const [key, l] of [...this.local]) {
        const n = l.pending;
        if (n === 0) {
          if (t - l.windowStart >= this.windowMs) this.local.delete(key);
          continue;
        }
        l.pending = 0;
        try {
          const shared = await this.add(key, n, t);
          l.shared = shared.count;
          l.windowStart = shared.windowStart;
        } catch (e) {
          l.pending += n; // the database was busy or down: reported, retried at the next sync
          this.opts.onError?.(e);
        }
      }
    });
    return this.syncing;
  }

  start(): void {
    if (this.opts.syncMs === undefined) return;
    this.timer = setInterval(() => void this.sync(), this.opts.syncMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    if (this.opts.syncMs !== undefined) await this.sync();
  }
}

/** Deletes windows that ended before `before` (ms): run with the session purge. */
export async function purgeRateWindows(db: Kysely<DB>, before: number): Promise<void> {
  await db.deleteFrom('rate_windows').where('window_start', '<', before).execute();
  await db.deleteFrom('denial_windows').where('window_start', '<', before).execute();
}
