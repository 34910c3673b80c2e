// The second step of login (4.2): answering the challenge that login() hands out with a TOTP
// or recovery code (contract.md 2, "MFA (4.2) and WebAuthn (4.4)").
import type { Deps } from '../../context.js';
import { LogTypes, MfaMethods, Severities, type MfaLoginBody, type MfaMethod, type TokenResponse } from '../../../api/index.js';
import { badRequest, forbidden, rateLimited } from '../../errors.js';
import { matchTotp } from '../../../lib/totp.js';
import { hasLevel } from '../../permissions.js';
import { envLevels, issueToken } from './auth.js';
import { writeAudit } from '../audit/audit.js';
import { unusedRecoveryCodes, useRecoveryCode } from './recovery-codes.js';

/** Wrong codes allowed per challenge: the 5th burns it (contract: 4 x 403, then 429). */
export const MFA_MAX_FAILURES = 5;
/**
 * Retry-After of the 429 that burns a challenge: one TOTP period, so the next attempt (a new
 * password step) meets a fresh code. The password step itself stays limited per client IP.
 */
export const MFA_BURN_RETRY_AFTER_SECONDS = 30;

const challengeInvalid = (why: string) => badRequest(`MFA challenge ${why}: log in again with your password`, 'challenge_invalid');

/**
 * Accepts a TOTP code for `secret` and records its time step, atomically, so the same code (or
 * an older one) is never accepted again, neither at login nor at enrolment confirm.
 * Returns the accepted step, or null.
 */
export async function acceptTotp(deps: Deps, userId: number, secret: string, code: string): Promise<number | null> {
  const step = matchTotp(secret, code.trim(), deps.now().getTime());
  if (step === null) return null;
  const r = await deps.db
    .updateTable('users')
    .set({ totp_last_step: step })
    .where('id', '=', userId)
    .where('totp_last_step', '<', step)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1 ? step : null;
}

export async function loginMfa(deps: Deps, body: MfaLoginBody, sourceIp: string): Promise<TokenResponse> {
  if (!(MfaMethods as readonly string[]).includes(body.method)) {
    throw badRequest(`unknown MFA method "${body.method}"; valid methods: ${MfaMethods.join(', ')}`, 'challenge_invalid');
  }
  const method = body.method as MfaMethod;
  const now = deps.now();
  const ch = await deps.db.selectFrom('mfa_challenges').selectAll().where('id', '=', body.challenge).executeTakeFirst();
  if (!ch) throw challengeInvalid('is unknown');
  if (ch.used) throw challengeInvalid('was already used');
  if (Date.parse(ch.expires_at) <= now.getTime()) throw challengeInvalid('has expired');

  const user = await deps.db.selectFrom('users').selectAll().where('id', '=', ch.user_id).executeTakeFirst();
  if (!user) throw challengeInvalid('is unknown'); // the user was removed meanwhile
  const env = await deps.db.selectFrom('environments').selectAll().where('id', '=', ch.environment_id).executeTakeFirst();
  const audit = (line: string, severity: 1 | 2 | 3) =>
    writeAudit(deps, { line, logType: LogTypes.login, severity, username: user.username, sourceIp, env: env ?? null });
  // TOTP switched off since the password step: the challenge no longer means anything.
  if (!user.totp_secret) throw challengeInvalid('is no longer valid (two-factor authentication was turned off)');

  const ok =
    method === 'totp'
      ? (await acceptTotp(deps, user.id, user.totp_secret, body.code)) !== null
      : await useRecoveryCode(deps, user.id, body.code);

  if (!ok) {
    const r = await deps.db
      .updateTable('mfa_challenges')
      .set((eb) => ({ failures: eb('failures', '+', 1) }))
      .where('id', '=', ch.id)
      .where('used', '=', 0)
      .returning('failures')
      .executeTakeFirst();
    if (!r) throw challengeInvalid('was already used');
    if (r.failures >= MFA_MAX_FAILURES) {
      await deps.db.updateTable('mfa_challenges').set({ used: 1 }).where('id', '=', ch.id).execute();
      await audit(`MFA login failed for ${user.username}: ${r.failures} wrong codes, challenge revoked`, Severities.warning);
      throw rateLimited(
        MFA_BURN_RETRY_AFTER_SECONDS,
        `too many wrong codes: this MFA challenge is revoked; log in again with your password`,
      );
    }
    await audit(
      `MFA login failed for ${user.username}: wrong ${method} code (attempt ${r.failures} of ${MFA_MAX_FAILURES})`,
      Severities.warning,
    );
    throw forbidden(method === 'totp' ? 'wrong or already used TOTP code' : 'wrong or already used recovery code', 'mfa_invalid');
  }

  // Claim the challenge; a concurrent request answering it first wins.
  const claimed = await deps.db
    .updateTable('mfa_challenges')
    .set({ used: 1 })
    .where('id', '=', ch.id)
    .where('used', '=', 0)
    .executeTakeFirst();
  if (Number(claimed.numUpdatedRows) !== 1) throw challengeInvalid('was already used');

  // Access may have been taken away during the (up to 5 minute) challenge.
  if (!env || !hasLevel(!!user.admin, (await envLevels(deps, user.id)).get(env.id), 'user')) {
    await audit(`MFA login denied: ${user.username} no longer has access to the environment`, Severities.warning);
    throw forbidden(`user ${user.username} has no access to this environment`);
  }
  const left = method === 'recovery' ? await unusedRecoveryCodes(deps, user.id) : undefined;
  await audit(
    `login ok: ${user.username} to ${env.name} with ${method}${left === undefined ? '' : ` (${left} recovery codes left)`}`,
    Severities.info,
  );
  const tokens = await issueToken(deps, user, ch.exp_hours, sourceIp);
  return left === undefined ? tokens : { ...tokens, recovery_codes_left: left };
}
