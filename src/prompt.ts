// Interactive prompts (on stderr), only where stdin and stdout are terminals. Loaded lazily:
// @inquirer/prompts is needed by few commands. Ctrl-C becomes InterruptedError (exit 130).
import type { IO } from './io.js';
import { InterruptedError, UsageError } from './errors.js';

export interface Prompter {
  input(message: string, opts?: { default?: string; validate?: (v: string) => true | string }): Promise<string>;
  password(message: string): Promise<string>;
  confirm(message: string, def?: boolean): Promise<boolean>;
  select<T extends string>(message: string, choices: { value: T; name: string }[]): Promise<T>;
}

async function guard<T>(p: Promise<T>): Promise<T> {
  try {
    return await p;
  } catch (e) {
    if ((e as Error)?.name === 'ExitPromptError' || (e as Error)?.name === 'AbortPromptError') throw new InterruptedError();
    throw e;
  }
}

/**
 * A prompter, or a UsageError naming the flag that would have supplied the value when prompts
 * are not possible.
 */
export async function prompter(io: IO): Promise<Prompter> {
  const inq = await import('@inquirer/prompts');
  const context = { input: io.stdin, output: io.stderr, clearPromptOnDone: false } as const;
  return {
    input: (message, o) => guard(inq.input({ message, default: o?.default, validate: o?.validate }, context)),
    password: (message) => guard(inq.password({ message, mask: '*' }, context)),
    confirm: (message, def = false) => guard(inq.confirm({ message, default: def }, context)),
    select: (message, choices) => guard(inq.select({ message, choices }, context)),
  };
}

export function requirePrompt(io: IO, what: string, flag: string): void {
  if (!io.canPrompt()) throw new UsageError(`${what} is required: pass ${flag} (prompts need a terminal)`);
}

/** Reads a secret from stdin (for --password-stdin and friends), without the trailing newline. */
export async function readStdinSecret(io: IO, what: string): Promise<string> {
  if (io.stdin.isTTY) throw new UsageError(`${what} is read from stdin: pipe it in (e.g. printf %s "$PASS" | fleetctl ...)`);
  const chunks: Buffer[] = [];
  for await (const c of io.stdin) chunks.push(Buffer.from(c as Buffer));
  const text = Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
  if (!text) throw new UsageError(`${what} on stdin is empty`);
  return text;
}
