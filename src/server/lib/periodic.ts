// A background task that owns its errors: it runs every `everyMs` (never two runs at once), and
// a run that throws is reported to Faults, then retried after a backoff that doubles up to
// `maxBackoffMs`; the first run that succeeds restores the normal period. Nothing it does can
// end the process. Used by every batcher, flush and purge of the server.
import type { Faults } from './faults.js';

export class Periodic {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private stopped = true;
  private failures = 0;
  private soon = false;

  constructor(
    private readonly name: string,
    private readonly everyMs: number,
    private readonly run: () => Promise<void>,
    private readonly faults: Faults,
    private readonly maxBackoffMs = 30_000,
  ) {}

  /** Milliseconds until the next run: the period, or the backoff after failures. */
  get delayMs(): number {
    return this.failures === 0 ? this.everyMs : Math.min(this.maxBackoffMs, this.everyMs * 2 ** this.failures);
  }

  get failing(): boolean {
    return this.failures > 0;
  }

  /** The first run after `firstMs` (default: one period); stop() waits for it like any other. */
  start(firstMs = this.everyMs): void {
    this.stopped = false;
    this.arm(firstMs);
  }

  private arm(ms: number): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.tick(), ms);
    this.timer.unref();
  }

  /** Runs once now (or right after the run in progress); errors are handled like a timer's. */
  private tick(): Promise<void> {
    if (this.running) {
      this.soon = true;
      return this.running;
    }
    this.running = (async () => {
      try {
        await this.run();
        this.failures = 0;
      } catch (e) {
        this.failures++;
        this.faults.report(this.name, e);
      } finally {
        this.running = undefined;
      }
      if (this.soon && this.failures === 0) {
        this.soon = false;
        this.arm(0);
      } else {
        this.soon = false;
        this.arm(this.delayMs);
      }
    })();
    return this.running;
  }

  /**
   * Runs once after the run in progress (if any) has ended, and resolves when it has: what was
   * recorded before the call is written by then (a flush). A run in progress may already have
   * taken what it writes, so returning without waiting for it would say "written" too early. Its
   * error is thrown to the caller; the timer's period and backoff are not changed.
   */
  async runNow(): Promise<void> {
    while (this.running) await this.running;
    let failed: { e: unknown } | undefined;
    const mine = this.run().catch((e: unknown) => void (failed = { e }));
    this.running = mine;
    await mine;
    this.running = undefined;
    // The timer fired (or a trigger came) during this run: its run is due now.
    if (this.soon) {
      this.soon = false;
      this.arm(0);
    }
    if (failed) throw failed.e;
  }

  /** Asks for a run soon (e.g. a batch is full), unless the task is backing off. */
  trigger(): void {
    if (this.stopped || this.failures > 0) return;
    if (this.running) this.soon = true;
    else this.arm(0);
  }

  /** Stops the timer, waits for a run in progress, then runs once more (a final flush); never throws. */
  async stop(final = true): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    if (!final) {
      while (this.running) await this.running;
      return;
    }
    try {
      await this.runNow();
    } catch (e) {
      this.faults.report(this.name, e);
    }
  }
}
