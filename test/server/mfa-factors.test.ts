// The caller's second factors: TOTP enrolment (begin, confirm, disable) and WebAuthn list and
// removal (4.4), including the "super-admins keep one factor" rule (docs/api.md).
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DEV_PASSWORD, startTestServer, type TestServer } from '../helpers/api-server.js';
import { freezeClock, type Clock } from '../helpers/mfa.js';
import { expiredToken, forgedToken } from '../helpers/tokens.js';

let ts: TestServer;
let clock: Clock;

beforeAll(async () => {
  ts = await startTestServer();
  clock = freezeClock(ts);
});
afterAll(() => ts?.close());
beforeEach(() => clock.advance(5 * 30_000));

const userRow = (username: string) =>
  ts.server.deps.db.selectFrom('users').selectAll().where('username', '=', username).executeTakeFirstOrThrow();
const recoveryRows = async (username: string) =>
  ts.server.deps.db
    .selectFrom('recovery_codes')
    .selectAll()
    .where('user_id', '=', (await userRow(username)).id)
    .execute();

async function enrol(token: string): Promise<{ secret: string; codes: string[] }> {
  const begin = await ts.call('POST', '/api/v1/users/me/mfa/totp', { token });
  expect(begin.status).toBe(200);
  const confirm = await ts.call('POST', '/api/v1/users/me/mfa/totp/confirm', { token, body: { code: clock.code(begin.body.secret) } });
  expect(confirm.status).toBe(200);
  return { secret: begin.body.secret, codes: confirm.body.recovery_codes };
}

describe('TOTP enrolment', () => {
  it('begin, wrong code, confirm, then login needs a second factor; begin again is 409; disable needs the password', async () => {
    const token = await ts.login('analyst');
    const begin = await ts.call('POST', '/api/v1/users/me/mfa/totp', { token });
    expect(begin.status).toBe(200);
    expect(Object.keys(begin.body).sort()).toEqual(['otpauth_uri', 'secret']);
    expect(begin.body.secret).toMatch(/^[A-Z2-7]{32}$/);
    expect(begin.body.otpauth_uri).toBe(
      `otpauth://totp/fleetctl%3Aanalyst?secret=${begin.body.secret}&issuer=fleetctl&algorithm=SHA1&digits=6&period=30`,
    );
    let row = await userRow('analyst');
    expect(row.totp_pending_secret).toBe(begin.body.secret);
    expect(row.totp_secret).toBeNull();

    const wrong = await ts.call('POST', '/api/v1/users/me/mfa/totp/confirm', { token, body: { code: clock.code(begin.body.secret, 3) } });
    expect(wrong.status).toBe(403);
    expect(wrong.body).toEqual({ code: 'mfa_invalid', error: expect.any(String) });
    expect((await userRow('analyst')).totp_secret).toBeNull();

    const ok = await ts.call('POST', '/api/v1/users/me/mfa/totp/confirm', { token, body: { code: clock.code(begin.body.secret) } });
    expect(ok.status).toBe(200);
    expect(Object.keys(ok.body)).toEqual(['recovery_codes']);
    expect(ok.body.recovery_codes).toHaveLength(10);
    for (const c of ok.body.recovery_codes) expect(c).toMatch(/^[a-z2-7]{4}(-[a-z2-7]{4}){3}$/);
    row = await userRow('analyst');
    expect(row.totp_secret).toBe(begin.body.secret);
    expect(row.totp_pending_secret).toBeNull();
    expect(await recoveryRows('analyst')).toHaveLength(10);

    // Login now asks for the second factor; the printed recovery codes work.
    const step1 = await ts.call('POST', '/api/v1/login/prod', { body: { username: 'analyst', password: DEV_PASSWORD } });
    expect(step1.status).toBe(401);
    expect(step1.body.code).toBe('mfa_required');
    const step2 = await ts.call('POST', '/api/v1/login/mfa', {
      body: { challenge: step1.body.challenge, code: ok.body.recovery_codes[3], method: 'recovery' },
    });
    expect(step2.status).toBe(200);

    const again = await ts.call('POST', '/api/v1/users/me/mfa/totp', { token });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('conflict');
    expect((await userRow('analyst')).totp_secret).toBe(begin.body.secret);

    const badPw = await ts.call('DELETE', '/api/v1/users/me/mfa/totp', { token, body: { password: 'not-the-password' } });
    expect(badPw.status).toBe(403);
    expect(badPw.body).toEqual({ code: 'forbidden', error: expect.any(String) });
    expect((await userRow('analyst')).totp_secret).toBe(begin.body.secret);

    const off = await ts.call('DELETE', '/api/v1/users/me/mfa/totp', { token, body: { password: DEV_PASSWORD } });
    expect(off.status).toBe(200);
    expect(off.body).toEqual({ message: expect.any(String) });
    expect((await userRow('analyst')).totp_secret).toBeNull();
    expect(await recoveryRows('analyst')).toHaveLength(0);
    expect(await ts.login('analyst')).toEqual(expect.any(String));

    const offAgain = await ts.call('DELETE', '/api/v1/users/me/mfa/totp', { token, body: { password: DEV_PASSWORD } });
    expect(offAgain.status).toBe(404);
    expect(offAgain.body.code).toBe('not_found');
  });

  it('confirm without a pending secret is 400', async () => {
    const token = await ts.login('querier');
    const r = await ts.call('POST', '/api/v1/users/me/mfa/totp/confirm', { token, body: { code: '123456' } });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ code: 'bad_request', error: expect.any(String) });
  });

  it('the code that confirmed enrolment is not accepted again at login', async () => {
    const token = await ts.login('carver');
    const begin = await ts.call('POST', '/api/v1/users/me/mfa/totp', { token });
    const code = clock.code(begin.body.secret);
    expect((await ts.call('POST', '/api/v1/users/me/mfa/totp/confirm', { token, body: { code } })).status).toBe(200);
    const step1 = await ts.call('POST', '/api/v1/login/prod', { body: { username: 'carver', password: DEV_PASSWORD } });
    const replay = await ts.call('POST', '/api/v1/login/mfa', { body: { challenge: step1.body.challenge, code, method: 'totp' } });
    expect(replay.status).toBe(403);
    expect(replay.body.code).toBe('mfa_invalid');
    // Disabling TOTP revokes the pending challenge too.
    expect((await ts.call('DELETE', '/api/v1/users/me/mfa/totp', { token, body: { password: DEV_PASSWORD } })).status).toBe(200);
    clock.advance(30_000);
    const after = await ts.call('POST', '/api/v1/login/mfa', {
      body: { challenge: step1.body.challenge, code: clock.code(begin.body.secret), method: 'totp' },
    });
    expect(after.status).toBe(400);
    expect(after.body.code).toBe('challenge_invalid');
  });

  it('malformed JSON, wrong types and missing fields are 400 and change nothing', async () => {
    const token = await ts.login('dev-user', 'dev');
    const begin = await ts.call('POST', '/api/v1/users/me/mfa/totp', { token });
    const raw = await ts.call('POST', '/api/v1/users/me/mfa/totp/confirm', { token, rawBody: '{"code":' });
    expect(raw.status).toBe(400);
    expect(raw.body).toEqual({ code: 'invalid_json', error: expect.any(String) });
    const num = await ts.call('POST', '/api/v1/users/me/mfa/totp/confirm', {
      token,
      body: { code: Number(clock.code(begin.body.secret)) },
    });
    expect(num.status).toBe(400);
    expect(num.body).toEqual({ code: 'bad_request', error: expect.any(String) });
    const noPw = await ts.call('DELETE', '/api/v1/users/me/mfa/totp', { token, body: {} });
    expect(noPw.status).toBe(400);
    expect(noPw.body.code).toBe('bad_request');
    const row = await userRow('dev-user');
    expect(row.totp_secret).toBeNull();
    expect(row.totp_pending_secret).toBe(begin.body.secret);
  });
});

describe('WebAuthn credentials (4.4)', () => {
  it('GET lists only the caller\'s credentials with string fields; "never used" is the zero time', async () => {
    const admin = await ts.login('admin');
    const r = await ts.call('GET', '/api/v1/mfa/webauthn', { token: admin });
    expect(r.status).toBe(200);
    expect(r.body).toHaveLength(2);
    for (const c of r.body) {
      expect(Object.keys(c).sort()).toEqual(['created_at', 'id', 'last_used_at', 'name']);
      for (const v of Object.values(c)) expect(typeof v).toBe('string');
      expect(c.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    }
    expect(r.body.map((c: { name: string }) => c.name).sort()).toEqual(['MacBook Touch ID', 'YubiKey 5C']);
    expect(r.body.find((c: { name: string }) => c.name === 'MacBook Touch ID').last_used_at).toBe('0001-01-01T00:00:00Z');
    const other = await ts.call('GET', '/api/v1/mfa/webauthn', { token: await ts.login('analyst') });
    expect(other.status).toBe(200);
    expect(other.body).toEqual([]);
  });

  it('needs a valid token: none 401, forged 401, expired 401 token_expired', async () => {
    for (const [method, path, body] of [
      ['GET', '/api/v1/mfa/webauthn', undefined],
      ['DELETE', '/api/v1/mfa/webauthn/abc', { password: DEV_PASSWORD }],
      ['POST', '/api/v1/users/me/mfa/totp', undefined],
      ['POST', '/api/v1/users/me/mfa/totp/confirm', { code: '123456' }],
      ['DELETE', '/api/v1/users/me/mfa/totp', { password: DEV_PASSWORD }],
    ] as const) {
      const none = await ts.call(method, path, { body });
      expect(none.status, `${method} ${path}`).toBe(401);
      expect(none.body.code).toBe('unauthorized');
      const forged = await ts.call(method, path, { body, token: forgedToken('admin') });
      expect(forged.status).toBe(401);
      expect(forged.body.code).toBe('unauthorized');
      const expired = await ts.call(method, path, { body, token: expiredToken(ts, 'admin') });
      expect(expired.status).toBe(401);
      expect(expired.body.code).toBe('token_expired');
    }
    expect((await ts.call('GET', '/api/v1/mfa/webauthn', { token: await ts.login('admin') })).body).toHaveLength(2);
  });

  it("DELETE: wrong password 403, someone else's or unknown id 404, a super-admin's last factor 409", async () => {
    const admin = await ts.login('admin');
    const creds = (await ts.call('GET', '/api/v1/mfa/webauthn', { token: admin })).body as { id: string; name: string }[];
    const [first, second] = creds as [{ id: string; name: string }, { id: string; name: string }];

    const badPw = await ts.call('DELETE', `/api/v1/mfa/webauthn/${first.id}`, { token: admin, body: { password: 'wrong-password' } });
    expect(badPw.status).toBe(403);
    expect(badPw.body).toEqual({ code: 'forbidden', error: expect.any(String) });

    const notMine = await ts.call('DELETE', `/api/v1/mfa/webauthn/${first.id}`, {
      token: await ts.login('prod-admin'),
      body: { password: DEV_PASSWORD },
    });
    expect(notMine.status).toBe(404);
    expect(notMine.body).toEqual({ code: 'not_found', error: expect.any(String) });
    const unknown = await ts.call('DELETE', '/api/v1/mfa/webauthn/no-such-credential', { token: admin, body: { password: DEV_PASSWORD } });
    expect(unknown.status).toBe(404);

    const noBody = await ts.call('DELETE', `/api/v1/mfa/webauthn/${first.id}`, { token: admin });
    expect(noBody.status).toBe(400);
    expect((await ts.call('GET', '/api/v1/mfa/webauthn', { token: admin })).body).toHaveLength(2);

    const ok = await ts.call('DELETE', `/api/v1/mfa/webauthn/${first.id}`, { token: admin, body: { password: DEV_PASSWORD } });
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ message: expect.stringContaining(first.name) });
    const last = await ts.call('DELETE', `/api/v1/mfa/webauthn/${second.id}`, { token: admin, body: { password: DEV_PASSWORD } });
    expect(last.status).toBe(409);
    expect(last.body).toEqual({ code: 'conflict', error: expect.any(String) });
    expect((await ts.call('GET', '/api/v1/mfa/webauthn', { token: admin })).body.map((c: { id: string }) => c.id)).toEqual([second.id]);

    // With TOTP on, the credential is no longer the last factor; then TOTP is.
    await enrol(admin);
    expect((await ts.call('DELETE', `/api/v1/mfa/webauthn/${second.id}`, { token: admin, body: { password: DEV_PASSWORD } })).status).toBe(
      200,
    );
    const totpLast = await ts.call('DELETE', '/api/v1/users/me/mfa/totp', { token: admin, body: { password: DEV_PASSWORD } });
    expect(totpLast.status).toBe(409);
    expect(totpLast.body.code).toBe('conflict');
    expect((await userRow('admin')).totp_secret).not.toBeNull();

    const audit = await ts.server.deps.db
      .selectFrom('audit_logs')
      .select(['line', 'log_type'])
      .where('username', '=', 'admin')
      .where('line', 'like', '%WebAuthn%')
      .execute();
    expect(audit.filter((a) => a.log_type === 10).map((a) => a.line)).toEqual(
      expect.arrayContaining([
        expect.stringContaining(`removed WebAuthn credential "${first.name}"`),
        expect.stringContaining('wrong password'),
      ]),
    );
  });

  it('a user who is not a super-admin may remove their last factor', async () => {
    const db = ts.server.deps.db;
    const u = await userRow('ci-bot');
    await db
      .insertInto('webauthn_credentials')
      .values({ id: 'ci-bot-key', user_id: u.id, name: 'Solo key', created_at: new Date().toISOString(), last_used_at: null })
      .execute();
    const token = await ts.login('ci-bot', 'staging');
    const r = await ts.call('DELETE', '/api/v1/mfa/webauthn/ci-bot-key', { token, body: { password: DEV_PASSWORD } });
    expect(r.status).toBe(200);
    expect(await db.selectFrom('webauthn_credentials').selectAll().where('user_id', '=', u.id).execute()).toEqual([]);
  });
});
