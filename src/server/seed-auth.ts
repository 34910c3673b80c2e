// Demo second factors (--dev): `mfa-user` with TOTP and recovery codes, and two WebAuthn
// credentials for `admin`. The TOTP secret is fresh at every start and printed in the banner,
// so nobody can rely on a secret baked into the source.
import type { Kysely } from 'kysely';
import type { DB } from './store/schema.js';
import { hashPassword } from './lib/crypto.js';
import { generateTotpSecret, otpauthUri } from '../lib/totp.js';
import { replaceRecoveryCodes } from './services/auth/recovery-codes.js';

export const MFA_DEMO_USER = 'mfa-user';
export const MFA_DEMO_ENVS = ['prod', 'staging'] as const;
export const DEMO_WEBAUTHN = ['YubiKey 5C', 'MacBook Touch ID'] as const;
/**
 * Their credential IDs: fixed, unlike a browser's random ones, so the examples of
 * `fleetctl mfa webauthn show/remove` run as printed against the demo.
 */
export const DEMO_WEBAUTHN_IDS = ['cred-1a2b', 'cred-3c4d'] as const;

/** Returns extra banner text for the dev server. */
export async function seedAuthExtras(db: Kysely<DB>, opts: { now: Date; password: string }): Promise<string> {
  const ts = opts.now.toISOString();
  const secret = generateTotpSecret();
  const { id } = await db
    .insertInto('users')
    .values({
      username: MFA_DEMO_USER,
      fullname: 'user with TOTP, env user on prod and staging',
      email: `${MFA_DEMO_USER}@example.com`,
      password_hash: await hashPassword(opts.password),
      admin: 0,
      service: 0,
      api: 1,
      totp_secret: secret,
      totp_pending_secret: null,
      totp_last_step: 0,
      created_at: ts,
      updated_at: ts,
      last_login_at: null,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  const envs = await db
    .selectFrom('environments')
    .select('id')
    .where('name', 'in', [...MFA_DEMO_ENVS])
    .execute();
  for (const e of envs) {
    await db
      .insertInto('user_env_access')
      .values({ user_id: id, environment_id: e.id, user_level: 1, query_level: 0, carve_level: 0, admin_level: 0 })
      .execute();
  }
  const codes = await replaceRecoveryCodes(db, id);

  const admin = await db.selectFrom('users').select('id').where('username', '=', 'admin').executeTakeFirst();
  if (admin) {
    // Registered "a week ago", one of them used since: the list shows both states.
    const week = new Date(opts.now.getTime() - 7 * 86400_000).toISOString();
    await db
      .insertInto('webauthn_credentials')
      .values(
        DEMO_WEBAUTHN.map((name, i) => ({
          id: DEMO_WEBAUTHN_IDS[i],
          user_id: admin.id,
          name,
          created_at: week,
          last_used_at: i === 0 ? ts : null,
        })),
      )
      .execute();
  }

  const half = Math.ceil(codes.length / 2);
  return [
    `  MFA user:      ${MFA_DEMO_USER} (same password; env user on ${MFA_DEMO_ENVS.join(' and ')}; TOTP on)`,
    `    TOTP secret:     ${secret}`,
    `    otpauth URI:     ${otpauthUri(secret, MFA_DEMO_USER)}`,
    `    current code:    oathtool --totp -b ${secret}`,
    `    recovery codes:  ${codes.slice(0, half).join(' ')}`,
    `                     ${codes.slice(half).join(' ')}`,
    `  WebAuthn:      admin has ${DEMO_WEBAUTHN.length} demo credentials (${DEMO_WEBAUTHN.join(', ')})`,
    '',
  ].join('\n');
}
