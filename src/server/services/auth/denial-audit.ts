// Denied requests (401, 403 and 429 answers of the auth hook) audited in aggregate: one row per
// client address (and username, when the token named one) and minute, with a count, so a flood of
// refused requests cannot fill the disk or bury real events. A window starts at the first denial
// after the previous one ended and lasts a minute. That first denial, on whichever replica, writes
// the row and claims the window in denial_windows in one transaction; a replica that loses the
// claim adds to the winner's row.
// Later denials only count in memory, and each replica adds its count to the row every few
// seconds, when the window ends, and at shutdown. Started and stopped by start.ts.
import { sql } from 'kysely';
import type { Deps } from '../../context.js';
import { LogTypes, Severities } from '../audit/audit.js';
import { Periodic } from '../../lib/periodic.js';

export const DENIAL_WINDOW_MS = 60_000;
const FLUSH_MS = 5_000;

export interface Denial {
  ip: string;
  line: string;
  username?: string;
  env?: { id: number; uuid: string } | null;
}

interface Window {
  start: number;
  ip: string;
  username: string;
  /** The row, once this replica inserted or found it; `own` when this replica's insert counted 1. */
  row?: Promise<{ id: number; own: boolean }>;
  line: string;
  /** Denials counted here and not yet added to the row. */
  pending: number;
}

/** Thrown inside the claiming transaction to undo its insert: another replica has the window. */
class Claimed extends Error {}

export class DenialAudit {
  private readonly windows = new Map<string, Window>();
  private readonly task: Periodic;

  constructor(private readonly deps: Deps) {
    this.task = new Periodic('denied-request audit', FLUSH_MS, () => this.flushAll(), deps.faults);
  }

  /** Counts a denial; writes the row when it is the first of this address's window anywhere. */
  async record(d: Denial): Promise<void> {
    const t = this.deps.now().getTime();
    const key = `${d.ip}\u0000${d.username ?? ''}`;
    let w = this.windows.get(key);
    if (w && t - w.start >= DENIAL_WINDOW_MS) {
      await this.flushOne(key, w);
      w = undefined;
    }
    if (!w) {
      w = { start: t, ip: d.ip, username: d.username ?? '', line: d.line, pending: 0 };
      this.windows.set(key, w);
      const row = this.claim(d, t);
      w.row = row;
      let claimed: Awaited<typeof row>;
      try {
        claimed = await row;
      } catch (e) {
        // The database is down: forget the window, so the next denial claims it again.
        if (this.windows.get(key) === w) this.windows.delete(key);
        throw e;
      }
      w.start = claimed.start;
      if (!claimed.own) w.pending++;
      return;
    }
    w.pending++;
    await w.row;
  }

  /** The window's row: inserted here (own) when no replica has a window running for this key. */
  private async claim(d: Denial, t: number): Promise<{ id: number; own: boolean; start: number }> {
    const ip = d.ip;
    const username = d.username ?? '';
    try {
      return await this.deps.db.transaction().execute(async (trx) => {
        const row = await trx
          .insertInto('audit_logs')
          .values({
            created_at: new Date(t).toISOString(),
            env_uuid: d.env?.uuid ?? '',
            environment_id: d.env?.id ?? 0,
            line: d.line,
            log_type: LogTypes.visit,
            severity: Severities.warning,
            service: 'api',
            source_ip: ip,
            username,
            count: 1,
          })
          .returning('id')
          .executeTakeFirstOrThrow();
        // Takes the key's window unless another one is still running.
        const r = await trx
          .insertInto('denial_windows')
          .values({ source_ip: ip, username, window_start: t, audit_id: row.id })
          .onConflict((oc) =>
            oc
              .columns(['source_ip', 'username'])
              .doUpdateSet({ window_start: t, audit_id: row.id })
              .where('denial_windows.window_start', '<=', t - DENIAL_WINDOW_MS),
          )
          .executeTakeFirst();
        if (Number(r.numInsertedOrUpdatedRows ?? 0) === 0) throw new Claimed();
        return { id: row.id, own: true, start: t };
      });
    } catch (e) {
      if (!(e instanceof Claimed)) throw e;
    }
    const won = await this.deps.db
      .selectFrom('denial_windows')
      .select(['audit_id', 'window_start'])
      .where('source_ip', '=', ip)
      .where('username', '=', username)
      .executeTakeFirstOrThrow();
    return { id: won.audit_id, own: false, start: Number(won.window_start) };
  }

  private async flushOne(key: string, w: Window): Promise<void> {
    if (w.pending > 0 && w.row) {
      const n = w.pending;
      w.pending = 0;
      try {
        const { id } = await w.row;
        // The count is added, never set: replicas add theirs to the same row. The line states the
        // row's total as of this update.
        const suffix = sql<string>`${` [`} || cast(cast(count + ${n} as integer) as text) || ${` denied requests from ${w.ip} in the minute from ${new Date(w.start).toISOString()}]`}`;
        const base = w.line;
        await this.deps.db
          .updateTable('audit_logs')
          .set((eb) => ({ count: eb('count', '+', n), line: sql<string>`${base} || ${suffix}` }))
          .where('id', '=', id)
          .execute();
      } catch (e) {
        w.pending += n; // counted again at the next flush
        throw e;
      }
    }
    const ended = this.deps.now().getTime() - w.start >= DENIAL_WINDOW_MS;
    if (ended && w.pending === 0 && this.windows.get(key) === w) this.windows.delete(key);
  }
  /** Brings every row up to date and forgets ended windows. */
  private async flushAll(): Promise<void> {
    for (const [key, w] of [...this.windows]) await this.flushOne(key, w);
  }

  /** flushAll after the timer's flush in progress, whose counts may not be added yet (tests). */
  flush(): Promise<void> {
    return this.task.runNow();
  }

  start(): void {
    this.task.start();
  }

  async stop(): Promise<void> {
    await this.task.stop();
  }
}
