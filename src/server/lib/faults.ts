// The server's own trouble, seen in one place: every fault of a request or a background task is
// reported here. It is logged (the first of a kind at once, then one summary line per kind every
// LOG_EVERY_MS, so a database outage under a thousand agents is a few lines, not a flood),
// counted for /metrics, and the database's state is derived from it for /healthz.
import { dbFault, type DbFault } from './db-errors.js';

const LOG_EVERY_MS = 10_000;
/** PostgreSQL gives no way to ask "is there space"; a write refused for space counts this long. */
export const NO_SPACE_HOLD_MS = 10_000;

/** What a fault line says besides its text (the JSON of --log, lib/server-log.ts): a stack only for a bug. */
export interface FaultFields {
  event: 'fault' | 'fault_summary';
  level: 'warn' | 'error';
  where: string;
  kind: string;
  count?: number;
  stack?: string;
}

export interface FaultCounts {
  /** Per (where, kind): kind is a DbFault or 'error' (anything else). */
  byKind: Map<string, number>;
}

interface Quiet {
  first: number;
  suppressed: number;
  lastMessage: string;
}

export class Faults {
  /** (where \0 kind) -> count since start, for metrics. */
  readonly counts = new Map<string, number>();
  private lastNoSpace?: number;
  private lastUnavailable?: number;
  private readonly quiet = new Map<string, Quiet>();
  private timer?: NodeJS.Timeout;
  /** Listeners (metrics) told of every fault. */
  private readonly listeners: ((where: string, kind: DbFault | 'error') => void)[] = [];

  constructor(
    private readonly log: (line: string, fields?: FaultFields) => void = (line, f) =>
      console.error(f?.stack ? `${line}\n${f.stack}` : line),
    private readonly clock: () => number = Date.now,
  ) {}

  onFault(fn: (where: string, kind: DbFault | 'error') => void): void {
    this.listeners.push(fn);
  }

  /** Reports a fault at `where` (e.g. "agent log", "check-in flush"); returns its database kind. */
  report(where: string, e: unknown): DbFault | undefined {
    const kind = dbFault(e);
    const t = this.clock();
    if (kind === 'no_space') this.lastNoSpace = t;
    if (kind === 'unavailable') this.lastUnavailable = t;
    const label = kind ?? 'error';
    const key = `${where}\u0000${label}`;
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
    for (const l of this.listeners) l(where, label);
    const message = e instanceof Error ? e.message : String(e);
    const q = this.quiet.get(key);
    if (!q) {
      this.quiet.set(key, { first: t, suppressed: 0, lastMessage: message });
      // Unknown errors are bugs: their stack helps (a field of the line, or the lines after it in
      // text); database trouble is one line.
      const stack = !kind && e instanceof Error && e.stack ? e.stack : undefined;
      this.log(`${where} failed (${kind ? `database ${kind.replace('_', ' ')}` : 'error'}): ${message}`, {
        event: 'fault',
        level: kind ? 'warn' : 'error',
        where,
        kind: label,
        stack,
      });
      this.schedule();
    } else {
      q.suppressed++;
      q.lastMessage = message;
    }
    return kind;
  }

  private schedule(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.summarise(), LOG_EVERY_MS);
    this.timer.unref();
  }

  /** One line per kind that repeated since its last line; kinds quiet for a period are forgotten. */
  summarise(): void {
    const t = this.clock();
    for (const [key, q] of this.quiet) {
      const [where, kind] = key.split('\u0000');
      if (q.suppressed > 0) {
        this.log(
          `${where} failed ${q.suppressed} more time${q.suppressed === 1 ? '' : 's'} (${kind === 'error' ? 'error' : `database ${kind.replace('_', ' ')}`}) in the last ${Math.round((t - q.first) / 1000)} s; last: ${q.lastMessage}`,
          {
            event: 'fault_summary',
            level: kind === 'error' ? 'error' : 'warn',
            where: where,
            kind: kind,
            count: q.suppressed,
          },
        );
        q.suppressed = 0;
        q.first = t;
      } else if (t - q.first >= LOG_EVERY_MS) {
        this.quiet.delete(key);
      }
    }
    if (this.quiet.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  /** A write was refused for lack of space within NO_SPACE_HOLD_MS. */
  recentlyOutOfSpace(): boolean {
    return this.lastNoSpace !== undefined && this.clock() - this.lastNoSpace < NO_SPACE_HOLD_MS;
  }

  recentlyUnavailable(withinMs: number): boolean {
    return this.lastUnavailable !== undefined && this.clock() - this.lastUnavailable < withinMs;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.summarise();
  }
}
