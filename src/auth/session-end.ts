// How a session's end reads to a user: a warning when the token expires soon, and the error for a
// token the server no longer accepts (whose session, and how to get a new one).
import { ApiError } from '../errors.js';

/** What these messages read of the command's context (a part of Context). */
export interface SessionView {
  profileName: string;
  env: NodeJS.ProcessEnv;
  globals: { profile?: string };
}

export const EXPIRY_WARNING_MS = 10 * 60_000;

/** The warning to show when the token expires within 10 minutes, else undefined. */
export function expiryWarning(ctx: Pick<SessionView, 'profileName' | 'env'>, exp: number | undefined, now: number): string | undefined {
  if (exp === undefined || exp <= now || exp - now > EXPIRY_WARNING_MS) return undefined;
  const mins = Math.max(1, Math.ceil((exp - now) / 60_000));
  const when = `in ${mins} minute${mins === 1 ? '' : 's'} (${new Date(exp).toISOString()})`;
  if (ctx.env.FLEETCTL_TOKEN) return `the token in FLEETCTL_TOKEN expires ${when}`;
  return `the token of profile "${ctx.profileName}" expires ${when}: run \`fleetctl login\` to get a new one`;
}

export function isTokenExpired(e: unknown): e is ApiError {
  return e instanceof ApiError && e.status === 401 && e.code === 'token_expired';
}

/**
 * The error for a token the server no longer accepts: says whose session ended and how to get a
 * new one. Still an ApiError (same status, code and body), so commands that look at API errors
 * (e.g. `api` printing the body) see it as before.
 */
export function sessionEnded(ctx: SessionView, e: ApiError): ApiError {
  const fromEnv = Boolean(ctx.env.FLEETCTL_TOKEN);
  const message = fromEnv
    ? `the token in FLEETCTL_TOKEN is no longer accepted: ${e.message}`
    : `your session for profile "${ctx.profileName}" has ended: ${e.message}`;
  const ended = new ApiError(e.status, e.code, message, e.body, e.retryAfter);
  ended.hint = fromEnv
    ? 'set FLEETCTL_TOKEN to a fresh token (`fleetctl login`, then `fleetctl auth token`)'
    : `run \`fleetctl login${ctx.globals.profile ? ` --profile ${ctx.profileName}` : ''}\` to sign in again`;
  return ended;
}
