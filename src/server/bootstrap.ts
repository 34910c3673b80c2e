// What every start does before serving: the settings catalogue, the JWT secret, and the first
// super-admin of a new database.
import type { Kysely } from 'kysely';
import type { DB } from './store/schema.js';
import { hashPassword, randomHex } from './lib/crypto.js';
import { RETENTION_SETTINGS } from './services/retention/purge.js';
import { RETENTION_SETTINGS as LOG_RETENTION_SETTINGS } from './services/logs/retention.js';

interface SeedSetting {
  service: string;
  name: string;
  type: 'boolean' | 'integer' | 'string';
  value: boolean | number | string;
  info: string;
}

/** The seeded global settings of contract.md 4.14. */
export const SETTINGS_CATALOGUE: SeedSetting[] = [
  { service: 'api', name: 'service_metrics', type: 'boolean', value: false, info: 'Expose service metrics' },
  { service: 'api', name: 'refresh_envs', type: 'integer', value: 300, info: 'Seconds between environment refreshes' },
  { service: 'api', name: 'refresh_settings', type: 'integer', value: 300, info: 'Seconds between settings refreshes' },
  {
    service: 'admin',
    name: 'inactive_hours',
    type: 'integer',
    value: 72,
    info: 'Hours without a check-in before a node counts as inactive',
  },
  { service: 'admin', name: 'cleanup_sessions', type: 'integer', value: 300, info: 'Seconds between expired-session clean-ups' },
  { service: 'admin', name: 'cleanup_expired', type: 'integer', value: 900, info: 'Seconds between expired-enrollment clean-ups' },
  { service: 'admin', name: 'node_dashboard', type: 'boolean', value: false, info: 'Show the node dashboard' },
  { service: 'tls', name: 'accelerated_seconds', type: 'integer', value: 5, info: 'Accelerated check-in interval, seconds' },
  { service: 'tls', name: 'refresh_envs', type: 'integer', value: 300, info: 'Seconds between environment refreshes' },
  {
    service: 'tls',
    name: 'oneliner_expiration',
    type: 'boolean',
    value: true,
    info: 'One-liner enroll scripts expire with the enrollment',
  },
  // Issue 27: retention by age, purged in the background (services/retention/purge.ts).
  ...Object.values(RETENTION_SETTINGS).map((r) => ({ ...r, type: 'integer' as const })),
  // Issue 30: how long agents' log lines are kept for `fleetctl logs` (docs/api.md "Logs and query reports").
  ...LOG_RETENTION_SETTINGS,
];

export async function ensureSettings(db: Kysely<DB>, now: Date): Promise<void> {
  const ts = now.toISOString();
  for (const s of SETTINGS_CATALOGUE) {
    await db
      .insertInto('settings')
      .values({
        name: s.name,
        service: s.service,
        type: s.type,
        info: s.info,
        environment_id: 0,
        boolean_value: s.type === 'boolean' && s.value ? 1 : 0,
        integer_value: s.type === 'integer' ? (s.value as number) : 0,
        string_value: s.type === 'string' ? (s.value as string) : '',
        created_at: ts,
        updated_at: ts,
        deleted_at: null,
      })
      .onConflict((oc) => oc.columns(['service', 'name', 'environment_id']).doNothing())
      .execute();
  }
}

/** FLEETCTL_JWT_SECRET (>= 32 bytes) wins; otherwise one generated on first start and kept. */
export async function jwtSecret(db: Kysely<DB>, fromEnv: string | undefined): Promise<Buffer> {
  if (fromEnv) {
    if (Buffer.byteLength(fromEnv) < 32) throw new Error('FLEETCTL_JWT_SECRET must be at least 32 bytes');
    return Buffer.from(fromEnv);
  }
  const row = await db.selectFrom('server_meta').select('value').where('key', '=', 'jwt_secret').executeTakeFirst();
  if (row) return Buffer.from(row.value, 'hex');
  const secret = randomHex(32);
  await db
    .insertInto('server_meta')
    .values({ key: 'jwt_secret', value: secret })
    .onConflict((oc) => oc.column('key').doNothing())
    .execute();
  const kept = await db.selectFrom('server_meta').select('value').where('key', '=', 'jwt_secret').executeTakeFirstOrThrow();
  return Buffer.from(kept.value, 'hex');
}

/**
 * A new signing secret after the old one may have leaked: every token signed with the old one
 * stops verifying, and their sessions are deleted. Returns how many sessions ended.
 */
export async function rotateJwtSecret(db: Kysely<DB>): Promise<number> {
  const secret = randomHex(32);
  await db
    .insertInto('server_meta')
    .values({ key: 'jwt_secret', value: secret })
    .onConflict((oc) => oc.column('key').doUpdateSet({ value: secret }))
    .execute();
  const r = await db.deleteFrom('sessions').executeTakeFirst();
  return Number(r.numDeletedRows);
}

export async function userCount(db: Kysely<DB>): Promise<number> {
  const r = await db
    .selectFrom('users')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirst();
  return Number(r?.n ?? 0);
}

export async function createSuperAdmin(db: Kysely<DB>, username: string, password: string, now: Date): Promise<void> {
  const ts = now.toISOString();
  await db
    .insertInto('users')
    .values({
      username,
      fullname: 'Administrator',
      email: '',
      password_hash: await hashPassword(password),
      admin: 1,
      service: 0,
      api: 1,
      totp_secret: null,
      totp_pending_secret: null,
      totp_last_step: 0,
      created_at: ts,
      updated_at: ts,
      last_login_at: null,
    })
    .execute();
}
