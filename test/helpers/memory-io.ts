// An in-memory IO for tests: what a command printed is in stdoutText()/stderrText().
// `memoryIO({ tty: true, columns: 60, color: true })` pretends stdout is a terminal.
import { Readable, Writable } from 'node:stream';
import type { IO } from '../../src/io.js';

export interface MemoryIOOptions {
  /** stdout (and by default stdin/stderr) is a terminal. Default false (piped). */
  tty?: boolean;
  /** Terminal width. Default 80. */
  columns?: number;
  /** Colors on stdout. Default false (set true with tty to test colored tables). */
  color?: boolean;
  /** Colors on stderr. Default: same as `color`. */
  colorStderr?: boolean;
  /** stdin is a terminal. Default: same as `tty`. */
  stdinTTY?: boolean;
  /** stderr is a terminal. Default: same as `tty`. */
  stderrTTY?: boolean;
  /** What stdin yields (e.g. for --password-stdin). Default: nothing. */
  stdin?: string;
}

export interface MemoryIO extends IO {
  stdoutText(): string;
  stderrText(): string;
  /** Forgets what was printed so far. */
  reset(): void;
}

class Collector extends Writable {
  chunks: string[] = [];
  isTTY?: boolean;
  columns?: number;
  constructor(tty: boolean, columns: number) {
    super({ decodeStrings: false });
    if (tty) {
      this.isTTY = true;
      this.columns = columns;
    }
  }
  override _write(chunk: unknown, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    this.chunks.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString('utf8'));
    cb();
  }
  text(): string {
    return this.chunks.join('');
  }
}

export function memoryIO(opts: MemoryIOOptions = {}): MemoryIO {
  const tty = opts.tty ?? false;
  const columns = opts.columns ?? 80;
  const color = opts.color ?? false;
  const stdout = new Collector(tty, columns);
  const stderr = new Collector(opts.stderrTTY ?? tty, columns);
  const stdin = Readable.from(opts.stdin !== undefined ? [opts.stdin] : []) as Readable & { isTTY?: boolean };
  const stdinTTY = opts.stdinTTY ?? tty;
  if (stdinTTY) stdin.isTTY = true;
  return {
    stdin,
    stdout,
    stderr,
    stdoutIsTTY: tty,
    color,
    colorStderr: opts.colorStderr ?? color,
    columns,
    canPrompt: () => stdinTTY && tty,
    // Collected synchronously (not via the stream), so a test can read output right after a call.
    out: (t) => void stdout.chunks.push(t),
    err: (t) => void stderr.chunks.push(t),
    stdoutText: () => stdout.text(),
    stderrText: () => stderr.text(),
    reset: () => {
      stdout.chunks = [];
      stderr.chunks = [];
    },
  };
}
