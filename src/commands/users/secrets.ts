// Passwords for the users and mfa commands: from a prompt at a terminal, or from stdin with
// --password-stdin. Never from argv (architecture.md: secrets never in argv).
import type { Context } from '../../context.js';
import { CliError, ExitCode, UsageError } from '../../errors.js';
import { readStdinSecret } from '../../prompt.js';
import { PASSWORD_MIN_LENGTH } from '../../api/constants.js';

const MAX_ATTEMPTS = 3;

/** The caller's current password (mfa disable, webauthn remove): one prompt, or stdin. */
export async function readPassword(ctx: Context, fromStdin: boolean | undefined, message = 'Password:'): Promise<string> {
  if (fromStdin) return readStdinSecret(ctx.io, 'the password');
  if (!ctx.io.canPrompt()) throw new UsageError('a password is required: pass --password-stdin and pipe it in (prompts need a terminal)');
  const p = await ctx.prompter();
  const pw = await p.password(message);
  if (!pw) throw new UsageError('the password is empty');
  return pw;
}

/** Why a new password is refused, or undefined: the policy both servers apply (osctrl's is 8 characters too). */
export function passwordProblem(pw: string): string | undefined {
  return [...pw].length < PASSWORD_MIN_LENGTH ? `the new password must be at least ${PASSWORD_MIN_LENGTH} characters` : undefined;
}

/**
 * The password policy, checked before any request: osctrl's user add stores any password (its
 * own password change then refuses one under 8 characters), so the server cannot be relied on.
 */
export function checkNewPassword(pw: string): string {
  const problem = passwordProblem(pw);
  if (problem) throw new UsageError(`${problem}; nothing was changed`);
  return pw;
}

/**
 * A new password typed twice at a terminal (asked again when the two differ), or read from stdin.
 * `flag` names the option that supplies it when there is no terminal.
 */
export async function readNewPassword(
  ctx: Context,
  fromStdin: boolean | undefined,
  who: string,
  flag = '--password-stdin',
): Promise<string> {
  if (fromStdin) return checkNewPassword(await readStdinSecret(ctx.io, 'the password'));
  if (!ctx.io.canPrompt()) throw new UsageError(`a password is required: pass ${flag} and pipe it in (prompts need a terminal)`);
  return promptNewPassword(ctx, who);
}

export async function promptNewPassword(ctx: Context, who?: string): Promise<string> {
  const p = await ctx.prompter();
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const first = await p.password(who ? `New password for ${who}:` : 'New password:');
    if (!first) {
      ctx.io.err('The password is empty; try again.\n');
      continue;
    }
    const problem = passwordProblem(first);
    if (problem) {
      ctx.io.err(`${problem.charAt(0).toUpperCase()}${problem.slice(1)}; try again.\n`);
      continue;
    }
    const second = await p.password('Repeat the new password:');
    if (first === second) return first;
    ctx.io.err('The passwords do not match; try again.\n');
  }
  throw new CliError(`no matching password after ${MAX_ATTEMPTS} attempts; nothing was changed`, ExitCode.usage);
}
