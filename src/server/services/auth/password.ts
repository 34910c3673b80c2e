// Passwords of API users: the rules for a new one, confirming the caller's own before a
// sensitive change, and changing one's own password (4.3).
import { inTransaction } from '../../store/db.js';
import type { Deps, Caller } from '../../context.js';
import type { Kysely } from 'kysely';
import type { DB, UserRow } from '../../store/schema.js';
import { LogTypes, PASSWORD_MIN_LENGTH, Severities, type PasswordChangeBody } from '../../../api/index.js';
import { badRequest, forbidden } from '../../errors.js';
import { hashPassword, verifyPassword } from '../../lib/crypto.js';
import { writeAudit } from '../audit/audit.js';
import { endSessions } from './auth.js';

/** 400 unless `value` is a string of at least PASSWORD_MIN_LENGTH characters. */
export function checkNewPassword(value: string | undefined, field: string): string {
  if (value === undefined || value === '') throw badRequest(`${field} is required`);
  if ([...value].length < PASSWORD_MIN_LENGTH) throw badRequest(`${field} must be at least ${PASSWORD_MIN_LENGTH} characters`);
  return value;
}

/**
 * 403 unless `given` is the user's password. Used before changes an attacker holding a stolen
 * token must not be able to make (new password, removing a second factor); failures are audited.
 */
export async function confirmPassword(deps: Deps, user: UserRow, given: string, what: string, sourceIp: string): Promise<void> {
  if (await verifyPassword(given, user.password_hash)) return;
  await writeAudit(deps, {
    line: `${what} refused for ${user.username}: wrong password`,
    logType: LogTypes.user,
    severity: Severities.warning,
    username: user.username,
    sourceIp,
  });
  throw forbidden('wrong password');
}

/**
 * Stores a new password hash and ends the user's sessions (all but `keepJti`) and pending MFA
 * challenges, so nothing obtained with the old password outlives it. Runs on `db` as given, so
 * callers can make it part of a larger transaction.
 */
export async function storePassword(deps: Deps, db: Kysely<DB>, userId: number, hash: string, keepJti?: string): Promise<void> {
  await db.updateTable('users').set({ password_hash: hash, updated_at: deps.now().toISOString() }).where('id', '=', userId).execute();
  await db.deleteFrom('mfa_challenges').where('user_id', '=', userId).execute();
  await endSessions({ ...deps, db }, userId, keepJti);
}

/** 4.3: both fields required, the new one >= 8 characters, the current one right. */
export async function changeOwnPassword(deps: Deps, caller: Caller, body: PasswordChangeBody, sourceIp: string): Promise<string> {
  if (body.current_password === undefined || body.current_password === '') throw badRequest('current_password is required');
  const next = checkNewPassword(body.new_password, 'new_password');
  await confirmPassword(deps, caller.user, body.current_password, 'password change', sourceIp);
  const hash = await hashPassword(next);
  // The new password, the ended sessions and the audit row commit together.
  await inTransaction(deps.db, async (trx) => {
    await storePassword(deps, trx, caller.user.id, hash, caller.jti);
    await writeAudit(
      { ...deps, db: trx },
      {
        line: `${caller.user.username} changed their password; their other sessions were ended`,
        logType: LogTypes.user,
        username: caller.user.username,
        sourceIp,
      },
    );
  });
  return 'password changed; your other sessions were ended';
}
