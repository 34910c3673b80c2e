// The credential stores and the pure parts of the login/session rules.
import { afterAll, describe, expect, it } from 'vitest';
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeCredential, encodeCredential, KeychainUnavailableError, tokenExpiry, tokenSubject } from '../../src/auth/credentials.js';
import { FileCredentialStore } from '../../src/auth/file-store.js';
import { KeychainCredentialStore, keychainPrecheck } from '../../src/auth/keychain-store.js';
import { CredentialStores } from '../../src/auth/select-store.js';
import { expiryWarning, isTokenExpired } from '../../src/auth/session-end.js';
import { isValidProfileName, normalizeServerUrl } from '../../src/config/profiles.js';
import { readStdinSecretLines } from '../../src/prompt.js';
import { ApiError } from '../../src/errors.js';
import { Context } from '../../src/context.js';
import { memoryIO } from '../helpers/memory-io.js';

const dirs: string[] = [];
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'fleetctl-unit-'));
  dirs.push(d);
  return d;
}
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const mode = (p: string) => statSync(p).mode & 0o777;
const jwt = (claims: object) => `eyJhbGciOiJIUzI1NiJ9.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.c2ln`;
const NO_DBUS = { DBUS_SESSION_BUS_ADDRESS: 'disabled:' };

describe('tokens and their encoding', () => {
  it('tokenExpiry reads exp (seconds) as milliseconds, and nothing from a non-JWT', () => {
    expect(tokenExpiry(jwt({ exp: 1_900_000_000 }))).toBe(1_900_000_000_000);
    expect(tokenExpiry(jwt({ sub: 'x' }))).toBeUndefined();
    expect(tokenExpiry('not-a-jwt')).toBeUndefined();
    expect(tokenExpiry('a.!!!.c')).toBeUndefined();
  });

  it('tokenSubject reads sub', () => {
    expect(tokenSubject(jwt({ sub: 'alice', exp: 1 }))).toBe('alice');
    expect(tokenSubject(jwt({ sub: '' }))).toBeUndefined();
    expect(tokenSubject('opaque')).toBeUndefined();
  });

  it('a keychain entry is JSON of token and csrf token; anything else reads as absent', () => {
    const c = { token: 'eyJ.a.b', csrfToken: 'f'.repeat(32) };
    expect(decodeCredential(encodeCredential(c))).toEqual(c);
    expect(decodeCredential('{"token":""}')).toBeUndefined();
    expect(decodeCredential('plain text')).toBeUndefined();
    expect(decodeCredential('{"token":"t"}')).toEqual({ token: 't', csrfToken: '' });
  });
});

describe('FileCredentialStore', () => {
  it('creates the directory 0700 and the file 0600; set, get, delete per profile', async () => {
    const dir = join(tempDir(), 'cfg');
    const s = new FileCredentialStore(dir);
    expect(await s.get('default')).toBeUndefined();
    await s.set('default', { token: 't1', csrfToken: 'c1' });
    await s.set('other', { token: 't2', csrfToken: 'c2' });
    expect(mode(dir)).toBe(0o700);
    expect(mode(s.path)).toBe(0o600);
    expect(await s.get('default')).toEqual({ token: 't1', csrfToken: 'c1' });
    expect(await s.delete('default')).toBe(true);
    expect(await s.delete('default')).toBe(false);
    expect(JSON.parse(readFileSync(s.path, 'utf8'))).toEqual({ other: { token: 't2', csrfToken: 'c2' } });
    expect(await s.get('__proto__')).toBeUndefined();
  });

  it('a file loosened by hand is written back 0600', async () => {
    const dir = tempDir();
    const s = new FileCredentialStore(dir);
    writeFileSync(s.path, '{}');
    chmodSync(s.path, 0o644);
    await s.set('default', { token: 't', csrfToken: '' });
    expect(mode(s.path)).toBe(0o600);
  });

  it('a damaged file is an error that never quotes its content', async () => {
    const dir = tempDir();
    const s = new FileCredentialStore(dir);
    writeFileSync(s.path, 'eyJhbGciOiJIUzI1NiJ9.secret-token-text');
    const err = await s.get('default').catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toBe(`credentials file ${s.path} is damaged (not a JSON object): remove it and log in again`);
    expect((err as Error).message).not.toContain('secret-token-text');
  });
});

describe('keychain availability', () => {
  it('on Linux a missing or disabled D-Bus session rules the keychain out without touching it', () => {
    expect(keychainPrecheck({ DBUS_SESSION_BUS_ADDRESS: 'disabled:' }, 'linux')).toBe(
      'D-Bus is disabled: DBUS_SESSION_BUS_ADDRESS=disabled:',
    );
    expect(keychainPrecheck({}, 'linux')).toBe('no D-Bus session: DBUS_SESSION_BUS_ADDRESS is not set');
    expect(keychainPrecheck({ DBUS_SESSION_BUS_ADDRESS: 'unix:path=/run/user/1000/bus' }, 'linux')).toBeUndefined();
    const runtime = tempDir();
    writeFileSync(join(runtime, 'bus'), '');
    expect(keychainPrecheck({ XDG_RUNTIME_DIR: runtime }, 'linux')).toBeUndefined();
    expect(keychainPrecheck({}, 'darwin')).toBeUndefined();
    expect(keychainPrecheck({}, 'win32')).toBeUndefined();
  });

  it('an unusable keychain fails every call with KeychainUnavailableError, decided before any call to it', async () => {
    const k = new KeychainCredentialStore(NO_DBUS);
    await expect(k.set('default', { token: 't', csrfToken: '' })).rejects.toBeInstanceOf(KeychainUnavailableError);
    // The reason is the precheck's (the environment says D-Bus is off), not a call that failed.
    await expect(k.get('default')).rejects.toThrow('D-Bus is disabled: DBUS_SESSION_BUS_ADDRESS=disabled:');
    expect(k.unavailableReason).toBe('D-Bus is disabled: DBUS_SESSION_BUS_ADDRESS=disabled:');
  });

  // Linux only: the stand-in bus is a Unix socket, and D-Bus sessions (the Secret Service) are Linux's; CI runs on Linux.
  it.runIf(process.platform === 'linux')(
    'a D-Bus that accepts but never answers is given up after the timeout, for the rest of the run',
    async () => {
      const sock = join(tempDir(), 'bus.sock');
      let connections = 0;
      const silent = createServer((s) => {
        connections++;
        s.on('data', () => {});
      });
      await new Promise<void>((r) => silent.listen(sock, r));
      const saved = process.env.DBUS_SESSION_BUS_ADDRESS;
      // The helper process inherits this process's environment.
      process.env.DBUS_SESSION_BUS_ADDRESS = `unix:path=${sock}`;
      try {
        const k = new KeychainCredentialStore(process.env, 700);
        // Given up by the store's own timeout (this message), not by libdbus's 25 s (another error).
        await expect(k.get('default')).rejects.toThrow('no answer from the keychain within 0.7 s');
        expect(k.unavailableReason).toBe('no answer from the keychain within 0.7 s');
        const tried = connections;
        expect(tried).toBeGreaterThan(0);
        // Not tried again for the rest of the run: no new connection to the bus.
        await expect(k.set('default', { token: 't', csrfToken: '' })).rejects.toBeInstanceOf(KeychainUnavailableError);
        expect(connections).toBe(tried);
      } finally {
        if (saved === undefined) delete process.env.DBUS_SESSION_BUS_ADDRESS;
        else process.env.DBUS_SESSION_BUS_ADDRESS = saved;
        await new Promise((r) => silent.close(r));
      }
    },
  );
});

describe('CredentialStores', () => {
  it('saves to the file with the reason when the keychain is unusable, and to the file without one when asked', async () => {
    const dir = tempDir();
    const stores = new CredentialStores(dir, NO_DBUS);
    const fell = await stores.save('default', { token: 't', csrfToken: 'c' }, {});
    expect(fell.store.kind).toBe('file');
    expect(fell.fallbackReason).toBe('D-Bus is disabled: DBUS_SESSION_BUS_ADDRESS=disabled:');
    const chosen = await stores.save('other', { token: 't2', csrfToken: 'c2' }, { insecureStorage: true });
    expect(chosen.store.kind).toBe('file');
    expect(chosen.fallbackReason).toBeUndefined();
    expect(await stores.file.get('default')).toEqual({ token: 't', csrfToken: 'c' });
  });

  it('reads from the store the profile recorded; removal reports where from', async () => {
    const stores = new CredentialStores(tempDir(), NO_DBUS);
    expect(stores.forProfile('file').kind).toBe('file');
    expect(stores.forProfile('keychain').kind).toBe('keychain');
    expect(stores.forProfile(undefined).kind).toBe('file'); // no keychain here
    await stores.file.set('p', { token: 't', csrfToken: '' });
    expect(await stores.remove('p', 'file')).toEqual({ removed: true, where: `file ${stores.file.path}` });
    expect(await stores.remove('p', 'file')).toEqual({ removed: false, where: `file ${stores.file.path}` });
    await expect(stores.remove('p', 'keychain')).rejects.toBeInstanceOf(KeychainUnavailableError);
  });
});

describe('token expiry warning', () => {
  const ctx = { profileName: 'prod', env: {} };
  const now = Date.parse('2026-01-01T12:00:00Z');

  it('warns within 10 minutes of expiry, not before and not after', () => {
    expect(expiryWarning(ctx, now + 5 * 60_000, now)).toBe(
      'the token of profile "prod" expires in 5 minutes (2026-01-01T12:05:00.000Z): run `fleetctl login` to get a new one',
    );
    expect(expiryWarning(ctx, now + 10 * 60_000, now)).toContain('in 10 minutes');
    expect(expiryWarning(ctx, now + 30_000, now)).toContain('in 1 minute (');
    expect(expiryWarning(ctx, now + 10 * 60_000 + 1, now)).toBeUndefined();
    expect(expiryWarning(ctx, now - 1, now)).toBeUndefined(); // expired: the server says so
    expect(expiryWarning(ctx, undefined, now)).toBeUndefined();
    expect(expiryWarning({ profileName: 'x', env: { FLEETCTL_TOKEN: 't' } }, now + 60_000, now)).toBe(
      'the token in FLEETCTL_TOKEN expires in 1 minute (2026-01-01T12:01:00.000Z)',
    );
  });

  it('Context.api() prints it once on stderr', async () => {
    const dir = tempDir();
    const io = memoryIO();
    const env = {
      FLEETCTL_CONFIG_DIR: dir,
      ...NO_DBUS,
      FLEETCTL_TOKEN: jwt({ exp: Math.floor(Date.now() / 1000) + 120 }),
      FLEETCTL_URL: 'http://127.0.0.1:9',
    };
    const c = new Context({}, env, io);
    await c.api();
    await c.api();
    expect(io.stderrText()).toMatch(/^warning: the token in FLEETCTL_TOKEN expires in 2 minutes \([^)]+\)\n$/);
  });

  it('only 401 token_expired counts as an ended session', () => {
    expect(isTokenExpired(new ApiError(401, 'token_expired', 'x'))).toBe(true);
    expect(isTokenExpired(new ApiError(401, 'unauthorized', 'x'))).toBe(false);
    expect(isTokenExpired(new ApiError(403, 'token_expired', 'x'))).toBe(false);
  });
});

describe('profile names, URLs and stdin lines', () => {
  it('profile names are plain', () => {
    for (const ok of ['default', 'prod-eu', 'a.b_c', 'X1']) expect(isValidProfileName(ok)).toBe(true);
    for (const bad of ['', 'a b', '-x', '../x', 'a/b', 'é', '_x', 'x'.repeat(65)]) expect(isValidProfileName(bad)).toBe(false);
  });

  it('server URLs are http(s), without a trailing slash or credentials', () => {
    expect(normalizeServerUrl('http://127.0.0.1:8080/')).toBe('http://127.0.0.1:8080');
    expect(normalizeServerUrl(' https://fleet.example.com/base/ ')).toBe('https://fleet.example.com/base');
    expect(normalizeServerUrl('ftp://x')).toBeUndefined();
    expect(normalizeServerUrl('fleet.example.com')).toBeUndefined();
    expect(normalizeServerUrl('https://user:pw@fleet.example.com')).toBeUndefined();
  });

  it('readStdinSecretLines names a missing line, never its content', async () => {
    expect(await readStdinSecretLines(memoryIO({ stdin: 'pw\n123456\n' }), ['the password', 'the code'])).toEqual(['pw', '123456']);
    expect(await readStdinSecretLines(memoryIO({ stdin: 'pw\r\n123456' }), ['the password', 'the code'])).toEqual(['pw', '123456']);
    await expect(readStdinSecretLines(memoryIO({ stdin: 'pw\n' }), ['the password', 'the code'])).rejects.toThrow(
      'the code is missing on stdin',
    );
    await expect(readStdinSecretLines(memoryIO({ stdin: 'pw\n1\n2\n' }), ['the password', 'the code'])).rejects.toThrow(
      'expected 2 lines on stdin',
    );
    const err = await readStdinSecretLines(memoryIO({ stdin: 'hunter2\n' }), ['the password', 'the code']).catch((e: Error) => e.message);
    expect(err).not.toContain('hunter2');
  });
});
