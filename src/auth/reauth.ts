// The token's end of life, as a user meets it: a warning when it expires soon, and on 401
// `token_expired` either a clear error (how to log in again) or, at a terminal, an offer to log
// in again, after which the refused request is sent once more with the new token.
import { HttpClient, type HttpOptions, type RequestOptions } from '../client/http.js';
import { ApiError } from '../errors.js';
import type { Context } from '../context.js';

export const EXPIRY_WARNING_MS = 10 * 60_000;

/** The warning to show when the token expires within 10 minutes, else undefined. */
export function expiryWarning(ctx: Pick<Context, 'profileName' | 'env'>, exp: number | undefined, now: number): string | undefined {
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
export function sessionEnded(ctx: Pick<Context, 'profileName' | 'env' | 'globals'>, e: ApiError): ApiError {
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

/**
 * An HttpClient that, on 401 `token_expired`, asks the user (at a terminal) to log in again and
 * then repeats the refused request once with the new token. Later requests of the command use
 * the new token too. Without a terminal it fails with sessionEnded().
 */
export class ReauthHttpClient extends HttpClient {
  private renewed = false;

  constructor(
    opts: HttpOptions,
    private readonly ctx: Context,
  ) {
    super(opts);
  }

  override async request<T>(method: string, path: string, ro: RequestOptions = {}): Promise<T> {
    try {
      return await super.request<T>(method, path, ro);
    } catch (e) {
      if (!isTokenExpired(e)) throw e;
      if (this.renewed) throw sessionEnded(this.ctx, e);
      const { renewSession } = await import('./login-flow.js');
      const cred = await renewSession(this.ctx, e);
      this.renewed = true;
      this.opts.token = cred.token;
      this.opts.csrfToken = cred.csrfToken || undefined;
      return super.request<T>(method, path, ro);
    }
  }
}
