// Recovery codes (contract.md 2, MFA): ten single-use codes per user, stored hashed.
//
// Why SHA-256 and not the slow password KDF: each code carries 80 random bits from the CSPRNG,
// so an offline attacker holding the table cannot enumerate the code space (2^80 hashes) no
// matter how fast the hash is; slow hashing only matters for low-entropy secrets that humans
// choose. An unsalted hash also lets us find (and burn) the matching row in one indexed
// UPDATE, where salted scrypt would cost ten KDF runs per attempt. It needs no server key, so
// the dev seed can create codes before the server's JWT secret is settled.
import { createHash, randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { DB } from '../../store/schema.js';
import type { Deps } from '../../context.js';
import { base32Encode } from '../../../lib/totp.js';

export const RECOVERY_CODE_COUNT = 10;

/** `abcd-efgh-ijkl-mnop`: 16 base32 characters (80 bits), grouped for reading aloud. */
export function generateRecoveryCode(): string {
  const raw = base32Encode(randomBytes(10)).toLowerCase();
  return raw.match(/.{4}/g)!.join('-');
}

/** Case, dashes and spaces do not matter when a code is typed back. */
export function normalizeRecoveryCode(code: string): string | null {
  const c = code.toLowerCase().replace(/[\s-]+/g, '');
  return /^[a-z2-7]{16}$/.test(c) ? c : null;
}

export function hashRecoveryCode(normalized: string): string {
  return createHash('sha256').update(normalized).digest('hex');
}

/** Replaces the user's recovery codes with ten fresh ones and returns them (shown once). */
export async function replaceRecoveryCodes(db: Kysely<DB>, userId: number): Promise<string[]> {
  const codes = Array.from({ length: RECOVERY_CODE_COUNT }, generateRecoveryCode);
  await db.deleteFrom('recovery_codes').where('user_id', '=', userId).execute();
  await db
    .insertInto('recovery_codes')
    .values(codes.map((c) => ({ user_id: userId, code_hash: hashRecoveryCode(normalizeRecoveryCode(c)!), used_at: null })))
    .execute();
  return codes;
}

/** Burns the matching unused code; false when there is none (wrong or already used). */
export async function useRecoveryCode(deps: Deps, userId: number, code: string): Promise<boolean> {
  const normalized = normalizeRecoveryCode(code);
  if (!normalized) return false;
  const r = await deps.db
    .updateTable('recovery_codes')
    .set({ used_at: deps.now().toISOString() })
    .where('user_id', '=', userId)
    .where('code_hash', '=', hashRecoveryCode(normalized))
    .where('used_at', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

export async function unusedRecoveryCodes(deps: Deps, userId: number): Promise<number> {
  const r = await deps.db
    .selectFrom('recovery_codes')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('user_id', '=', userId)
    .where('used_at', 'is', null)
    .executeTakeFirst();
  return Number(r?.n ?? 0);
}
