// HTTPS end to end: `fleetctl server --tls-cert/--tls-key` with a self-signed certificate, and
// the CLI trusting it through --ca-file or NODE_EXTRA_CA_CERTS, refusing it otherwise, and
// skipping verification only with --insecure (and a warning).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cli, DEV_PASSWORD, startServerProcess, type ServerProcess } from '../helpers/cli.js';

let dir: string;
let cert: string;
let server: ServerProcess;
let cli: Cli;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'fleetctl-tls-'));
  cert = join(dir, 'cert.pem');
  const key = join(dir, 'key.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '2',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  server = await startServerProcess(['--dev', '--dev-password', DEV_PASSWORD, '--tls-cert', cert, '--tls-key', key]);
  cli = new Cli();
});

afterAll(async () => {
  cli?.cleanup();
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('HTTPS', () => {
  it('the server listens on https', () => {
    expect(server.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
  });

  it('an untrusted certificate is refused at once with a hint, exit 7', async () => {
    const r = await cli.run(['login', '--url', server.url, '--env', 'prod', '--username', 'admin', '--password-stdin'], {
      input: DEV_PASSWORD,
    });
    expect(r.exitCode).toBe(7);
    expect(r.stderr).toMatch(/certificate/i);
    expect(r.stderr).toMatch(/--ca-file/);
    expect(r.stderr).not.toMatch(/attempts/);
  });

  it('--ca-file trusts the server: login and a listing work', async () => {
    const login = await cli.run(
      ['login', '--url', server.url, '--env', 'prod', '--username', 'admin', '--password-stdin', '--ca-file', cert],
      { input: DEV_PASSWORD },
    );
    expect(login.exitCode).toBe(0);
    const r = await cli.run(['nodes', 'list', '--limit', '2', '--json', '--ca-file', cert]);
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(r.stdout)).toHaveLength(2);
  });

  it('NODE_EXTRA_CA_CERTS trusts the server too', async () => {
    const r = await cli.run(['nodes', 'list', '--limit', '1', '--json'], { env: { NODE_EXTRA_CA_CERTS: cert } });
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(r.stdout)).toHaveLength(1);
  });

  it('--insecure skips verification, with a warning on stderr', async () => {
    const r = await cli.run(['nodes', 'list', '--limit', '1', '--json', '--insecure']);
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(r.stdout)).toHaveLength(1);
    expect(r.stderr).toMatch(/warning: TLS certificate verification is disabled/);
  });
});
