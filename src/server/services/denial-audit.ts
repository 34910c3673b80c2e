// Denied requests (401, 403 and 429 answers of the auth hook) audited in aggregate: one row per
// client address (and username, when the token named one) and minute, with a count, so a flood of refused requests cannot fill the disk
// or bury real events. The first denial of a window is written at once (as an ordinary row);
// later ones only count in memory, and the row's count and line are brought up to date every
// few seconds, when the window ends, and at shutdown. Started and stopped by start.ts.
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
  /** The row, once inserted. */
  id?: Promise<number>;
  line: string;
  count: number;
  written: number;
}

export class DenialAudit {
  private readonly windows = new Map<string, Window>();
  private timer?: NodeJS.Timeout;

  constructor(private readonly deps: Deps) {}

  /** Counts a denial; writes a row when it is the address's first in this window. */
  async record(d: Denial): Promise<void> {
    const t = this.deps.now().getTime();
    const key = `${d.ip}\u0000${d.username ?? ''}`;
    let w = this.windows.get(key);
    if (w && t - w.start >= DENIAL_WINDOW_MS) {
      await this.flushOne(key, w);
      w = undefined;
    }
    if (!w) {
      w = { start: t, ip: d.ip, line: d.line, count: 0, written: 1 };
      this.windows.set(key, w);
      w.id = this.insert(d);
    }
    w.count++;
    await w.id;
  }

  private async insert(d: Denial): Promise<number> {
    const row = await this.deps.db
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
    return row.id;
  }

  private async flushOne(key: string, w: Window): Promise<void> {
    if (w.count !== w.written && w.id) {
      const n = w.count;
      w.written = n;
      const line = `${w.line} [${n} denied requests from ${w.ip} in the minute from ${new Date(w.start).toISOString()}]`;
      await this.deps.db.updateTable('audit_logs').set({ count: n, line }).where('id', '=', await w.id).execute();
    }
    if (this.deps.now().getTime() - w.start >= DENIAL_WINDOW_MS && this.windows.get(key) === w) this.windows.delete(key);
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
