// A progress line on stderr for long list exports: "Fetched 12,000 of 54,545 nodes (2,400/s)",
// redrawn in place. Shown only when stderr is a terminal and stdout is not (an export to a file
// or a pipe watched from a terminal: a table on the terminal shows its own rows), never under
// CI, and only once the work has taken a second (FLEETCTL_PROGRESS_DELAY_MS changes that), so
// quick commands print nothing extra.
import type { IO } from '../io.js';

const DEFAULT_DELAY_MS = 1000;
const REDRAW_MS = 200;

export class Progress {
  private shown = false;
  private last = 0;

  private constructor(
    private readonly io: IO | undefined,
    private readonly noun: string,
    private readonly delayMs: number,
    private readonly started = Date.now(),
  ) {}

  static enabled(io: IO, env: NodeJS.ProcessEnv = process.env): boolean {
    return Boolean(io.stderr.isTTY) && !io.stdoutIsTTY && !env.CI && env.FLEETCTL_NO_PROGRESS === undefined;
  }

  /** A progress line for `noun` (a no-op where progress is not shown). */
  static start(io: IO, noun: string): Progress {
    const delay = Number(process.env.FLEETCTL_PROGRESS_DELAY_MS);
    return new Progress(Progress.enabled(io) ? io : undefined, noun, Number.isFinite(delay) && delay >= 0 ? delay : DEFAULT_DELAY_MS);
  }

  update(done: number, total?: number): void {
    if (!this.io) return;
    const now = Date.now();
    if (now - this.started < this.delayMs || now - this.last < REDRAW_MS) return;
    this.last = now;
    const rate = Math.round(done / ((now - this.started) / 1000));
    const of = total !== undefined && total >= done ? ` of ${fmt(total)}` : '';
    this.io.err(`\r\x1b[KFetched ${fmt(done)}${of} ${this.noun} (${fmt(rate)}/s)`);
    this.shown = true;
  }

  /** Clears the line (the summary, if any, is the command's to print). */
  stop(): void {
    if (this.io && this.shown) this.io.err('\r\x1b[K');
    this.shown = false;
  }
}

const fmt = (n: number) => n.toLocaleString('en-US');
