// Fixed-window rate limits kept in the database (rate_windows), so every replica counts the same
// hits: a window is [k * windowMs, (k + 1) * windowMs) of the wall clock, one row per scope, key
// and window, incremented by an upsert that returns the new count (atomic on SQLite and
// PostgreSQL alike).
//
// Exact mode (login attempts, denied requests, failed logins per account): one upsert per hit;
// these are rare, and the limit holds exactly across replicas.
// Batched mode (the API limit, on every authenticated request): hits are counted in memory and
// added to the row every `syncMs`; a replica decides on the shared count of its last sync plus its
// own unsynced hits. Over-allowance is bounded: N replicas can each let through at most the hits
// of one sync interval beyond the limit before they see each other's counts.
import type { Kysely } from 'kysely';
import type { DB } from '../store/schema.js';

export type RateScope = 'login' | 'denied' | 'api' | 'account';

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
    private readonly opts: { syncMs?: number } = {},
  ) {}

  private windowOf(t: number): number {
    return Math.floor(t / this.windowMs) * this.windowMs;
  }

  private waitSeconds(windowStart: number, t: number): number {
    return Math.max(1, Math.ceil((windowStart + this.windowMs - t) / 1000));
  }

  /** Adds n hits to the shared row and returns its new count. */
  private async add(key: string, windowStart: number, n: number): Promise<number> {
    const row = await this.db
      .insertInto('rate_windows')
      .values({ scope: this.scope, key, window_start: windowStart, count: n })
      .onConflict((oc) => oc.columns(['scope', 'key', 'window_start']).doUpdateSet((eb) => ({ count: eb('rate_windows.count', '+', n) })))
      .returning('count')
      .executeTakeFirstOrThrow();
    return Number(row.count);
  }

  /** Counts a hit. Returns the seconds until the window resets when over the limit, else 0. */
  async hit(key: string): Promise<number> {
    const t = this.now();
    const windowStart = this.windowOf(t);
    if (this.opts.syncMs === undefined) {
      const count = await this.add(key, windowStart, 1);
      return count <= this.limit ? 0 : this.waitSeconds(windowStart, t);
    }
    let l = this.local.get(key);
    if (!l || l.windowStart !== windowStart) {
      l = { windowStart, shared: 0, pending: 0 };
      this.local.set(key, l);
    }
    l.pending++;
    return l.shared + l.pending <= this.limit ? 0 : this.waitSeconds(windowStart, t);
  }

  /** The shared count of the current window, without counting a hit (0 when none). */
  async count(key: string): Promise<{ count: number; retryAfter: number }> {
    const t = this.now();
    const windowStart = this.windowOf(t);
    const row = await this.db
      .selectFrom('rate_windows')
      .select('count')
      .where('scope', '=', this.scope)
      .where('key', '=', key)
      .where('window_start', '=', windowStart)
      .executeTakeFirst();
    return { count: Number(row?.count ?? 0), retryAfter: this.waitSeconds(windowStart, t) };
  }

  /** Batched mode: adds every replica-local hit to the shared rows and reads their totals back. */
  sync(): Promise<void> {
    this.syncing = this.syncing.then(async () => {
      const current = this.windowOf(this.now());
      for (const [key, l] of [...this.local]) {
        if (l.windowStart !== current && l.pending === 0) {
          this.local.delete(key);
          continue;
        }
        const n = l.pending;
        l.pending = 0;
        try {
          l.shared = await this.add(key, l.windowStart, n);
        } catch {
          l.pending += n; // the database was busy: retried at the next sync
        }
        if (l.windowStart !== current && l.pending === 0) this.local.delete(key);
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
