// How list and stats verbs meet a terminal: `--watch [interval]` redraws the output in place
// (like watch(1)), and long tables go through a pager (as gh does). Both only when stdout is a
// terminal; piped, `--watch` prints each refresh one after another and there is no pager.
import type { spawn as Spawn } from 'node:child_process';
import { Writable } from 'node:stream';
import { processIO, type IO } from '../io.js';
import type { GlobalOptions } from '../context.js';
import { parseDuration } from '../lib/duration.js';
import { ExitCode, InterruptedError, mapError } from '../errors.js';
import { runEarlyExitHooks } from '../lib/exit-hooks.js';
import { localClock } from '../output/time.js';

export interface TerminalModeOptions {
  watch?: string | boolean;
  pager?: boolean;
  /** `audit list --follow`: a stream that never ends never goes through a pager (issue 20). */
  follow?: boolean;
}

const DEFAULT_WATCH = '2s';
const CLEAR = '\x1b[H\x1b[2J';

/** Text written to stdout is kept instead of shown: one frame of a --watch redraw. */
function bufferedIO(base: IO): IO & { take(): string } {
  let buf = '';
  const stdout = Object.assign(
    new Writable({
      write(chunk, _enc, cb) {
        buf += String(chunk);
        cb();
      },
    }),
    { isTTY: base.stdout.isTTY, columns: base.columns },
  );
  return {
    ...base,
    stdout,
    out: (t) => void (buf += t),
    take() {
      const t = buf;
      buf = '';
      return t;
    },
  };
}

/**
 * The pager command: FLEETCTL_PAGER, then PAGER, then `less -FRXK` (quit if one screen, keep
 * colors, leave the text on screen, quit on Ctrl-C). Empty or `cat` means none.
 */
export function pagerCommand(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const p = (env.FLEETCTL_PAGER ?? env.PAGER ?? 'less -FRXK').trim();
  return p === '' || p === 'cat' ? undefined : p;
}

/**
 * stdout through the pager, started at the first write (so a prompt before any output, such as
 * a re-login, still has the terminal). Resolves `done` when the pager has exited.
 *
 * fleetctl never exits while its pager runs (issue 20: after Ctrl-C, `less` was left running and
 * ate the next keystroke): Ctrl-C stops the output and waits for the pager to exit (the default
 * `less -K` quits on the same Ctrl-C; another pager quits when the user leaves it), then exits 130.
 * When the user quits the pager before the output is complete, the command stops too (exit 0),
 * as `git log | less` does.
 */
function pagerIO(base: IO, command: string, spawn: typeof Spawn): IO & { done(): Promise<void> } {
  let child: ReturnType<typeof Spawn> | undefined;
  let failed = false;
  let finished = false;
  let interrupted = false;
  const onSigint = () => {
    interrupted = true;
    child?.stdin?.end();
  };
  // stderr lines (a "Showing 1-50 of 1200" footer, warnings) wait until the pager has exited:
  // written while it holds the terminal, they would land in the middle of its screen.
  const held: string[] = [];
  const start = () => {
    if (child || failed) return child;
    child = spawn(command, { shell: true, stdio: ['pipe', 'inherit', 'inherit'], env: { LESS: 'FRXK', ...process.env } });
    child.on('error', () => {
      failed = true; // no such pager: what was not written yet goes to the terminal directly
      process.off('SIGINT', onSigint);
    });
    child.stdin?.on('error', () => undefined); // the user quit the pager early: not an error
    // This listener also makes main.ts's Ctrl-C handler step aside (it exits only when alone).
    process.on('SIGINT', onSigint);
    child.on('exit', () => {
      process.off('SIGINT', onSigint);
      if (interrupted) void runEarlyExitHooks().finally(() => process.exit(ExitCode.interrupted));
      else if (!finished) void runEarlyExitHooks().finally(() => process.exit(ExitCode.ok)); // quit before the end: stop
    });
    return child;
  };
  const write = (t: string) => {
    if (interrupted) return; // Ctrl-C: nothing more for the pager
    const c = start();
    if (c?.stdin && !failed) c.stdin.write(t);
    else base.out(t);
  };
  return {
    ...base,
    out: write,
    err: (t) => void (child && !failed ? held.push(t) : base.err(t)),
    async done() {
      finished = true;
      const c = child;
      if (c) {
        await new Promise<void>((resolve) => {
          c.on('close', () => resolve());
          c.on('error', () => resolve());
          c.stdin?.end();
        });
      }
      for (const t of held.splice(0)) base.err(t);
      if (interrupted) throw new InterruptedError();
    },
  };
}

/** Runs `once` in the mode the options and the terminal ask for. */
export async function runInTerminalMode(
  globals: GlobalOptions,
  o: TerminalModeOptions,
  once: (io: IO) => Promise<void>,
  commandLine: string,
): Promise<void> {
  const base = processIO({ noColor: globals.color === false });
  if (o.watch !== undefined && o.watch !== false) {
    const intervalMs = parseDuration(o.watch === true ? DEFAULT_WATCH : o.watch);
    const io = bufferedIO(base);
    for (;;) {
      let frame: string;
      try {
        await once(io);
        frame = io.take();
      } catch (e) {
        // A failed refresh is shown and the watch goes on (the server may be restarting).
        const m = mapError(e);
        frame = `${io.take()}error: ${m.message}\n`;
      }
      if (base.stdoutIsTTY) {
        const head = `Every ${o.watch === true ? DEFAULT_WATCH : o.watch}: ${commandLine}`;
        base.out(`${CLEAR}${head}${' '.repeat(Math.max(2, base.columns - head.length - 19))}${localClock(new Date())}\n\n${frame}`);
      } else base.out(frame);
      await new Promise((r) => setTimeout(r, intervalMs));
    }
  }
  // A stream (--follow) never ends, so it never goes through a pager, as `less` would hold it.
  const pager = base.stdoutIsTTY && o.pager !== false && !o.follow ? pagerCommand() : undefined;
  if (!pager) return once(base);
  // node:child_process only when there is a pager to start (a command's start-up pays for every module).
  const io = pagerIO(base, pager, (await import('node:child_process')).spawn);
  try {
    await once(io);
  } finally {
    await io.done();
  }
}
