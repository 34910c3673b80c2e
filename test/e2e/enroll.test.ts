// `fleetctl enroll ...` end to end against a real `fleetctl server --dev` process.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { X509Certificate } from 'node:crypto';
import { BIN, Cli, type ServerProcess } from '../helpers/cli.js';
import { apiCall, runInPty, startAdminSession } from '../helpers/admin-cli.js';
import { EnrollTargets, NEVER, type Environment } from '../../src/api/index.js';

let server: ServerProcess;
let url: string;
let cli: Cli;
let adminToken: string;
let tmp: string;

async function storedEnv(name: string): Promise<Environment> {
  const r = await apiCall(url, 'GET', `/api/v1/environments/${name}`, { token: adminToken });
  expect(r.status).toBe(200);
  return r.body as Environment;
}

const hoursFromNow = (iso: string) => (Date.parse(iso) - Date.now()) / 3600_000;

beforeAll(async () => {
  ({ server, url, cli, token: adminToken } = await startAdminSession());
  tmp = mkdtempSync(join(tmpdir(), 'fleetctl-enroll-'));
});

afterAll(async () => {
  cli?.cleanup();
  rmSync(tmp, { recursive: true, force: true });
  await server?.stop();
});

describe('enroll show', () => {
  it('prints enroll.sh with exactly one trailing newline, and `sh -n` parses it', async () => {
    const r = await cli.run(['enroll', 'show', 'prod', 'enroll.sh']);
    expect(r.exitCode).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout.endsWith('\n')).toBe(true);
    expect(r.stdout.endsWith('\n\n')).toBe(false);
    const prod = await storedEnv('prod');
    expect(r.stdout).toContain(prod.enroll_secret_path);
    const sh = await execa('sh', ['-n'], { input: r.stdout, reject: false });
    expect(sh.exitCode).toBe(0);
    expect(sh.stderr).toBe('');
  });

  it('the shell pipe works as documented: fleetctl enroll show prod remove.sh | sh -n', async () => {
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('FLEETCTL_')) env[k] = v;
    const r = await execa('sh', ['-c', `node "${BIN}" enroll show prod remove.sh | sh -n && echo parsed`], {
      env: { ...env, FLEETCTL_CONFIG_DIR: cli.configDir, DBUS_SESSION_BUS_ADDRESS: 'disabled:' },
      extendEnv: false,
      reject: false,
    });
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe('parsed');
  });

  it('--debug never prints the enroll secret or the script holding it', async () => {
    const secret = (await storedEnv('prod')).secret;
    for (const target of ['secret', 'enroll.sh']) {
      const r = await cli.run(['enroll', 'show', 'prod', target, '--debug']);
      expect(r.exitCode).toBe(0);
      expect(r.stdout).toContain(secret);
      expect(r.stderr).toMatch(/\[debug\] < 200 \(\d+ ms\) \[\d+ bytes, redacted\]/);
      expect(r.stderr).not.toContain(secret);
    }
  });

  it('prints the secret the API holds; -o json gives the API object', async () => {
    const r = await cli.run(['enroll', 'show', 'prod', 'secret']);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe(`${(await storedEnv('prod')).secret}\n`);
    const j = await cli.run(['enroll', 'show', 'prod', 'secret', '-o', 'json']);
    expect(JSON.parse(j.stdout)).toEqual({ data: r.stdout.trimEnd() });
  });

  it.each(EnrollTargets.filter((t) => t !== 'cert'))('answers target %s', async (target) => {
    const r = await cli.run(['enroll', 'show', 'staging', target, '--json']);
    expect(r.exitCode).toBe(0);
    expect(typeof JSON.parse(r.stdout).data).toBe('string');
  });

  it('the per-OS flags are files to use (paths filled in); the generic flags say on stderr that they are a template (issue 29)', async () => {
    const linux = await cli.run(['enroll', 'show', 'prod', 'flagsLinux']);
    expect(linux.exitCode).toBe(0);
    expect(linux.stdout).toMatch(/^--enroll_secret_path=\/etc\/osquery\/fleetctl\.secret$/m);
    expect(linux.stdout).not.toMatch(/__[A-Z]+_FILE__/);
    expect(linux.stderr).toBe('');
    const generic = await cli.run(['enroll', 'show', 'prod', 'flags']);
    expect(generic.exitCode).toBe(0);
    expect(generic.stdout).toMatch(/^--enroll_secret_path=__SECRET_FILE__$/m);
    expect(generic.stderr).toBe(
      'note: these are the generic flags: __SECRET_FILE__ and __CERT_FILE__ stand for paths the install scripts fill in; the flags file for a host is flagsLinux, flagsMac, flagsWindows or flagsFreeBSD\n',
    );
  });

  it('rejects a target that is not one of the choices (exit 2, no request)', async () => {
    const r = await cli.run(['enroll', 'show', 'prod', 'enroll.bat']);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/'enroll\.bat' is invalid for argument 'target'\. Allowed choices are secret, cert, flags/);
  });

  it('exits 3 for an unknown environment, 5 for a user who is not env admin', async () => {
    const a = await cli.run(['enroll', 'show', 'nope', 'secret']);
    expect(a.exitCode).toBe(3);
    const c = new Cli();
    await c.login(url, 'analyst');
    const b = await c.run(['enroll', 'show', 'prod', 'secret']);
    expect(b.exitCode).toBe(5);
    expect(b.stdout).toBe('');
    c.cleanup();
  });
});

describe('enroll extend / expire / notexpire / rotate', () => {
  it('extend opens enrollment for 24 hours and says until when', async () => {
    const r = await cli.run(['enroll', 'extend', 'staging']);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe('');
    const after = await storedEnv('staging');
    expect(hoursFromNow(after.enroll_expire)).toBeGreaterThan(23.9);
    expect(hoursFromNow(after.enroll_expire)).toBeLessThan(24.1);
    expect(r.stderr).toBe(`Enrollment of staging is open until ${after.enroll_expire} (in 1 day).\n`);
  });

  it('notexpire makes it never expire (-o json reports it)', async () => {
    const r = await cli.run(['enroll', 'notexpire', 'staging', '-o', 'json']);
    expect(r.exitCode).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out).toMatchObject({ name: 'staging', enroll_expire: NEVER });
    expect((await storedEnv('staging')).enroll_expire).toBe(NEVER);
  });

  it('expire without --yes and without a terminal exits 2 and changes nothing', async () => {
    const before = await storedEnv('staging');
    const r = await cli.run(['enroll', 'expire', 'staging']);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/refusing to proceed without confirmation: Expire enrollment of staging now .*; pass --yes/);
    expect((await storedEnv('staging')).enroll_expire).toBe(before.enroll_expire);
  });

  it('expire --yes ends enrollment now; the script then says so and still parses', async () => {
    const r = await cli.run(['enroll', 'expire', 'staging', '--yes']);
    expect(r.exitCode).toBe(0);
    const expired = (await storedEnv('staging')).enroll_expire;
    expect(Math.abs(hoursFromNow(expired))).toBeLessThan(0.05);
    // one line, past tense, and the command that reopens it
    expect(r.stderr).toBe(
      `Enrollment of staging expired at ${expired} (just now): new nodes cannot enrol until \`fleetctl enroll extend staging\`.\n`,
    );
    const script = await cli.run(['enroll', 'show', 'staging', 'enroll.sh']);
    expect(script.exitCode).toBe(0);
    expect(script.stdout).toMatch(/^# EXPIRED.*\(fleetctl enroll extend staging\)\.$/m);
    expect(script.stderr).toMatch(/^warning: Enrollment of staging expired at .*fleetctl enroll extend staging/m);
    // values that do not enrol nodes do not warn
    expect((await cli.run(['enroll', 'show', 'staging', 'remove.sh'])).stderr).toBe('');
    expect((await execa('sh', ['-n'], { input: script.stdout, reject: false })).exitCode).toBe(0);
  });

  it('rotate needs confirmation, then changes the secret that `enroll show ENV secret` prints', async () => {
    const old = (await cli.run(['enroll', 'show', 'dev', 'secret'])).stdout;
    const oldPath = (await storedEnv('dev')).enroll_secret_path;

    const refused = await cli.run(['enroll', 'rotate', 'dev']);
    expect(refused.exitCode).toBe(2);
    expect((await cli.run(['enroll', 'show', 'dev', 'secret'])).stdout).toBe(old);

    const p = runInPty(cli, ['enroll', 'rotate', 'dev']);
    await p.expect(/Rotate the enroll secret of dev/);
    p.line('n');
    expect((await p.done()).exitCode).toBe(1);
    expect((await cli.run(['enroll', 'show', 'dev', 'secret'])).stdout).toBe(old);

    const r = await cli.run(['enroll', 'rotate', 'dev', '--yes']);
    expect(r.exitCode).toBe(0);
    expect(r.stderr).toMatch(/^New enroll secret for dev\. Enrollment of dev is open until \S+ \(in 1 day\)\.\n$/);
    const now = (await cli.run(['enroll', 'show', 'dev', 'secret'])).stdout;
    expect(now).not.toBe(old);
    expect(now.trim()).toBe((await storedEnv('dev')).secret);
    const after = await storedEnv('dev');
    expect(after.enroll_secret_path).not.toBe(oldPath);
    expect(hoursFromNow(after.enroll_expire)).toBeGreaterThan(23.9);
    const script = (await cli.run(['enroll', 'show', 'dev', 'enroll.sh'])).stdout;
    expect(script).toContain(after.enroll_secret_path);
    expect(script).not.toContain(oldPath);
  });

  it('exits 5 for a user who is not env admin, and nothing changes', async () => {
    const c = new Cli();
    await c.login(url, 'querier');
    const before = await storedEnv('prod');
    const r = await c.run(['enroll', 'rotate', 'prod', '--yes']);
    expect(r.exitCode).toBe(5);
    expect(await storedEnv('prod')).toEqual(before);
    c.cleanup();
  });
});

describe('enroll update', () => {
  it('sets the package URLs given and keeps the others', async () => {
    const before = await storedEnv('prod');
    const r = await cli.run([
      'enroll',
      'update',
      'prod',
      '--deb-url',
      'https://pkg.example.com/osquery.deb',
      '--msi-url',
      'osquery.msi',
      '-o',
      'json',
    ]);
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      name: 'prod',
      deb_package: 'https://pkg.example.com/osquery.deb',
      msi_package: 'osquery.msi',
    });
    const after = await storedEnv('prod');
    expect(after).toMatchObject({
      deb_package: 'https://pkg.example.com/osquery.deb',
      msi_package: 'osquery.msi',
      rpm_package: before.rpm_package,
      pkg_package: before.pkg_package,
    });
  });

  it('sets the certificate from a PEM file; `enroll show ENV cert` prints it', async () => {
    const pem = TEST_CERT;
    expect(() => new X509Certificate(pem)).not.toThrow();
    const file = join(tmp, 'fleet.pem');
    writeFileSync(file, pem);
    const r = await cli.run(['enroll', 'update', 'prod', '--certificate', file]);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe('');
    expect((await storedEnv('prod')).certificate.trim()).toBe(pem.trim());
    const shown = await cli.run(['enroll', 'show', 'prod', 'cert']);
    expect(shown.stdout).toBe(`${pem.trim()}\n`);
  });

  it('reads the certificate from stdin with --certificate -', async () => {
    const r = await cli.run(['enroll', 'update', 'staging', '--certificate', '-'], { input: TEST_CERT });
    expect(r.exitCode).toBe(0);
    expect((await storedEnv('staging')).certificate.trim()).toBe(TEST_CERT.trim());
  });

  it('rejects a certificate that does not parse and a plain-http URL (server 400, exit 1), nothing changed', async () => {
    const before = await storedEnv('prod');
    const file = join(tmp, 'bad.pem');
    writeFileSync(file, '-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n');
    const a = await cli.run(['enroll', 'update', 'prod', '--certificate', file]);
    expect(a.exitCode).toBe(1);
    expect(a.stderr).toMatch(/\(bad_request, HTTP 400\)/);
    const b = await cli.run(['enroll', 'update', 'prod', '--rpm-url', 'http://insecure.example.com/o.rpm']);
    expect(b.exitCode).toBe(1);
    expect(await storedEnv('prod')).toEqual(before);
  });

  it('exits 2 with nothing to change or an unreadable file', async () => {
    const a = await cli.run(['enroll', 'update', 'prod']);
    expect(a.exitCode).toBe(2);
    expect(a.stderr).toMatch(/nothing to change/);
    const b = await cli.run(['enroll', 'update', 'prod', '--certificate', join(tmp, 'missing.pem')]);
    expect(b.exitCode).toBe(2);
    expect(b.stderr).toMatch(/cannot read .*missing\.pem: ENOENT/);
  });
});

describe('help', () => {
  it.each(['extend', 'expire', 'rotate', 'notexpire', 'update', 'show'])('enroll %s --help has examples', async (v) => {
    const r = await cli.run(['enroll', v, '--help']);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/Examples:\n {2}\$ fleetctl enroll /);
  });
});

// A self-signed test certificate (openssl req -x509, EC P-256, CN=fleet.example.test, valid to 2126).
const TEST_CERT = `-----BEGIN CERTIFICATE-----
MIIBkTCCATegAwIBAgIUDT8CUJM6xmY1HKQ1WRVytqtHRAEwCgYIKoZIzj0EAwIw
HTEbMBkGA1UEAwwSZmxlZXQuZXhhbXBsZS50ZXN0MCAXDTI2MTEyMTIzMjExMFoY
DzIxMjYxMDI4MjMyMTEwWjAdMRswGQYDVQQDDBJmbGVldC5leGFtcGxlLnRlc3Qw
WTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAARtyRAIKCs7oYwHZvuAol6JS4Q4ksFE
UdHXHeZpBFoHNz+ySEaTz/iQKB0RGiwEApzVodaJVdbaLDuffXGX1Q6bo1MwUTAd
BgNVHQ4EFgQUZDX1u2zsihyu1C+rvB5O94EAkXAwHwYDVR0jBBgwFoAUZDX1u2zs
ihyu1C+rvB5O94EAkXAwDwYDVR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNIADBF
AiEA5IgUXsWKOHkarCna7HuTQtYBh7GylzgDfASdc9RjF3MCIDA4KBkWUkUXJmts
pHcQJkh/4VmUaQH6TMbZgwVJvE47
-----END CERTIFICATE-----
`;
