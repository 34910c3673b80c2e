// Errors raised by the output system. They are the CLI's own error classes (src/errors.ts),
// so main.ts's one mapper prints them as `error: <message>` with the right exit code.
import { CliError, ExitCode, UsageError } from '../errors.js';

/** `-o/--output` names a format that does not exist. Usage error (exit 2). */
export class FormatError extends UsageError {
  readonly validFormats: readonly string[];
  constructor(value: string, valid: readonly string[]) {
    super(`unknown output format "${value}"; valid formats: ${valid.join(', ')}`);
    this.name = 'FormatError';
    this.validFormats = valid;
  }
}

/** `--fields` names a field the data does not have. Usage error (exit 2). */
export class FieldError extends UsageError {
  readonly field: string;
  readonly validFields: string[];
  constructor(field: string, validFields: string[]) {
    super(`unknown field "${field}"; valid fields: ${validFields.join(', ')}`);
    this.name = 'FieldError';
    this.field = field;
    this.validFields = validFields;
  }
}

/**
 * `--jq` failed. `phase: 'compile'` (syntax error, undefined function) is a usage error (exit 2);
 * `phase: 'runtime'` (e.g. `Cannot index number with "x"`) depends on the data (exit 1).
 * `message` is one line (`jq: ...`); `jqOutput` holds jq's own stderr text when there was one.
 */
export class JqError extends CliError {
  readonly phase: 'compile' | 'runtime';
  readonly jqOutput: string | undefined;
  constructor(message: string, phase: 'compile' | 'runtime', jqOutput?: string) {
    super(message, phase === 'compile' ? ExitCode.usage : ExitCode.error);
    this.name = 'JqError';
    this.phase = phase;
    this.jqOutput = jqOutput;
  }
}
