// Issue 9.1: the database holds the JWT signing secret. The server creates it 0600 in a 0700
// directory, refuses one other users could read, and --fix-permissions tightens it and rotates
// the secret (a token signed with the leaked secret stops working).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN, startServerProcess } from '../helpers/cli.js';

const PASSWORD = 'first-admin-password';
const mode = (p: string) => (statSync(p).mode & 0o777).toString(8);
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'fleetctl-modes-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const server = (args: string[], input?: string) =>
  execa('node', [BIN, 'server', '--listen', '127.0.0.1:0', ...args], {
    reject: false,
    input,
    stdin: input === undefined ? 'ignore' : undefined,
    timeout: 30_000,
  });

async function login(url: string): Promise<string> {
  const r = await fetch(`${url}/api/v1/login/prod`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'admin', password: PASSWORD }),
  });
  return ((await r.json()) as { token: string }).token;
}
const me = async (url: string, token: string) =>
  (await fetch(`${url}/api/v1/users/me`, { headers: { authorization: `Bearer ${token}` } })).status;

describe('database file modes', () => {
  it('a new database (and its new directories) is 0600 in 0700, -wal and -shm included', async () => {
    const db = join(dir, 'new', 'deeper', 'fleet.db');
    const s = await startServerProcess(['--db', db, '--admin-password-stdin', '--create-env', 'prod'], { input: PASSWORD });
    try {
      await login(s.url); // writes: the WAL files exist
      expect(mode(join(dir, 'new'))).toBe('700');
      expect(mode(join(dir, 'new', 'deeper'))).toBe('700');
      for (const f of [db, `${db}-wal`, `${db}-shm`]) expect(mode(f), f).toBe('600');
    } finally {
      await s.stop();
    }
  });

  it('refuses a database readable by others (exit 1, one line saying how to fix it); --fix-permissions tightens it and ends every session', async () => {
    const db = join(dir, 'old.db');
    const first = await startServerProcess(['--db', db, '--admin-password-stdin', '--create-env', 'prod'], { input: PASSWORD });
    const leakedToken = await login(first.url);
    await first.stop();
    chmodSync(db, 0o644); // every database made before issue 9

    const refused = await server(['--db', db]);
    expect(refused.exitCode).toBe(1);
    expect(refused.stdout).toBe('');
    expect(refused.stderr.trim().split('\n')).toHaveLength(1);
    expect(refused.stderr).toContain('mode 0644');
    expect(refused.stderr).toContain(`fleetctl server --db ${db} --fix-permissions`);
    expect(mode(db)).toBe('644'); // refusing changes nothing

    const fixed = await startServerProcess(['--db', db, '--fix-permissions']);
    try {
      expect(fixed.output()).toMatch(
        /warning: old\.db was open to other users: now 0600; the JWT signing secret was rotated, ending 1 session/,
      );
      expect(mode(db)).toBe('600');
      // A token signed with the old (possibly leaked) secret no longer works; a new login does.
      expect(await me(fixed.url, leakedToken)).toBe(401);
      expect(await me(fixed.url, await login(fixed.url))).toBe(200);
    } finally {
      await fixed.stop();
    }
  });

  it('refuses a TLS key every user can read', async () => {
    const key = join(dir, 'key.pem');
    writeFileSync(key, 'not really a key');
    chmodSync(key, 0o644);
    const r = await server(['--db', join(dir, 'tls.db'), '--tls-cert', key, '--tls-key', key]);
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toContain(`TLS key ${key} is open to every user (mode 0644); run chmod 600 ${key}`);
  });
});
