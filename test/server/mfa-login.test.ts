// POST /api/v1/login/mfa (contract.md 2, MFA 4.2) against a real server, with the demo TOTP
// user of the --dev seed and a frozen server clock.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DEV_PASSWORD, startTestServer, type TestServer } from '../helpers/api-server.js';
import { demoMfa, freezeClock, type Clock, type DemoMfa } from '../helpers/mfa.js';
import { jwtClaims } from '../helpers/tokens.js';

let ts: TestServer;
let clock: Clock;
let mfa: DemoMfa;

beforeAll(async () => {
  ts = await startTestServer();
  clock = freezeClock(ts);
  mfa = demoMfa(ts);
});
afterAll(() => ts?.close());
// Every test starts a few TOTP steps later, so codes used by earlier tests are in the past.
beforeEach(() => clock.advance(5 * 30_000));

async function challenge(body: Record<string, unknown> = {}): Promise<string> {
  const r = await ts.call('POST', '/api/v1/login/prod', { body: { username: mfa.username, password: DEV_PASSWORD, ...body } });
  expect(r.status).toBe(401);
  expect(r.body.code).toBe('mfa_required');
  return r.body.challenge as string;
}
const answer = (challengeId: unknown, code: unknown, method: unknown = 'totp') =>
  ts.call('POST', '/api/v1/login/mfa', { body: { challenge: challengeId, code, method } });

async function auditLines(username: string): Promise<{ line: string; log_type: number; severity: number; environment_id: number }[]> {
  return ts.server.deps.db
    .selectFrom('audit_logs')
    .select(['line', 'log_type', 'severity', 'environment_id'])
    .where('username', '=', username)
    .orderBy('id')
    .execute();
}

describe('password step for a TOTP user', () => {
  it('answers 401 mfa_required with an opaque challenge and both methods', async () => {
    const r = await ts.call('POST', '/api/v1/login/prod', { body: { username: mfa.username, password: DEV_PASSWORD } });
    expect(r.status).toBe(401);
    expect(r.body).toEqual({
      code: 'mfa_required',
      error: expect.any(String),
      challenge: expect.any(String),
      methods: ['totp', 'recovery'],
    });
    expect(r.body.challenge.length).toBeGreaterThanOrEqual(32);
  });
});

describe('POST /api/v1/login/mfa', () => {
  it('right TOTP code: 200 {token, csrf_token}, the token works and carries the exp_hours of the password step', async () => {
    const c = await challenge({ exp_hours: 5 });
    const r = await answer(c, clock.code(mfa.secret));
    expect(r.status).toBe(200);
    expect(Object.keys(r.body).sort()).toEqual(['csrf_token', 'token']);
    expect(typeof r.body.token).toBe('string');
    expect(r.body.csrf_token).toMatch(/^[0-9a-f]{32}$/);
    const claims = jwtClaims(r.body.token);
    expect(claims.sub).toBe(mfa.username);
    expect(claims.exp - claims.iat).toBe(5 * 3600);
    const nodes = await ts.call('GET', '/api/v1/nodes/prod?page_size=1', { token: r.body.token });
    expect(nodes.status).toBe(200);
  });

  it('default exp_hours (3) when the password step gave none', async () => {
    const r = await answer(await challenge(), clock.code(mfa.secret));
    expect(r.status).toBe(200);
    const claims = jwtClaims(r.body.token);
    expect(claims.exp - claims.iat).toBe(3 * 3600);
  });

  it('accepts the previous and the next step, but never a step at or before one already accepted', async () => {
    expect((await answer(await challenge(), clock.code(mfa.secret, -1))).status).toBe(200);
    expect((await answer(await challenge(), clock.code(mfa.secret, +1))).status).toBe(200);
    // The current step is older than the accepted next step: refused as a replay.
    const r = await answer(await challenge(), clock.code(mfa.secret, 0));
    expect(r.status).toBe(403);
    expect(r.body).toEqual({ code: 'mfa_invalid', error: expect.any(String) });
  });

  it('a code two steps away is wrong', async () => {
    const r = await answer(await challenge(), clock.code(mfa.secret, 2));
    expect(r.status).toBe(403);
    expect(r.body.code).toBe('mfa_invalid');
  });

  it('a replayed TOTP code is refused (403 mfa_invalid) on a new challenge', async () => {
    const code = clock.code(mfa.secret);
    expect((await answer(await challenge(), code)).status).toBe(200);
    const again = await answer(await challenge(), code);
    expect(again.status).toBe(403);
    expect(again.body.code).toBe('mfa_invalid');
  });

  it('a used challenge is 400 challenge_invalid, even with a fresh right code', async () => {
    const c = await challenge();
    expect((await answer(c, clock.code(mfa.secret))).status).toBe(200);
    clock.advance(30_000);
    const r = await answer(c, clock.code(mfa.secret));
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ code: 'challenge_invalid', error: expect.any(String) });
  });

  it('wrong code: 403 mfa_invalid; audit rows (log_type 1) for failure and success', async () => {
    const before = (await auditLines(mfa.username)).length;
    const c = await challenge();
    const bad = await answer(c, '000000' === clock.code(mfa.secret) ? '111111' : '000000');
    expect(bad.status).toBe(403);
    expect(bad.body).toEqual({ code: 'mfa_invalid', error: expect.any(String) });
    expect((await answer(c, clock.code(mfa.secret))).status).toBe(200);
    const rows = (await auditLines(mfa.username)).slice(before);
    const prodId = (await ts.server.deps.db.selectFrom('environments').select('id').where('name', '=', 'prod').executeTakeFirstOrThrow())
      .id;
    // password step, failure, success
    expect(rows).toHaveLength(3);
    expect(rows.every((r) => r.log_type === 1 && r.environment_id === prodId)).toBe(true);
    expect(rows[1]).toMatchObject({ severity: 2, line: expect.stringMatching(/MFA login failed.*wrong totp code/) });
    expect(rows[2]).toMatchObject({ severity: 1, line: expect.stringMatching(/login ok: mfa-user to prod with totp/) });
  });

  it('a recovery code works once, typed in any case and without dashes', async () => {
    const code = mfa.recoveryCodes[0];
    const first = await answer(await challenge(), code.toUpperCase().replaceAll('-', ''), 'recovery');
    expect(first.status).toBe(200);
    expect(typeof first.body.token).toBe('string');
    const second = await answer(await challenge(), code, 'recovery');
    expect(second.status).toBe(403);
    expect(second.body.code).toBe('mfa_invalid');
    const used = await ts.server.deps.db
      .selectFrom('recovery_codes')
      .innerJoin('users', 'users.id', 'recovery_codes.user_id')
      .select(['recovery_codes.used_at'])
      .where('users.username', '=', mfa.username)
      .where('recovery_codes.used_at', 'is not', null)
      .execute();
    expect(used).toHaveLength(1);
  });

  it('a TOTP code is not a recovery code, nor the reverse', async () => {
    const c = await challenge();
    expect((await answer(c, clock.code(mfa.secret), 'recovery')).status).toBe(403);
    expect((await answer(c, mfa.recoveryCodes[1], 'totp')).status).toBe(403);
    expect((await answer(c, clock.code(mfa.secret), 'totp')).status).toBe(200);
  });

  it('an expired challenge (after 5 minutes) is 400 challenge_invalid', async () => {
    const c = await challenge();
    clock.advance(5 * 60_000 + 1000);
    const r = await answer(c, clock.code(mfa.secret));
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('challenge_invalid');
    // The code was not consumed by the refused attempt: a fresh challenge takes it.
    expect((await answer(await challenge(), clock.code(mfa.secret))).status).toBe(200);
  });

  it('attempt cap: wrong codes 1-4 are 403, the 5th is 429 with Retry-After and burns the challenge', async () => {
    const c = await challenge();
    const wrong = clock.code(mfa.secret, 5);
    for (let i = 0; i < 4; i++) {
      const r = await answer(c, wrong);
      expect(r.status).toBe(403);
      expect(r.body.code).toBe('mfa_invalid');
    }
    const fifth = await answer(c, wrong);
    expect(fifth.status).toBe(429);
    expect(fifth.body).toEqual({ code: 'rate_limited', error: expect.any(String) });
    expect(Number(fifth.headers.get('retry-after'))).toBeGreaterThan(0);
    const after = await answer(c, clock.code(mfa.secret));
    expect(after.status).toBe(400);
    expect(after.body.code).toBe('challenge_invalid');
  });

  it('unknown challenge, or a method other than totp/recovery: 400 challenge_invalid', async () => {
    const unknown = await answer('f'.repeat(48), clock.code(mfa.secret));
    expect(unknown.status).toBe(400);
    expect(unknown.body.code).toBe('challenge_invalid');
    const c = await challenge();
    const sms = await answer(c, clock.code(mfa.secret), 'sms');
    expect(sms.status).toBe(400);
    expect(sms.body.code).toBe('challenge_invalid');
    // The refused method did not spend the challenge.
    expect((await answer(c, clock.code(mfa.secret))).status).toBe(200);
  });

  it('a challenge whose user turned TOTP off is 400 challenge_invalid', async () => {
    const c = await challenge();
    const db = ts.server.deps.db;
    const { totp_secret } = await db
      .selectFrom('users')
      .select('totp_secret')
      .where('username', '=', mfa.username)
      .executeTakeFirstOrThrow();
    await db.updateTable('users').set({ totp_secret: null }).where('username', '=', mfa.username).execute();
    try {
      const r = await answer(c, clock.code(mfa.secret));
      expect(r.status).toBe(400);
      expect(r.body.code).toBe('challenge_invalid');
    } finally {
      await db.updateTable('users').set({ totp_secret }).where('username', '=', mfa.username).execute();
    }
  });

  it('malformed JSON and wrong types: 400 {code, error}, challenge untouched', async () => {
    const c = await challenge();
    const raw = await ts.call('POST', '/api/v1/login/mfa', { rawBody: '{"challenge": ' });
    expect(raw.status).toBe(400);
    expect(raw.body).toEqual({ code: 'invalid_json', error: expect.any(String) });
    const num = await answer(c, 123456);
    expect(num.status).toBe(400);
    expect(num.body).toEqual({ code: 'bad_request', error: expect.any(String) });
    const missing = await ts.call('POST', '/api/v1/login/mfa', { body: { challenge: c, code: clock.code(mfa.secret) } });
    expect(missing.status).toBe(400);
    expect(missing.body.code).toBe('bad_request');
    const row = await ts.server.deps.db
      .selectFrom('mfa_challenges')
      .select(['failures', 'used'])
      .where('id', '=', c)
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ failures: 0, used: 0 });
    expect((await answer(c, clock.code(mfa.secret))).status).toBe(200);
  });
});

describe('per-IP limit shared by the password and code steps', () => {
  it('10 a minute by default: the 11th attempt, password or code, is 429 with Retry-After', async () => {
    const small = await startTestServer({ loginRateLimit: 10 });
    try {
      const c = freezeClock(small);
      const user = demoMfa(small);
      const first = await small.call('POST', '/api/v1/login/prod', { body: { username: user.username, password: DEV_PASSWORD } });
      expect(first.status).toBe(401);
      for (let i = 0; i < 4; i++) {
        const r = await small.call('POST', '/api/v1/login/mfa', {
          body: { challenge: first.body.challenge, code: c.code(user.secret, 9), method: 'totp' },
        });
        expect(r.status).toBe(403);
      }
      for (let i = 0; i < 5; i++) {
        expect((await small.call('POST', '/api/v1/login/prod', { body: { username: 'admin', password: 'nope' } })).status).toBe(401);
      }
      // 10 attempts used: both steps are now refused before looking at the body.
      const mfaStep = await small.call('POST', '/api/v1/login/mfa', {
        body: { challenge: first.body.challenge, code: c.code(user.secret), method: 'totp' },
      });
      expect(mfaStep.status).toBe(429);
      expect(mfaStep.body.code).toBe('rate_limited');
      expect(Number(mfaStep.headers.get('retry-after'))).toBeGreaterThan(0);
      const pw = await small.call('POST', '/api/v1/login/prod', { body: { username: 'admin', password: DEV_PASSWORD } });
      expect(pw.status).toBe(429);
      // A minute later the window is fresh.
      c.advance(61_000);
      expect((await small.call('POST', '/api/v1/login/prod', { body: { username: 'admin', password: DEV_PASSWORD } })).status).toBe(200);
    } finally {
      await small.close();
    }
  });
});
