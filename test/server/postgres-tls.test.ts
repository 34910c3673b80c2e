// Issue 14: the server's connection to PostgreSQL over TLS, as libpq's sslmode says. The run's
// cluster gets a self-signed certificate (reloaded, no restart); the server then connects with
// sslmode=require, and with verify-full against --db-ca, and PostgreSQL itself reports the
// connections encrypted. verify-full without the CA is refused in one line.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { chownSync, readFileSync, statSync } from 'node:fs';
import { inject } from 'vitest';
import { execa } from 'execa';
import { startServerProcess, BIN } from '../helpers/cli.js';
import { testDatabaseUrl } from '../helpers/test-db.js';
import { selfSignedCert } from '../helpers/pki.js';

describe('the server on PostgreSQL over TLS', () => {
  let db: string;
  let ca: string;
  const admin = () => inject('pgAdminUrl');
  const psql = (sql: string) => execFileSync('psql', [admin(), '-Atc', sql], { encoding: 'utf8' }).trim();

  beforeAll(async () => {
    const dir = inject('pgClusterDir');
    const { certFile: cert, keyFile: key } = selfSignedCert(dir, 'server', ['127.0.0.1']);
    const { uid, gid } = statSync(dir);
    for (const f of [cert, key]) chownSync(f, uid, gid);
    ca = cert;
    psql(`alter system set ssl_cert_file = '${cert}'`);
    psql(`alter system set ssl_key_file = '${key}'`);
    psql('alter system set ssl = on');
    psql('select pg_reload_conf()');
    db = (await testDatabaseUrl())!;
    expect(readFileSync(cert, 'utf8')).toContain('BEGIN CERTIFICATE');
  });

  afterAll(() => {
    psql('alter system reset ssl');
    psql('select pg_reload_conf()');
  });

  /** How many of the server's connections to this database PostgreSQL sees encrypted / in all. */
  const encrypted = () => {
    const name = new URL(db).pathname.slice(1);
    return psql(
      `select count(*) filter (where s.ssl) || '/' || count(*) from pg_stat_activity a join pg_stat_ssl s using (pid) where a.datname = '${name}' and a.application_name = 'fleetctl-server'`,
    );
  };

  it('sslmode=require: the server starts and its connections are encrypted', async () => {
    const s = await startServerProcess([
      '--dev',
      '--dev-password',
      'tls-test-password-1',
      '--dev-nodes',
      '5',
      '--db',
      `${db}?sslmode=require`,
    ]);
    try {
      const [on, all] = encrypted().split('/').map(Number);
      expect(all).toBeGreaterThan(0);
      expect(on).toBe(all);
    } finally {
      await s.stop();
    }
  });

  it('--db-ca checks the certificate (verify-full), and without the CA verify-full is refused in one line', async () => {
    const s = await startServerProcess(['--db', db, '--db-ca', ca]);
    try {
      const [on, all] = encrypted().split('/').map(Number);
      expect(on).toBe(all);
    } finally {
      await s.stop();
    }
    const r = await execa('node', [BIN, 'server', '--listen', '127.0.0.1:0', '--db', `${db}?sslmode=verify-full`], {
      reject: false,
      stdin: 'ignore',
    });
    expect(r.exitCode).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/cannot open the PostgreSQL database .*: self[- ]signed certificate/);
  });
});
