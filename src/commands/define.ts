// How every verb is declared: commander for parsing, examples in --help, and run(ctx, args, opts).
import { Command, InvalidArgumentError, Option } from 'commander';
import type { Context, GlobalOptions } from '../context.js';
import type { ApiError } from '../errors.js';
import { flow } from '../help.js';
import { parseSpan } from '../lib/duration.js';

export interface VerbSpec {
  name: string;
  summary: string;
  description?: string;
  aliases?: string[];
  examples?: string[];
  /** A list or dashboard: `--watch [interval]` redraws it, and at a terminal it goes through a pager. */
  watch?: boolean;
  /** Long output at a terminal goes through $PAGER (`--no-pager` to skip). */
  pager?: boolean;
}

// Kept beside the help text so the man page generator (src/gen) can list them too.
const EXAMPLES = new WeakMap<Command, readonly string[]>();

/** The examples given to group() or verb() for `cmd` (none for other commands). */
export function examplesOf(cmd: Command): readonly string[] {
  return EXAMPLES.get(cmd) ?? [];
}

function addExamples(cmd: Command, examples: string[] | undefined): void {
  if (!examples?.length) return;
  cmd.addHelpText('after', examplesText(examples));
  EXAMPLES.set(cmd, examples);
}

export function examplesText(examples: string[]): string {
  return `\nExamples:\n${examples.map((e) => `  $ ${e}`).join('\n')}\n`;
}

/** A command group (e.g. `nodes`), with its examples shown in --help. */
export function group(program: Command, spec: VerbSpec): Command {
  const cmd = program
    .command(spec.name)
    .summary(spec.summary)
    .description(flow(spec.description ?? spec.summary));
  if (spec.aliases) cmd.aliases(spec.aliases);
  addExamples(cmd, spec.examples);
  return cmd;
}

export type RunFn<O> = (ctx: Context, args: string[], opts: O) => Promise<void>;

/**
 * A verb under `parent`. `configure` adds its arguments and options; `run` gets a Context
 * built from the global options, the positional arguments, and the verb's own options.
 */
export function verb<O = Record<string, unknown>>(
  parent: Command,
  spec: VerbSpec,
  configure: (cmd: Command) => void,
  run: RunFn<O>,
): Command {
  const cmd = parent
    .command(spec.name)
    .summary(spec.summary)
    .description(flow(spec.description ?? spec.summary));
  if (spec.aliases) cmd.aliases(spec.aliases);
  configure(cmd);
  if (spec.watch) cmd.option('-w, --watch [interval]', 'redraw every interval (default 2s) until Ctrl-C');
  if (spec.pager || spec.watch) cmd.option('--no-pager', 'do not page long output at a terminal');
  addExamples(cmd, spec.examples);
  cmd.action(async (...all: unknown[]) => {
    const command = all[all.length - 1] as Command;
    const positional = all.slice(0, -2).flatMap((a) => (Array.isArray(a) ? a.map(String) : a === undefined ? [] : [String(a as string)]));
    // The Context (config, credentials, client) is loaded when a verb runs, not when the tree is built.
    const { Context } = await import('../context.js');
    const globals = command.optsWithGlobals<GlobalOptions>();
    const opts = command.opts<O & { watch?: string | boolean; pager?: boolean }>();
    // At a terminal, a session that ends mid-command is renewed by logging in again (loaded then).
    const renew = async (ctx: Context, e: ApiError) => (await import('../auth/login-flow.js')).renewSession(ctx, e);
    if (!spec.watch && !spec.pager) return run(new Context(globals, process.env, undefined, renew), positional, opts);
    const { runInTerminalMode } = await import('./terminal-modes.js');
    const line = ['fleetctl', ...process.argv.slice(2)].join(' ');
    await runInTerminalMode(globals, opts, (io) => run(new Context(globals, process.env, io, renew), positional, opts), line);
  });
  return cmd;
}

/** An option whose value must be one of `choices` (shown in help, used by completions). */
export function choiceOption(flags: string, description: string, choices: readonly string[], def?: string): Option {
  const o = new Option(flags, description).choices(choices);
  return def === undefined ? o : o.default(def);
}

export function intArg(min = 1): (v: string) => number {
  return (v: string) => {
    if (!/^\d+$/.test(v) || Number(v) < min) throw new InvalidArgumentError(`expected an integer >= ${min}`);
    return Number(v);
  };
}

/** A span option ("1h", "7d", seconds; `never` where allowed) parsed to whole seconds (0 = never). */
export function spanArg(o: { allowNever?: boolean; min?: number } = {}): (v: string) => number {
  return (v: string) => {
    let n: number;
    try {
      n = parseSpan(v, { allowNever: o.allowNever });
    } catch (e) {
      throw new InvalidArgumentError((e as Error).message.replace(/^invalid duration "[^"]*": /, ''));
    }
    if (n !== 0 && o.min !== undefined && n < o.min) throw new InvalidArgumentError(`at least ${o.min} seconds`);
    return n;
  };
}
