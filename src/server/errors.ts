// The one error type services throw; the app's error handler turns it into `{code, error}`.
import type { ErrorCode } from '../api/index.js';

export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly extra: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export const badRequest = (msg: string, code: ErrorCode = 'bad_request') => new HttpError(400, code, msg);
export const unauthorized = (msg = 'authentication required', code: ErrorCode = 'unauthorized') => new HttpError(401, code, msg);
export const forbidden = (msg = 'you do not have permission for this', code: ErrorCode = 'forbidden') => new HttpError(403, code, msg);
export const notFound = (msg: string) => new HttpError(404, 'not_found', msg);
export const conflict = (msg: string, extra: Record<string, unknown> = {}) => new HttpError(409, 'conflict', msg, extra);
export const rateLimited = (retryAfterSeconds: number, msg = 'too many requests') =>
  new HttpError(429, 'rate_limited', msg, {}, { 'retry-after': String(Math.max(1, Math.ceil(retryAfterSeconds))) });

export function invalidAction(value: string, allowed: readonly string[]): HttpError {
  return new HttpError(400, 'invalid_action', `unknown action "${value}"; valid actions: ${allowed.join(', ')}`);
}
export function invalidTarget(value: string, allowed: readonly string[]): HttpError {
  return new HttpError(400, 'invalid_target', `unknown target "${value}"; valid targets: ${allowed.join(', ')}`);
}
