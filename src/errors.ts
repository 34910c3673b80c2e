// Exit codes and the one error mapper (architecture.md "Interface rules").
export const ExitCode = {
  ok: 0,
  error: 1,
  usage: 2,
  notFound: 3,
  auth: 4,
  forbidden: 5,
  conflict: 6,
  unavailable: 7,
  /** The server does not have the feature (e.g. osctrl has no MFA): refused before any request. */
  unsupported: 8,
  /**
   * A live query or carve ended incomplete (issue 20): some targets did not answer (offline, or
   * not within --wait), answered with an error, or did not upload their file.
   */
  incomplete: 9,
  interrupted: 130,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/** An error with a known exit code and an optional hint line. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: ExitCode = ExitCode.error,
    readonly hint?: string,
  ) {
    super(message);
  }
}

/** Wrong or missing flags/arguments: exit 2. */
export class UsageError extends CliError {
  constructor(message: string, hint?: string) {
    super(message, ExitCode.usage, hint);
  }
}

/** Ctrl-C at a prompt: exit 130, quietly. */
export class InterruptedError extends CliError {
  constructor() {
    super('interrupted', ExitCode.interrupted);
  }
}

/** An HTTP error answer from the server, with its `{code, error}` body. */
export class ApiError extends Error {
  /** A better next step than the generic one for this status, when the caller knows it. */
  hint?: string;

  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly body: Record<string, unknown> = {},
    readonly retryAfter?: number,
  ) {
    super(message);
  }
}

/** The server could not be reached (after retries) or did not answer in time. */
export class NetworkError extends Error {
  constructor(
    message: string,
    readonly url: string,
    readonly hint = 'check --url (or FLEETCTL_URL) and that the server is running',
  ) {
    super(message);
  }
}

export interface MappedError {
  exitCode: ExitCode;
  message: string;
  hint?: string;
}

const LOGIN_HINT = 'run `fleetctl login` to sign in';

export function mapError(err: unknown): MappedError {
  if (err instanceof CliError) return { exitCode: err.exitCode, message: err.message, hint: err.hint };
  if (err instanceof ApiError) {
    const m = mapApiError(err);
    // A hint the client knew better (a web page instead of the API, a refused login) wins.
    return err.hint ? { ...m, hint: err.hint } : m;
  }
  if (err instanceof NetworkError) {
    return { exitCode: ExitCode.unavailable, message: err.message, hint: err.hint };
  }
  const e = err as Error;
  return { exitCode: ExitCode.error, message: e?.message ?? String(err) };
}

function mapApiError(err: ApiError): MappedError {
  const msg = `${err.message} (${err.code}, HTTP ${err.status})`;
  switch (err.status) {
    case 400:
      return { exitCode: ExitCode.error, message: msg };
    case 401:
      return {
        exitCode: ExitCode.auth,
        message: msg,
        hint: err.code === 'token_expired' ? 'your session has ended: run `fleetctl login` to sign in again' : LOGIN_HINT,
      };
    case 403:
      return { exitCode: ExitCode.forbidden, message: msg, hint: err.code === 'csrf' ? LOGIN_HINT : undefined };
    case 404:
      return { exitCode: ExitCode.notFound, message: msg };
    case 409:
      return { exitCode: ExitCode.conflict, message: msg };
    case 429:
    case 503:
      return {
        exitCode: ExitCode.unavailable,
        message: msg,
        hint: err.retryAfter ? `the server asks to retry after ${err.retryAfter} s` : undefined,
      };
    default:
      return { exitCode: ExitCode.error, message: msg };
  }
}
