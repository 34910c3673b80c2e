// Pure parts: retry policy, redaction, exit-code mapping, permission levels, pagination,
// node health rules, TOTP and JWT.
import { describe, expect, it } from 'vitest';
import { DEFAULT_RETRY, isIdempotent, parseRetryAfter, retryDelayMs, shouldRetry } from '../../src/client/retry.js';
import { redactBody, redactHeaders } from '../../src/client/redact.js';
import { ApiError, CliError, ExitCode, mapError, NetworkError, UsageError } from '../../src/errors.js';
import { hasLevel } from '../../src/server/permissions.js';
import { likeContains, pageOf, parsePage } from '../../src/server/lib/pagination.js';
import { deriveHealth, isOutdated, platformBucket, uptime, versionKey } from '../../src/server/services/fleet/node-health.js';
import { base32Decode, base32Encode, hotp, matchTotp, totpCode } from '../../src/lib/totp.js';
import { hashPassword, signJwt, verifyJwt, verifyPassword } from '../../src/server/lib/crypto.js';
import { parseDuration } from '../../src/context.js';
import { HttpError } from '../../src/server/errors.js';

describe('retry policy', () => {
  it('retries only idempotent requests, on connection errors, 429 and 503', () => {
    expect(isIdempotent('GET')).toBe(true);
    expect(isIdempotent('POST')).toBe(false);
    expect(shouldRetry('GET', { networkError: true })).toBe(true);
    expect(shouldRetry('GET', { status: 429 })).toBe(true);
    expect(shouldRetry('GET', { status: 503 })).toBe(true);
    expect(shouldRetry('GET', { status: 500 })).toBe(false);
    expect(shouldRetry('GET', { status: 404 })).toBe(false);
    expect(shouldRetry('POST', { status: 503 })).toBe(false);
    expect(shouldRetry('POST', { networkError: true })).toBe(false);
  });

  it('honours Retry-After (seconds or date), capped', () => {
    expect(parseRetryAfter('3', 0)).toBe(3);
    expect(parseRetryAfter(new Date(10_000).toUTCString(), 0)).toBe(10);
    expect(parseRetryAfter('soon', 0)).toBeUndefined();
    expect(retryDelayMs(1, 3, DEFAULT_RETRY)).toBe(3000);
    expect(retryDelayMs(1, 3600, DEFAULT_RETRY)).toBe(DEFAULT_RETRY.maxDelayMs);
  });

  it('backs off exponentially with jitter in [exp/2, exp]', () => {
    const p = { maxAttempts: 5, baseDelayMs: 100, maxDelayMs: 1000 };
    expect(retryDelayMs(1, undefined, p, () => 0)).toBe(50);
    expect(retryDelayMs(1, undefined, p, () => 0.999)).toBe(99);
    expect(retryDelayMs(3, undefined, p, () => 0)).toBe(200);
    expect(retryDelayMs(10, undefined, p, () => 0.999)).toBeLessThanOrEqual(1000);
  });
});

describe('redaction for --debug', () => {
  it('hides credentials in headers and JSON bodies', () => {
    expect(redactHeaders({ authorization: 'Bearer abc', 'x-csrf-token': 'f00', accept: 'application/json' })).toEqual({
      authorization: '[redacted]',
      'x-csrf-token': '[redacted]',
      accept: 'application/json',
    });
    const body = redactBody(JSON.stringify({ username: 'u', password: 'p', nested: { token: 't', code: '123456' } }), false);
    expect(body).not.toMatch(/"p"|"t"|123456/);
    expect(body).toContain('"username":"u"');
    expect(redactBody(JSON.stringify({ code: 'mfa_required', error: 'x', challenge: 'c' }), true)).toBe(
      '{"code":"mfa_required","error":"x","challenge":"[redacted]"}',
    );
    expect(redactBody('not json secret', false)).toBe('[15 bytes of text]');
    // An environment's secret paths are the secret part of its enroll.sh/remove.sh URLs.
    expect(
      JSON.parse(redactBody(JSON.stringify({ name: 'prod', enroll_secret_path: '3Md7Io', remove_secret_path: '3Md7Ir' }), false)),
    ).toEqual({ name: 'prod', enroll_secret_path: '[redacted]', remove_secret_path: '[redacted]' });
  });
});

describe('exit codes', () => {
  it('maps API statuses, network errors and usage errors to the documented codes', () => {
    const api = (status: number, code = 'x') => mapError(new ApiError(status, code, 'msg')).exitCode;
    expect(api(400)).toBe(1);
    expect(api(401)).toBe(4);
    expect(api(403)).toBe(5);
    expect(api(404)).toBe(3);
    expect(api(409)).toBe(6);
    expect(api(429)).toBe(7);
    expect(api(503)).toBe(7);
    expect(api(500)).toBe(1);
    expect(mapError(new NetworkError('down', 'u')).exitCode).toBe(7);
    expect(mapError(new UsageError('bad')).exitCode).toBe(2);
    expect(mapError(new CliError('x', ExitCode.conflict)).exitCode).toBe(6);
    expect(mapError(new ApiError(401, 'token_expired', 'expired')).hint).toMatch(/fleetctl login/);
    expect(mapError(new ApiError(401, 'unauthorized', 'bad token')).message).toBe('bad token (unauthorized, HTTP 401)');
  });

  it('parses durations', () => {
    expect(parseDuration('30')).toBe(30_000);
    expect(parseDuration('2m')).toBe(120_000);
    expect(parseDuration('500ms')).toBe(500);
    expect(parseDuration('2h')).toBe(7_200_000); // query run --expire 2h, as its example says
    expect(() => parseDuration('soon')).toThrow(UsageError);
  });
});

describe('permission levels', () => {
  const lv = (o: Partial<{ user: boolean; query: boolean; carve: boolean; admin: boolean }>) => ({
    user: false,
    query: false,
    carve: false,
    admin: false,
    ...o,
  });
  it('super-admin passes everything; env admin implies query and carve; any level reads', () => {
    expect(hasLevel(true, undefined, 'admin')).toBe(true);
    expect(hasLevel(false, undefined, 'user')).toBe(false);
    expect(hasLevel(false, lv({ admin: true }), 'carve')).toBe(true);
    expect(hasLevel(false, lv({ admin: true }), 'query')).toBe(true);
    expect(hasLevel(false, lv({ carve: true }), 'user')).toBe(true);
    expect(hasLevel(false, lv({ carve: true }), 'query')).toBe(false);
    expect(hasLevel(false, lv({ user: true }), 'carve')).toBe(false);
    expect(hasLevel(false, lv({ query: true }), 'admin')).toBe(false);
  });
});

describe('pagination', () => {
  it('defaults, clamps and rejects', () => {
    expect(parsePage({})).toEqual({ page: 1, pageSize: 50, offset: 0 });
    expect(parsePage({ page: '3', page_size: '9999' })).toEqual({ page: 3, pageSize: 500, offset: 1000 });
    for (const bad of [{ page: '0' }, { page: 'x' }, { page_size: '-2' }, { page: '1.5' }]) expect(() => parsePage(bad)).toThrow(HttpError);
    expect(pageOf([], { page: 1, pageSize: 50, offset: 0 }, 0).total_pages).toBe(0);
    expect(pageOf([1], { page: 1, pageSize: 50, offset: 0 }, 101).total_pages).toBe(3);
    expect(likeContains('50%_off\\')).toBe('%50\\%\\_off\\\\%');
  });
});

describe('node health', () => {
  const now = Date.parse('2026-11-21T12:00:00Z');
  const ctx = { nowMs: now, inactiveHours: 72, newestOsqueryVersion: '5.13.1' };
  const base = { configValid: true, osqueryVersion: '5.13.1', configIntervalSeconds: 300 };
  const ago = (s: number) => new Date(now - s * 1000).toISOString();

  it('buckets platforms case-insensitively', () => {
    expect(platformBucket('Ubuntu')).toBe('linux');
    expect(platformBucket('amzn')).toBe('linux');
    expect(platformBucket('macOS')).toBe('darwin');
    expect(platformBucket('win64')).toBe('windows');
    expect(platformBucket('freebsd')).toBe('other');
  });

  it('healthy, degraded, unhealthy and unknown', () => {
    expect(deriveHealth({ ...base, lastSeen: ago(60) }, ctx)).toMatchObject({
      health: { status: 'healthy', signals: [] },
      risk_level: 'low',
    });
    expect(deriveHealth({ ...base, lastSeen: ago(3600) }, ctx)).toMatchObject({
      health: { status: 'degraded', signals: ['stale_checkin'] },
      risk_level: 'low',
    });
    expect(deriveHealth({ ...base, lastSeen: ago(60), osqueryVersion: '5.12.2' }, ctx)).toMatchObject({
      health: { status: 'degraded', signals: ['osquery_outdated'] },
      risk_level: 'medium',
    });
    expect(deriveHealth({ ...base, lastSeen: ago(60), osqueryVersion: '5.13.0' }, ctx).health.signals).toEqual([]);
    expect(deriveHealth({ ...base, lastSeen: ago(60), configValid: false }, ctx)).toMatchObject({
      health: { status: 'unhealthy' },
      risk_level: 'high',
    });
    const inactive = deriveHealth({ ...base, lastSeen: ago(80 * 3600), osqueryVersion: '5.9.1' }, ctx);
    expect(inactive.health.status).toBe('unhealthy');
    expect(inactive.health.signals).toEqual(['inactive', 'stale_checkin', 'osquery_outdated']);
    expect(inactive.risk_level).toBe('high');
    expect(deriveHealth({ ...base, lastSeen: null }, ctx)).toMatchObject({
      health: { status: 'unknown', signals: ['inactive'] },
      risk_level: 'unknown',
    });
  });

  it('versions sort numerically and outdated means a minor release or more', () => {
    expect(versionKey('5.10.2') > versionKey('5.9.1')).toBe(true);
    expect(isOutdated('4.99.0', '5.0.0')).toBe(true);
    expect(isOutdated('5.12.9', '5.13.0')).toBe(true);
    expect(isOutdated('5.13.0', '5.13.9')).toBe(false);
  });

  it('uptime breaks seconds down', () => {
    expect(uptime(90061, null)).toEqual({
      days: 1,
      hours: 1,
      minutes: 1,
      seconds: 1,
      total_seconds: 90061,
      last_seen: '0001-01-01T00:00:00Z',
    });
  });
});

describe('TOTP (RFC 6238) and base32', () => {
  it('matches the RFC 6238 SHA-1 test vectors', () => {
    const secret = base32Encode(Buffer.from('12345678901234567890'));
    expect(base32Decode(secret).toString()).toBe('12345678901234567890');
    // RFC 6238 appendix B gives 8 digits; the last 6 are the 6-digit code.
    expect(totpCode(secret, 59_000)).toBe('287082');
    expect(totpCode(secret, 1111111109_000)).toBe('081804');
    expect(totpCode(secret, 2000000000_000)).toBe('279037');
    expect(hotp(secret, 1)).toBe('287082');
  });

  it('accepts the previous, current and next step only', () => {
    const secret = base32Encode(Buffer.from('12345678901234567890'));
    const t = 1111111109_000;
    const step = Math.floor(t / 30_000);
    expect(matchTotp(secret, totpCode(secret, t), t)).toBe(step);
    expect(matchTotp(secret, totpCode(secret, t - 30_000), t)).toBe(step - 1);
    expect(matchTotp(secret, totpCode(secret, t + 30_000), t)).toBe(step + 1);
    expect(matchTotp(secret, totpCode(secret, t - 60_000), t)).toBeNull();
    expect(matchTotp(secret, 'abcdef', t)).toBeNull();
  });
});

describe('passwords and JWTs', () => {
  it('hashes with scrypt and verifies', async () => {
    const h = await hashPassword('correct horse');
    expect(h).toMatch(/^scrypt\$16384\$8\$1\$/);
    expect(await verifyPassword('correct horse', h)).toBe(true);
    expect(await verifyPassword('wrong', h)).toBe(false);
    expect(await hashPassword('correct horse')).not.toBe(h);
  });

  it('signs and verifies HS256; rejects tampering and expiry', () => {
    const secret = Buffer.alloc(32, 1);
    const claims = { sub: 'a', iss: 'fleetctl', iat: 100, exp: 200, jti: 'j' };
    const t = signJwt(claims, secret);
    expect(verifyJwt(t, secret, 150_000)).toEqual({ ok: true, claims });
    expect(verifyJwt(t, secret, 200_000)).toEqual({ ok: false, reason: 'expired' });
    expect(verifyJwt(t, Buffer.alloc(32, 2), 150_000)).toEqual({ ok: false, reason: 'signature' });
    const [h, , s] = t.split('.');
    const tampered = `${h}.${Buffer.from(JSON.stringify({ ...claims, sub: 'admin' })).toString('base64url')}.${s}`;
    expect(verifyJwt(tampered, secret, 150_000)).toEqual({ ok: false, reason: 'signature' });
    expect(verifyJwt('garbage', secret, 0)).toEqual({ ok: false, reason: 'malformed' });
    const none = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${t.split('.')[1]}.`;
    expect(verifyJwt(none, secret, 150_000).ok).toBe(false);
  });
});

describe('the demo password', () => {
  it('is letters and digits only, so it never starts with "-" (it is passed as --dev-password VALUE)', async () => {
    const { demoPassword } = await import('../../src/server/start.js');
    for (let i = 0; i < 2000; i++) expect(demoPassword()).toMatch(/^[A-Za-z0-9]{14}$/);
  });
});
