// The --dev seed's second factors (seed-auth.ts): what the banner tells a user, and that it is
// true of the server behind it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEV_PASSWORD, startTestServer, type TestServer } from '../helpers/api-server.js';
import { demoMfa, type DemoMfa } from '../helpers/mfa.js';
import { totpCode } from '../../src/lib/totp.js';

let ts: TestServer;
let mfa: DemoMfa;
beforeAll(async () => {
  ts = await startTestServer();
  mfa = demoMfa(ts);
});
afterAll(() => ts?.close());

describe('dev seed: MFA demo', () => {
  it("the banner prints mfa-user's TOTP secret, otpauth URI, an oathtool one-liner and ten distinct recovery codes", () => {
    const text = ts.server.demo!.extra;
    expect(mfa.username).toBe('mfa-user');
    expect(mfa.secret).toMatch(/^[A-Z2-7]{32}$/);
    expect(mfa.otpauthUri).toBe(
      `otpauth://totp/fleetctl%3Amfa-user?secret=${mfa.secret}&issuer=fleetctl&algorithm=SHA1&digits=6&period=30`,
    );
    expect(text).toContain(`oathtool --totp -b ${mfa.secret}`);
    expect(mfa.recoveryCodes).toHaveLength(10);
    expect(new Set(mfa.recoveryCodes).size).toBe(10);
    expect(text.endsWith('\n')).toBe(true);
  });

  it('stores the secret, ten hashed (never clear) recovery codes and user access on prod and staging only', async () => {
    const db = ts.server.deps.db;
    const u = await db.selectFrom('users').selectAll().where('username', '=', 'mfa-user').executeTakeFirstOrThrow();
    expect(u.totp_secret).toBe(mfa.secret);
    expect(u.admin).toBe(0);
    const codes = await db.selectFrom('recovery_codes').select(['code_hash', 'used_at']).where('user_id', '=', u.id).execute();
    expect(codes).toHaveLength(10);
    for (const c of codes) {
      expect(c.code_hash).toMatch(/^[0-9a-f]{64}$/);
      expect(c.used_at).toBeNull();
      for (const clear of mfa.recoveryCodes) expect(c.code_hash).not.toContain(clear.replaceAll('-', ''));
    }
    const access = await db
      .selectFrom('user_env_access')
      .innerJoin('environments', 'environments.id', 'user_env_access.environment_id')
      .select(['environments.name', 'user_level', 'query_level', 'carve_level', 'admin_level'])
      .where('user_env_access.user_id', '=', u.id)
      .orderBy('environments.name')
      .execute();
    expect(access).toEqual([
      { name: 'prod', user_level: 1, query_level: 0, carve_level: 0, admin_level: 0 },
      { name: 'staging', user_level: 1, query_level: 0, carve_level: 0, admin_level: 0 },
    ]);
  });

  it('mfa-user logs in with the dev password and a code from the printed secret; dev is refused', async () => {
    const step1 = await ts.call('POST', '/api/v1/login/staging', { body: { username: 'mfa-user', password: DEV_PASSWORD } });
    expect(step1.status).toBe(401);
    expect(step1.body.code).toBe('mfa_required');
    const step2 = await ts.call('POST', '/api/v1/login/mfa', {
      body: { challenge: step1.body.challenge, code: totpCode(mfa.secret), method: 'totp' },
    });
    expect(step2.status).toBe(200);
    const dev = await ts.call('POST', '/api/v1/login/dev', { body: { username: 'mfa-user', password: DEV_PASSWORD } });
    expect(dev.status).toBe(403);
    expect(dev.body.code).toBe('forbidden');
  });

  it('admin has two WebAuthn credentials, "YubiKey 5C" (cred-1a2b) and "MacBook Touch ID" (cred-3c4d), the IDs the examples use', async () => {
    const rows = await ts.server.deps.db
      .selectFrom('webauthn_credentials')
      .innerJoin('users', 'users.id', 'webauthn_credentials.user_id')
      .select(['users.username', 'webauthn_credentials.id', 'webauthn_credentials.name'])
      .orderBy('webauthn_credentials.name')
      .execute();
    expect(rows.map((r) => [r.username, r.name, r.id])).toEqual([
      ['admin', 'MacBook Touch ID', 'cred-3c4d'],
      ['admin', 'YubiKey 5C', 'cred-1a2b'],
    ]);
  });

  it('a fresh secret and fresh codes at every start', async () => {
    const other = await startTestServer();
    try {
      const again = demoMfa(other);
      expect(again.secret).not.toBe(mfa.secret);
      expect(again.recoveryCodes.some((c) => mfa.recoveryCodes.includes(c))).toBe(false);
    } finally {
      await other.close();
    }
  });
});
