// On 401 `token_expired`: either a clear error (how to log in again) or, at a terminal, an offer
// to log in again, after which the refused request is sent once more with the new token.
import { HttpClient, type HttpOptions, type RequestOptions } from '../client/http.js';
import { ApiError } from '../errors.js';
import type { StoredCredential } from './credentials.js';
import { isTokenExpired } from './session-end.js';

/**
 * An HttpClient that, on 401 `token_expired`, asks the user (at a terminal) to log in again and
 * then repeats the refused request once with the new token. Later requests of the command use
 * the new token too. Without a terminal it fails with sessionEnded().
 */
export class ReauthHttpClient extends HttpClient {
  private renewed = false;

  /**
   * `renew` asks the user to log in again (the login flow, given by the command layer so this
   * client needs neither the Context nor the flow); without it, or once renewed, `ended` is thrown.
   */
  constructor(
    opts: HttpOptions,
    private readonly ended: (e: ApiError) => ApiError,
    private readonly renew?: (e: ApiError) => Promise<StoredCredential>,
  ) {
    super(opts);
  }

  override async request<T>(method: string, path: string, ro: RequestOptions = {}): Promise<T> {
    try {
      return await super.request<T>(method, path, ro);
    } catch (e) {
      if (!isTokenExpired(e)) throw e;
      if (this.renewed || !this.renew) throw this.ended(e);
      const cred = await this.renew(e);
      this.renewed = true;
      this.opts.token = cred.token;
      this.opts.csrfToken = cred.csrfToken || undefined;
      return super.request<T>(method, path, ro);
    }
  }
}
