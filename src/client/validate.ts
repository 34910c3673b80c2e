// Every answer is checked against its src/api schema before a command touches it, so a server
// that sends another shape (osctrl, an old or broken server) gives one clear line, never a
// TypeError deep in a printer. Schemas are compiled once, on first use (a 500-node page is checked
// in well under a millisecond; see docs/osctrl.md for the measurement).
import type { TSchema } from '@sinclair/typebox';
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';
import { ValueErrorType } from '@sinclair/typebox/errors';
import { CliError, ExitCode } from '../errors.js';

const compiled = new WeakMap<TSchema, TypeCheck<TSchema>>();

function checker(schema: TSchema): TypeCheck<TSchema> {
  let c = compiled.get(schema);
  if (!c) compiled.set(schema, (c = TypeCompiler.Compile(schema)));
  return c;
}

/** JSON pointer /users/0/environments -> users[0].environments (rooted at `what`). */
function pathOf(what: string, pointer: string): string {
  let out = what;
  for (const part of pointer.split('/').slice(1)) {
    const p = part.replace(/~1/g, '/').replace(/~0/g, '~');
    out += /^\d+$/.test(p) ? `[${p}]` : out ? `.${p}` : p;
  }
  return out || 'the answer';
}

export const DEBUG_HINT = 'run the command again with --debug to see what the server sent';

export class UnexpectedAnswerError extends CliError {
  constructor(detail: string) {
    super(`unexpected answer from the server: ${detail}`, ExitCode.error, DEBUG_HINT);
  }
}

/** Returns `value` typed as the schema's type, or throws UnexpectedAnswerError naming the first mismatch. */
export function checkAnswer<T>(schema: TSchema, value: unknown, what = ''): T {
  const c = checker(schema);
  if (c.Check(value)) return value as T;
  const first = c.Errors(value).First();
  if (!first) throw new UnexpectedAnswerError(`${what || 'the answer'} does not match`);
  const where = pathOf(what, first.path);
  const missing = first.type === ValueErrorType.ObjectRequiredProperty || (first.value === undefined && first.path !== '');
  throw new UnexpectedAnswerError(missing ? `${where} is missing` : `${where}: ${first.message.toLowerCase()}`);
}
