// What makes an example fail: a non-zero exit (unless its fixture says which code it documents
// and why), an `error:` line, or a stack trace, anywhere in what it printed.
import { expect } from 'vitest';
import type { Fixture } from './types.js';
import type { ExampleResult } from './run.js';

const ERROR_LINE = /^(error|fatal|panic)\b.*$/im;
const STACK = /^\s+at .+:\d+:\d+\)?$/m;

export function expectExampleWorked(r: ExampleResult, fixture: Fixture): void {
  const printed = r.screen ?? `${r.stdout}${r.stderr}`;
  const context = `ran: ${r.ran}\nexit ${r.exitCode}\n${r.screen !== undefined ? `terminal:\n${r.screen}` : `stdout:\n${r.stdout}\nstderr:\n${r.stderr}`}`;
  const allowed = fixture.exit?.code ?? (fixture.stop ? [0, 130] : [0]);
  expect(allowed, context).toContain(r.exitCode);
  expect(ERROR_LINE.exec(printed)?.[0] ?? null, context).toBeNull();
  expect(STACK.exec(printed)?.[0] ?? null, context).toBeNull();
}
