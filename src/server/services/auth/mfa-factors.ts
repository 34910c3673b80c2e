// The caller's own second factors: TOTP enrolment (begin, confirm, disable) and WebAuthn
// credentials (list, remove 4.4). WebAuthn credentials are registered by a browser, outside
// this API; here they are only listed and removed.
import type { Deps, Caller } from '../../context.js';
import type { Kysely } from 'kysely';
import type { DB, UserRow } from '../../store/schema.js';
import { LogTypes, NEVER, Severities, type TotpBeginResponse, type WebauthnCredential } from '../../../api/index.js';
import { badRequest, conflict, forbidden, notFound } from '../../errors.js';
import { generateTotpSecret, otpauthUri } from '../../../lib/totp.js';
import { writeAudit } from '../audit/audit.js';
import { acceptTotp } from './mfa.js';
import { replaceRecoveryCodes } from './recovery-codes.js';
import { confirmPassword } from './password.js';

export interface SecondFactors {
  totp: boolean;
  webauthn: number;
}

export async function secondFactors(db: Kysely<DB>, user: Pick<UserRow, 'id' | 'totp_secret'>): Promise<SecondFactors> {
  const r = await db
    .selectFrom('webauthn_credentials')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('user_id', '=', user.id)
    .executeTakeFirst();
  return { totp: user.totp_secret !== null, webauthn: Number(r?.n ?? 0) };
}

/**
 * "The server requires MFA for that user" (contract 4.4): super-admins, who can change
 * everything, must keep at least one second factor once they have one. Removing the last one
 * (TOTP or a WebAuthn credential) is 409. Super-admins without any factor are not locked out,
 * since enrolment cannot be forced through this API; other users may remove all of theirs.
 */
export function requiresMfa(user: Pick<UserRow, 'admin'>): boolean {
  return !!user.admin;
}

function refuseLastFactor(user: UserRow, remaining: number, what: string): void {
  if (requiresMfa(user) && remaining === 0) {
    throw conflict(`cannot remove ${what}: it is your last second factor, and super-admins must keep one`);
  }
}

const auditUser = (deps: Deps, caller: Caller, line: string, sourceIp: string) =>
  writeAudit(deps, { line, logType: LogTypes.user, username: caller.user.username, sourceIp });

/**
 * Begins TOTP enrolment: a new secret, kept as pending until confirmed. 409 while TOTP is on:
 * replacing an active authenticator goes through DELETE (which asks for the password) first, so
 * a stolen token alone cannot swap the user's second factor.
 */
export async function beginTotp(deps: Deps, caller: Caller, sourceIp: string): Promise<TotpBeginResponse> {
  if (caller.user.totp_secret) throw conflict('TOTP is already enabled: disable it first (DELETE /api/v1/users/me/mfa/totp)');
  const secret = generateTotpSecret();
  await deps.db
    .updateTable('users')
    .set({ totp_pending_secret: secret, updated_at: deps.now().toISOString() })
    .where('id', '=', caller.user.id)
    .execute();
  await auditUser(deps, caller, `${caller.user.username} began TOTP enrolment`, sourceIp);
  return { secret, otpauth_uri: otpauthUri(secret, caller.user.username) };
}

/** Confirms enrolment with a code of the pending secret; returns ten recovery codes (shown once). */
export async function confirmTotp(deps: Deps, caller: Caller, code: string, sourceIp: string): Promise<string[]> {
  const pending = caller.user.totp_pending_secret;
  if (!pending) throw badRequest('no TOTP enrolment in progress: begin with POST /api/v1/users/me/mfa/totp');
  if ((await acceptTotp(deps, caller.user.id, pending, code)) === null) {
    await writeAudit(deps, {
      line: `TOTP confirmation failed for ${caller.user.username}: wrong or already used code`,
      logType: LogTypes.user,
      severity: Severities.warning,
      username: caller.user.username,
      sourceIp,
    });
    throw forbidden('wrong or already used TOTP code', 'mfa_invalid');
  }
  const codes = await deps.db.transaction().execute(async (trx) => {
    const r = await trx
      .updateTable('users')
      .set({ totp_secret: pending, totp_pending_secret: null, updated_at: deps.now().toISOString() })
      .where('id', '=', caller.user.id)
      .where('totp_pending_secret', '=', pending)
      .executeTakeFirst();
    if (Number(r.numUpdatedRows) !== 1) throw conflict('the TOTP enrolment changed meanwhile: begin again');
    return replaceRecoveryCodes(trx, caller.user.id);
  });
  await auditUser(deps, caller, `${caller.user.username} enabled TOTP; ${codes.length} recovery codes issued`, sourceIp);
  return codes;
}

/** Disables TOTP (and any pending enrolment) and deletes the recovery codes. */
export async function disableTotp(deps: Deps, caller: Caller, password: string, sourceIp: string): Promise<string> {
  const user = caller.user;
  await confirmPassword(deps, user, password, 'disabling TOTP', sourceIp);
  if (!user.totp_secret && !user.totp_pending_secret) throw notFound('TOTP is not enabled');
  await deps.db.transaction().execute(async (trx) => {
    if (user.totp_secret) refuseLastFactor(user, (await secondFactors(trx, user)).webauthn, 'TOTP');
    // totp_last_step stays: steps only grow, so no code of any secret is accepted twice.
    await trx
      .updateTable('users')
      .set({ totp_secret: null, totp_pending_secret: null, updated_at: deps.now().toISOString() })
      .where('id', '=', user.id)
      .execute();
    await trx.deleteFrom('recovery_codes').where('user_id', '=', user.id).execute();
    await trx.deleteFrom('mfa_challenges').where('user_id', '=', user.id).execute();
  });
  await auditUser(deps, caller, `${user.username} disabled TOTP; recovery codes deleted`, sourceIp);
  return 'TOTP disabled; recovery codes deleted';
}

/**
 * Replaces the caller's recovery codes with ten new ones (the old ones stop working at once).
 * Needs the password, like disabling TOTP: a stolen token alone must not be able to mint
 * codes that log in without the authenticator. 404 while TOTP is off: codes belong to TOTP.
 */
export async function regenerateRecoveryCodes(deps: Deps, caller: Caller, password: string, sourceIp: string): Promise<string[]> {
  const user = caller.user;
  await confirmPassword(deps, user, password, 'regenerating recovery codes', sourceIp);
  if (!user.totp_secret) throw notFound('TOTP is not enabled: recovery codes come with it (fleetctl mfa totp setup)');
  const codes = await deps.db.transaction().execute((trx) => replaceRecoveryCodes(trx, user.id));
  await auditUser(deps, caller, `${user.username} regenerated recovery codes; ${codes.length} issued, the old ones voided`, sourceIp);
  return codes;
}

export async function listWebauthn(deps: Deps, caller: Caller): Promise<WebauthnCredential[]> {
  const rows = await deps.db
    .selectFrom('webauthn_credentials')
    .selectAll()
    .where('user_id', '=', caller.user.id)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map((r) => ({ id: r.id, name: r.name, created_at: r.created_at, last_used_at: r.last_used_at ?? NEVER }));
}

/** 4.4: password first (a stolen token cannot even probe ids), then 404, then the MFA rule. */
export async function removeWebauthn(deps: Deps, caller: Caller, id: string, password: string, sourceIp: string): Promise<string> {
  const user = caller.user;
  await confirmPassword(deps, user, password, 'removing a WebAuthn credential', sourceIp);
  const cred = await deps.db
    .selectFrom('webauthn_credentials')
    .selectAll()
    .where('id', '=', id)
    .where('user_id', '=', user.id)
    .executeTakeFirst();
  if (!cred) throw notFound(`no WebAuthn credential "${id}" of yours`);
  // Counted and deleted in one transaction, so two removals at once cannot both pass the rule.
  await deps.db.transaction().execute(async (trx) => {
    const f = await secondFactors(trx, user);
    refuseLastFactor(user, f.webauthn - 1 + (f.totp ? 1 : 0), `WebAuthn credential "${cred.name}"`);
    await trx.deleteFrom('webauthn_credentials').where('id', '=', cred.id).where('user_id', '=', user.id).execute();
  });
  await auditUser(deps, caller, `${user.username} removed WebAuthn credential "${cred.name}" (${cred.id})`, sourceIp);
  return `WebAuthn credential "${cred.name}" removed`;
}
