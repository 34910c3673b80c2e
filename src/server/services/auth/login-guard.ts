// The per-account login limit, on top of the per-address one (docs/api.md "Login limits").
// Failed password logins to an account from addresses that never logged in to it are counted
// per account; past the limit within the window, such addresses are refused (429) for that
// account until the window ends. Addresses the account logged in from successfully within the
// last 30 days are never refused by this limit: an attacker spreading guesses over many
// addresses cannot lock the real user out of the places they normally log in from.
import type { Kysely } from 'kysely';
import type { DB } from '../../store/schema.js';
import { rateLimited } from '../../errors.js';
import { RateLimiter } from '../../lib/rate-limit.js';

export const ACCOUNT_WINDOW_MS = 15 * 60_000;
export const KNOWN_ADDRESS_DAYS = 30;

/** What the guard needs of the server (a part of Deps: the guard is itself one of Deps). */
export interface LoginGuardDeps {
  db: Kysely<DB>;
  now: () => Date;
  config: { accountLoginLimit: number };
}

export class LoginGuard {
  /** Failures per account in 15-minute windows, shared by every replica (rate_windows). */
  private readonly failures: RateLimiter;

  constructor(private readonly deps: LoginGuardDeps) {
    this.failures = new RateLimiter(deps.db, 'account', deps.config.accountLoginLimit, ACCOUNT_WINDOW_MS, () => deps.now().getTime());
  }

  private async knownAddress(userId: number | undefined, ip: string): Promise<boolean> {
    if (userId === undefined) return false;
    const since = new Date(this.deps.now().getTime() - KNOWN_ADDRESS_DAYS * 86_400_000).toISOString();
    const row = await this.deps.db
      .selectFrom('login_addresses')
      .select('last_login_at')
      .where('user_id', '=', userId)
      .where('source_ip', '=', ip)
      .executeTakeFirst();
    return !!row && row.last_login_at >= since;
  }

  /** Before the password is checked: throws 429 when this address may not try this account now. */
  async check(username: string, userId: number | undefined, ip: string): Promise<void> {
    const { count, retryAfter } = await this.failures.count(username);
    if (count < this.deps.config.accountLoginLimit) return;
    if (await this.knownAddress(userId, ip)) return;
    throw rateLimited(
      retryAfter,
      'too many failed logins to this account from new addresses; try again later, or from an address you logged in from before',
    );
  }

  /** A wrong password (or unknown user): counted unless the address is known for the account. */
  async failed(username: string, userId: number | undefined, ip: string): Promise<void> {
    if (await this.knownAddress(userId, ip)) return;
    await this.failures.hit(username);
  }

  /** A successful login: the address becomes known for the account. */
  async succeeded(userId: number, ip: string): Promise<void> {
    const at = this.deps.now().toISOString();
    await this.deps.db
      .insertInto('login_addresses')
      .values({ user_id: userId, source_ip: ip, last_login_at: at })
      .onConflict((oc) => oc.columns(['user_id', 'source_ip']).doUpdateSet({ last_login_at: at }))
      .execute();
  }
}
