// The terminal/streams a command talks to. Commands never touch process.stdout directly, so
// tests can hand them in-memory streams and the TTY rules live in one place.
import type { Readable, Writable } from 'node:stream';

export interface IO {
  stdin: Readable & { isTTY?: boolean };
  stdout: Writable & { isTTY?: boolean; columns?: number };
  stderr: Writable & { isTTY?: boolean; columns?: number };
  /** stdout is a terminal: tables get headers, colors, fitted widths and relative times. */
  readonly stdoutIsTTY: boolean;
  /** Colors allowed on stdout (TTY, no NO_COLOR / --no-color; FORCE_COLOR forces). */
  readonly color: boolean;
  /** Colors allowed on stderr. */
  readonly colorStderr: boolean;
  /** Terminal width for stdout tables (80 when unknown). */
  readonly columns: number;
  /** Prompts are allowed only when stdin AND stdout are terminals (gh's CanPrompt). */
  canPrompt(): boolean;
  out(text: string): void;
  err(text: string): void;
}

export interface IOOptions {
  noColor?: boolean;
  env?: NodeJS.ProcessEnv;
}

function colorAllowed(isTTY: boolean, env: NodeJS.ProcessEnv, noColor: boolean | undefined): boolean {
  if (noColor) return false;
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '0' && env.FORCE_COLOR !== 'false') return true;
  if (env.TERM === 'dumb') return false;
  return isTTY;
}

export function processIO(opts: IOOptions = {}): IO {
  const env = opts.env ?? process.env;
  const stdoutIsTTY = Boolean(process.stdout.isTTY);
  const stderrIsTTY = Boolean(process.stderr.isTTY);
  return {
    // A getter: process.stdin builds its stream (a tty.ReadStream at a terminal) when first read,
    // 2-3 ms of every start that most commands, which never read stdin, need not pay.
    get stdin() {
      return process.stdin;
    },
    stdout: process.stdout,
    stderr: process.stderr,
    stdoutIsTTY,
    color: colorAllowed(stdoutIsTTY, env, opts.noColor),
    colorStderr: colorAllowed(stderrIsTTY, env, opts.noColor),
    columns: process.stdout.columns || Number(env.COLUMNS) || 80,
    canPrompt: () => Boolean(process.stdin.isTTY) && stdoutIsTTY,
    out: (t) => void process.stdout.write(t),
    err: (t) => void process.stderr.write(t),
  };
}
