// Denied requests (401, 403 and 429 answers of the auth hook) audited in aggregate: one row per
// client address (and username, when the token named one) and minute, with a count, so a flood of
// refused requests cannot fill the disk or bury real events. Windows are minutes of the wall clock.
// The first denial of a window, on whichever replica, writes the row and claims the window in
// denial_windows in one transaction; a replica that loses the claim adds to the winner's row.
// Later denials only count in memory, and each replica adds its count to the row every few
// seconds, when the window ends, and at shutdown. Started and stopped by start.ts.
import { sql } from 'kysely';
import type { Deps } from '../context.js';
import { LogTypes, Severities } from './audit.js';

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
  private timer?: NodeJS.Timeout;

  constructor(private readonly deps: Deps) {}

  /** Counts a denial; writes the row when it is the first of this address's window anywhere. */
  async record(d: Denial): Promise<void> {
    const t = this.deps.now().getTime();
    const start = Math.floor(t / DENIAL_WINDOW_MS) * DENIAL_WINDOW_MS;
    const key = `${d.ip}\u0000${d.username ?? ''}`;
    let w = this.windows.get(key);
    if (w && w.start !== start) {
      await this.flushOne(key, w);
      w = undefined;
    }
    if (!w) {
      w = { start, ip: d.ip, username: d.username ?? '', line: d.line, pending: 0 };
      this.windows.set(key, w);
      const row = this.claim(d, start);
      w.row = row;
      if (!(await row).own) w.pending++;
      return;
    }
    w.pending++;
    await w.row;
  }

  private async claim(d: Denial, start: number): Promise<{ id: number; own: boolean }> {
    const where = { source_ip: d.ip, username: d.username ?? '', window_start: start };
    try {
      return await this.deps.db.transaction().execute(async (trx) => {
        const row = await trx
          .insertInto('audit_logs')
          .values({
            created_at: this.deps.now().toISOString(),
            env_uuid: d.env?.uuid ?? '',
            environment_id: d.env?.id ?? 0,
            line: d.line,
            log_type: LogTypes.visit,
            severity: Severities.warning,
            service: 'api',
            source_ip: d.ip,
            username: d.username ?? '',
            count: 1,
          })
          .returning('id')
          .executeTakeFirstOrThrow();
        const r = await trx
          .insertInto('denial_windows')
          .values({ ...where, audit_id: row.id })
          .onConflict((oc) => oc.columns(['source_ip', 'username', 'window_start']).doNothing())
          .executeTakeFirst();
        if (Number(r.numInsertedOrUpdatedRows ?? 0) === 0) throw new Claimed();
        return { id: row.id, own: true };
      });
    } catch (e) {
      if (!(e instanceof Claimed)) throw e;
    }
    const won = await this.deps.db
      .selectFrom('denial_windows')
      .select('audit_id')
      .where('source_ip', '=', where.source_ip)
      .where('username', '=', where.username)
      .where('window_start', '=', start)
      .executeTakeFirstOrThrow();
    return { id: won.audit_id, own: false };
  }

  private async flushOne(key: string, w: Window): Promise<void> {
    if (w.pending > 0 && w.row) {
      const n = w.pending;
      w.pending = 0;
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
    }
    const ended = Math.floor(this.deps.now().getTime() / DENIAL_WINDOW_MS) * DENIAL_WINDOW_MS !== w.start;
    if (ended && w.pending === 0 && this.windows.get(key) === w) this.windows.delete(key);
  }
  /** Brings every row up to date and forgets ended windows. */
  async flush(): Promise<void> {
    for (const [key, w] of [...this.windows]) await this.flushOne(key, w);
  }

  start(): void {
    this.timer = setInterval(() => void this.flush().catch(() => undefined), FLUSH_MS);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
