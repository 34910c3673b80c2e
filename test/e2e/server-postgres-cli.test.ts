// `fleetctl server --db postgres://...`: what an operator sees when the database URL or its flags
// are wrong (no cluster needed: each case fails before or at the connection).
import { describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { createServer } from 'node:net';
import { BIN } from '../helpers/cli.js';

const server = (args: string[], env: Record<string, string | undefined> = {}) =>
  execa('node', [BIN, 'server', '--listen', '127.0.0.1:0', ...args], {
    reject: false,
    stdin: 'ignore',
    env: { FLEETCTL_ADMIN_PASSWORD: 'admin-password-1', ...env },
  });

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as { port: number };
  await new Promise((r) => srv.close(r));
  return port;
}

describe('fleetctl server on PostgreSQL: wrong URLs and flags', () => {
  it('a database that refuses: one line naming it without the password, exit 1', async () => {
    const port = await closedPort();
    const r = await server(['--db', `postgres://fleet:hunter2-secret@127.0.0.1:${port}/fleet`]);
    expect(r.exitCode).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain(`cannot open the PostgreSQL database postgres://fleet:***@127.0.0.1:${port}/fleet: connection refused`);
    expect(r.stderr + r.stdout).not.toContain('hunter2');
  });

  it('FLEETCTL_DB is read when --db is not given', async () => {
    const port = await closedPort();
    const r = await server([], { FLEETCTL_DB: `postgresql://fleet@127.0.0.1:${port}/fleet` });
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toContain(`127.0.0.1:${port}/fleet: connection refused`);
  });

  it('an unknown sslmode is refused before connecting', async () => {
    const r = await server(['--db', 'postgres://fleet@127.0.0.1:1/fleet?sslmode=sometimes']);
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toMatch(/unknown sslmode "sometimes".*disable, require, verify-ca or verify-full/);
  });

  it('PostgreSQL-only flags on a SQLite database are usage errors (exit 2)', async () => {
    for (const flags of [
      ['--db-pool', '5'],
      ['--db-ca', '/etc/hostname'],
    ]) {
      const r = await server(['--db', '/tmp/never-created.db', ...flags]);
      expect(r.exitCode).toBe(2);
      expect(r.stderr).toContain('--db-pool and --db-ca need a postgres:// database');
    }
    const small = await server(['--db', 'postgres://x@127.0.0.1:1/x', '--db-pool', '1']);
    expect(small.exitCode).toBe(2);
  });
});
