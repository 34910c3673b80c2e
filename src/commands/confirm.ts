// Destructive commands: ask at a terminal, require --yes elsewhere (architecture.md).
import type { Context } from '../context.js';
import { CliError, ExitCode, UsageError } from '../errors.js';

export async function confirmDestructive(ctx: Context, yes: boolean | undefined, question: string): Promise<void> {
  if (yes) return;
  if (!ctx.io.canPrompt()) throw new UsageError(`refusing to proceed without confirmation: ${question.replace(/\?$/, '')}; pass --yes`);
  const ok = await (await ctx.prompter()).confirm(question, false);
  if (!ok) throw new CliError('cancelled', ExitCode.error);
}
