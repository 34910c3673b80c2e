// A live query or carve started by this command is bounded (issue 20): it is stopped when the
// command ends, fails or is interrupted (Ctrl-C, SIGTERM, a closed terminal or pipe), unless
// --detach; and it always carries an expiry on the server, so even a `kill -9` of the command
// leaves nothing running for long. Detached ones expire after --expire (default 24h).
import type { Context } from '../../context.js';
import type { FleetApi } from '../../client/index.js';
import { UsageError } from '../../errors.js';
import { parseDuration } from '../../lib/duration.js';
import { onEarlyExit } from '../../lib/exit-hooks.js';
import type { RunFlags } from './targets.js';

export const DETACHED_EXPIRY_MS = 24 * 3600_000;
/** An attached run's expiry is its wait plus this: a safety net for a command killed outright. */
const ATTACHED_MARGIN_MS = 60_000;

/** --wait: a duration, or 0 for "start it and return". */
export function parseWait(v: string): number {
  return v.trim() === '0' ? 0 : parseDuration(v);
}

export class LiveRun {
  readonly waitMs: number;
  /** Left running on the server when the command ends (--detach, or --wait 0). */
  readonly detached: boolean;
  readonly expireMs: number;
  interrupted = false;
  private wake?: () => void;
  private release: (() => void)[] = [];
  private ended = false;

  constructor(
    private readonly ctx: Context,
    private readonly api: FleetApi,
    readonly env: string,
    readonly kind: 'query' | 'carve',
    flags: RunFlags,
  ) {
    this.waitMs = parseWait(flags.wait);
    this.detached = Boolean(flags.detach) || this.waitMs === 0;
    if (flags.expire !== undefined && flags.expireHours !== undefined)
      throw new UsageError('--expire and --expire-hours say the same thing: give one');
    const explicit =
      flags.expire !== undefined ? parseDuration(flags.expire) : flags.expireHours !== undefined ? flags.expireHours * 3600_000 : undefined;
    if (explicit !== undefined && explicit < 1000) throw new UsageError('--expire must be at least 1s');
    if (explicit !== undefined && explicit > 8760 * 3600_000) throw new UsageError('--expire is at most a year (8760h)');
    this.expireMs = explicit ?? (this.detached ? DETACHED_EXPIRY_MS : this.waitMs + ATTACHED_MARGIN_MS);
  }

  /** The expiry fields of the run request: seconds for fleetctl's server, whole hours for osctrl's exp_hours. */
  expiryBody(): { exp_hours: number; expire_seconds: number } {
    const seconds = Math.ceil(this.expireMs / 1000);
    return { exp_hours: Math.max(1, Math.ceil(seconds / 3600)), expire_seconds: seconds };
  }

  /**
   * From now until end(): Ctrl-C, SIGTERM and SIGHUP stop the wait (a second Ctrl-C exits at
   * once: the server-side expiry still bounds the query), and an early exit (a closed stdout)
   * stops the query first.
   */
  begin(name: string): void {
    let signals = 0;
    const onSignal = (sig: NodeJS.Signals) => {
      signals++;
      if (signals > 1 && sig === 'SIGINT') process.exit(130);
      this.interrupted = true;
      this.wake?.();
    };
    for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
      process.on(sig, onSignal);
      this.release.push(() => process.off(sig, onSignal));
    }
    if (!this.detached) this.release.push(onEarlyExit(() => this.stop(name, 'cancel')));
  }

  /** Sleeps up to `ms`, returning early when interrupted. */
  sleep(ms: number): Promise<void> {
    if (this.interrupted || ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const t = setTimeout(done, ms);
      function done() {
        clearTimeout(t);
        resolve();
      }
      this.wake = done;
    });
  }

  /**
   * Ends the run: unless detached, the query is stopped on the server: `cancel` when the command
   * was interrupted or failed, `complete` when it ended with targets missing (answers are kept
   * either way), nothing when every target answered (the query is complete already).
   * Returns what was done, for the summary line.
   */
  async end(name: string, how: 'cancel' | 'complete' | 'none'): Promise<'cancelled' | 'completed' | 'left running' | undefined> {
    for (const r of this.release.splice(0)) r();
    if (this.ended) return undefined;
    this.ended = true;
    if (this.detached) return 'left running';
    if (how === 'none') return undefined;
    return (await this.stop(name, how)) ? (how === 'cancel' ? 'cancelled' : 'completed') : undefined;
  }

  private async stop(name: string, how: 'cancel' | 'complete'): Promise<boolean> {
    try {
      if (this.kind === 'query') await this.api.queries.action(this.env, how, name);
      else await this.api.carves.action(this.env, how === 'cancel' ? 'expire' : 'complete', name);
      return true;
    } catch (e) {
      // Best effort: the server-side expiry still ends it. Say so, once, and go on.
      this.ctx.io.err(`warning: could not stop ${this.kind} ${name} (${(e as Error).message}); it expires on the server by itself\n`);
      return false;
    }
  }

  /** "the query was stopped" / "... stays active until T" for the end-of-run line. */
  fate(what: 'cancelled' | 'completed' | 'left running' | undefined, name: string): string {
    if (what === 'left running') {
      const until = new Date(Date.now() + this.expireMs).toISOString().replace(/\.\d{3}Z$/, 'Z');
      return `the ${this.kind} stays active until ${until}: fleetctl ${this.kind === 'query' ? 'query results' : 'carves show'} ${name}`;
    }
    if (what === 'cancelled') return `the ${this.kind} was cancelled`;
    if (what === 'completed') return `the ${this.kind} was stopped`;
    return '';
  }
}
