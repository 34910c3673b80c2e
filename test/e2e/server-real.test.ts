// `fleetctl server` outside --dev: a real service on a database file. The first start needs the
// super-admin's password (never a default), environments come from --create-env, and a restart
// keeps users, environments and the JWT secret (tokens issued before it still work).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:net';
import { BIN, Cli, startServerProcess } from '../helpers/cli.js';

const PASSWORD = 'first-admin-password';

/** A port free right now, so both starts listen on the same URL (profiles are bound to one). */
async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as { port: number };
  await new Promise((r) => srv.close(r));
  return port;
}
let dir: string;
let db: string;
let cli: Cli;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'fleetctl-real-'));
  db = join(dir, 'fleet.db');
  cli = new Cli();
});
afterAll(() => {
  cli?.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

describe('fleetctl server on a database file', () => {
  it('refuses to start a new database without an admin password', async () => {
    const r = await execa('node', [BIN, 'server', '--db', db, '--listen', '127.0.0.1:0'], {
      reject: false,
      stdin: 'ignore',
      env: { FLEETCTL_ADMIN_PASSWORD: undefined },
    });
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toMatch(/--admin-password-stdin or FLEETCTL_ADMIN_PASSWORD/);
    expect(r.stdout).toBe('');
  });

  it('rejects a short admin password and a bad environment name (exit 2)', async () => {
    const short = await execa('node', [BIN, 'server', '--db', db, '--listen', '127.0.0.1:0', '--admin-password-stdin'], {
      reject: false,
      input: 'short',
    });
    expect(short.exitCode).toBe(2);
    expect(short.stderr).toMatch(/at least 8 characters/);
    const bad = await execa('node', [BIN, 'server', '--db', db, '--create-env', 'no spaces'], { reject: false, stdin: 'ignore' });
    expect(bad.exitCode).toBe(2);
  });

  it('creates the super-admin and environments, serves them, and keeps everything across a restart', async () => {
    const listen = `127.0.0.1:${await freePort()}`;
    const first = await startServerProcess(
      ['--db', db, '--listen', listen, '--admin-password-stdin', '--create-env', 'prod', '--create-env', 'lab'],
      { input: PASSWORD },
    );
    try {
      expect(first.output()).toMatch(/listening on http:\/\/127\.0\.0\.1:\d+/);
      await cli.login(first.url, 'admin', 'prod', PASSWORD);
      const map = JSON.parse((await cli.run(['env', 'map', '--json'])).stdout);
      expect(Object.keys(map).sort()).toEqual(['lab', 'prod']);
      const nodes = await cli.run(['nodes', 'list', '--all', '--json']);
      expect(nodes.exitCode).toBe(0);
      expect(JSON.parse(nodes.stdout)).toEqual([]);
      const added = await cli.run(['users', 'add', 'alice', '--environment', 'lab', '--level', 'user', '--password-stdin'], {
        input: 'alice-password-1',
      });
      expect(added.exitCode).toBe(0);
    } finally {
      await first.stop();
    }
    // Restart: no password needed, --create-env is idempotent, and the stored token still works.
    const second = await startServerProcess(['--db', db, '--listen', listen, '--create-env', 'prod']);
    expect(second.url).toBe(first.url);
    try {
      const r = await cli.run(['env', 'map', '--json']);
      expect(r.exitCode, r.stderr).toBe(0);
      expect(Object.keys(JSON.parse(r.stdout)).sort()).toEqual(['lab', 'prod']);
      const users = JSON.parse((await cli.run(['users', 'list', '--json'])).stdout) as { username: string }[];
      expect(users.map((u) => u.username).sort()).toEqual(['admin', 'alice']);
      const alice = new Cli();
      await alice.login(second.url, 'alice', 'lab', 'alice-password-1');
      alice.cleanup();
    } finally {
      await second.stop();
    }
  });
});
