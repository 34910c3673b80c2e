// Interactive prompts (on stderr), only where stdin and stdout are terminals. Loaded lazily:
// @inquirer/prompts is needed by few commands. Ctrl-C becomes InterruptedError (exit 130).
import type { IO } from './io.js';
import { InterruptedError, UsageError } from './errors.js';

export interface Prompter {
  input(message: string, opts?: { default?: string; validate?: (v: string) => true | string }): Promise<string>;
  password(message: string, opts?: { validate?: (v: string) => true | string }): Promise<string>;
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
    password: (message, o) => guard(inq.password({ message, mask: '*', validate: o?.validate }, context)),
    confirm: (message, def = false) => guard(inq.confirm({ message, default: def }, context)),
    select: (message, choices) => guard(inq.select({ message, choices }, context)),
  };
}

export function requirePrompt(io: IO, what: string, flag: string): void {
  if (!io.canPrompt()) throw new UsageError(`${what} is required: pass ${flag} (prompts need a terminal)`);
}

async function readAllStdin(io: IO): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of io.stdin) chunks.push(Buffer.from(c as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

/** Reads a secret from stdin (for --password-stdin and friends), without the trailing newline. */
export async function readStdinSecret(io: IO, what: string): Promise<string> {
  if (io.stdin.isTTY) throw new UsageError(`${what} is read from stdin: pipe it in (e.g. printf %s "$PASS" | fleetctl ...)`);
  const text = (await readAllStdin(io)).replace(/\r?\n$/, '');
  if (!text) throw new UsageError(`${what} on stdin is empty`);
  return text;
}

/**
 * Reads one secret a line from stdin, e.g. the password then a second-factor code for
 * `login --password-stdin --mfa-code-stdin`. Missing or empty lines are usage errors that name
 * the line, never its content.
 */
export async function readStdinSecretLines(io: IO, names: readonly string[]): Promise<string[]> {
  if (io.stdin.isTTY) throw new UsageError(`${names.join(' and ')} are read from stdin, one a line: pipe them in`);
  const lines = (await readAllStdin(io)).replace(/\r?\n$/, '').split(/\r?\n/);
  for (const [i, name] of names.entries()) {
    if (!lines[i]) throw new UsageError(`${name} is missing on stdin (expected ${names.length} lines: ${names.join(', then ')})`);
  }
  if (lines.length > names.length)
    throw new UsageError(`expected ${names.length} lines on stdin (${names.join(', then ')}), got ${lines.length}`);
  return lines.slice(0, names.length);
}
