// After a change: a human line on stderr, or the resulting object on stdout when the user asked
// for data (-o, --json, --jq). One rule for every command that changes something.
import type { Context } from '../context.js';
import { printObject, safeText, type Column } from '../output/index.js';

export async function reportChange<T>(ctx: Context, human: string, data: () => T | Promise<T>, columns?: Column<T>[]): Promise<void> {
  if (ctx.wantsData()) await printObject(ctx.io, ctx.output(), await data(), columns);
  else ctx.io.err(`${safeText(human)}\n`);
}
