// A progress line on stderr for long work: "Fetched 12,000 of 54,545 nodes (2,400/s)" for list
// exports, "Tagged 400 of 1,200 nodes" for bulk changes, redrawn in place. Exports show it only
// when stderr is a terminal and stdout is not (a table on the terminal shows its own rows); bulk
// changes whenever stderr is a terminal (their result is a summary line). Never under CI, and
// only once the work has taken a second (FLEETCTL_PROGRESS_DELAY_MS changes that), so quick
// commands print nothing extra.
import type { IO } from '../io.js';

const DEFAULT_DELAY_MS = 1000;
const REDRAW_MS = 200;

export class Progress {
  private shown = false;
  private last = 0;

  private constructor(
    private readonly io: IO | undefined,
    private readonly noun: string,
    private readonly verb: string,
    private readonly delayMs: number,
    private readonly started = Date.now(),
  ) {}

  static enabled(io: IO, o: { bulk?: boolean } = {}, env: NodeJS.ProcessEnv = process.env): boolean {
    return Boolean(io.stderr.isTTY) && (o.bulk || !io.stdoutIsTTY) && !env.CI && env.FLEETCTL_NO_PROGRESS === undefined;
  }

  /**
   * A progress line for `noun` (a no-op where progress is not shown). `bulk`: a change whose
   * result is a summary on stderr, so the line shows at a terminal whatever stdout is.
   */
  static start(io: IO, noun: string, o: { verb?: string; bulk?: boolean } = {}): Progress {
    const delay = Number(process.env.FLEETCTL_PROGRESS_DELAY_MS);
    return new Progress(
      Progress.enabled(io, o) ? io : undefined,
      noun,
      o.verb ?? 'Fetched',
      Number.isFinite(delay) && delay >= 0 ? delay : DEFAULT_DELAY_MS,
    );
  }

  update(done: number, total?: number): void {
    if (!this.io) return;
    const now = Date.now();
    if (now - this.started < this.delayMs || now - this.last < REDRAW_MS) return;
    this.last = now;
    const rate = Math.round(done / ((now - this.started) / 1000));
    const of = total !== undefined && total >= done ? ` of ${fmt(total)}` : '';
    this.io.err(`\r\x1b[K${this.verb} ${fmt(done)}${of} ${this.noun} (${fmt(rate)}/s)`);
    this.shown = true;
  }

  /** Clears the line (the summary, if any, is the command's to print). */
  stop(): void {
    if (this.io && this.shown) this.io.err('\r\x1b[K');
    this.shown = false;
  }
}

const fmt = (n: number) => n.toLocaleString('en-US');
