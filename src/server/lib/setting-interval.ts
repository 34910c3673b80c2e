// A background task whose period is a setting (seconds), read again before each run so a change
// through the settings API applies from the next run (within `tickMs`). A run that fails is
// reported and retried at the next period; nothing it does can end the process.
import type { Faults } from './faults.js';

export class SettingInterval {
  private loop?: Promise<void>;
  private stopped = true;
  private wake?: () => void;

  constructor(
    private readonly name: string,
    /** The period in milliseconds; undefined: the task is off for now (asked again each tick). */
    private readonly periodMs: () => Promise<number | undefined>,
    private readonly run: () => Promise<unknown>,
    private readonly faults: Faults,
    private readonly tickMs = 5_000,
  ) {}

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

  private async loopRuns(): Promise<void> {
    let last = Date.now();
    while (!this.stopped) {
      const ms = await this.periodMs().catch(() => undefined);
      const due = ms === undefined ? this.tickMs : Math.max(0, last + ms - Date.now());
      await this.sleep(Math.min(due, this.tickMs));
      if (this.stopped || ms === undefined || Date.now() - last < ms) continue;
      last = Date.now();
      // A failed run (database busy, down or full) is reported and retried at the next period.
      await this.run().catch((e: unknown) => void this.faults.report(this.name, e));
    }
  }

  start(): void {
    this.stopped = false;
    this.loop = this.loopRuns();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await this.loop;
  }
}
