// GET /api/v1/environments/{env}/enroll/{target} (4.9): secret, certificate, osquery flags files
// and install/remove scripts. The shell scripts are parsed by `sh -n` and also run, against stub
// commands that write under a temporary root, to show they put the right files in place.
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/api-server.js';
import { TEST_CERT } from './env-helpers.js';

let ts: TestServer;
const tok: Record<string, string> = {};
const tmp = mkdtempSync(join(tmpdir(), 'srv-env-scripts-'));

beforeAll(async () => {
  ts = await startTestServer();
  tok.admin = await ts.login('admin');
  tok.prodAdmin = await ts.login('prod-admin');
  tok.analyst = await ts.login('analyst');
  tok.carver = await ts.login('carver');
  tok.devUser = await ts.login('dev-user', 'dev');
});
afterAll(async () => {
  await ts?.close();
  rmSync(tmp, { recursive: true, force: true });
});

const read = async (target: string, env = 'prod', token = tok.prodAdmin) => {
  const r = await ts.call('GET', `/api/v1/environments/${env}/enroll/${target}`, { token });
  expect(r.status, `${target}: ${JSON.stringify(r.body)}`).toBe(200);
  expect(Object.keys(r.body)).toEqual(['data']);
  expect(r.body.data).toBeTypeOf('string');
  return r.body.data as string;
};
const env = async (name = 'prod') => (await ts.call('GET', `/api/v1/environments/${name}`, { token: tok.admin })).body;
const act = (action: string, body?: unknown) =>
  ts.call('POST', `/api/v1/environments/prod/enroll/${action}`, { token: tok.prodAdmin, body });

let n = 0;
function shCheck(script: string): void {
  const file = join(tmp, `check-${n++}.sh`);
  writeFileSync(file, script);
  for (const shell of ['sh', 'dash', 'bash']) {
    const r = spawnSync(shell, ['-n', file], { encoding: 'utf8' });
    if (r.error && (r.error as NodeJS.ErrnoException).code === 'ENOENT') continue;
    expect(r.stderr, `${shell} -n`).toBe('');
    expect(r.status, `${shell} -n`).toBe(0);
  }
}

describe('flags', () => {
  it('flagsLinux is a complete osquery flags file built from the environment', async () => {
    const e = await env();
    const flags = await read('flagsLinux');
    const lines = flags.trimEnd().split('\n');
    expect(
      lines.every((l) => /^--[a-z_]+=\S/.test(l)),
      flags,
    ).toBe(true);
    expect(lines).toEqual(
      expect.arrayContaining([
        '--host_identifier=uuid',
        '--enroll_secret_path=/etc/osquery/fleetctl.secret',
        `--tls_hostname=${e.hostname}`,
        `--enroll_tls_endpoint=/${e.uuid}/${e.enroll_path}`,
        `--config_tls_endpoint=/${e.uuid}/${e.config_path}`,
        `--logger_tls_endpoint=/${e.uuid}/${e.log_path}`,
        `--distributed_tls_read_endpoint=/${e.uuid}/${e.query_read_path}`,
        `--distributed_tls_write_endpoint=/${e.uuid}/${e.query_write_path}`,
        `--carver_start_endpoint=/${e.uuid}/${e.carver_init_path}`,
        `--carver_continue_endpoint=/${e.uuid}/${e.carver_block_path}`,
        `--config_tls_refresh=${e.config_interval}`,
        `--logger_tls_period=${e.log_interval}`,
        `--distributed_interval=${e.query_interval}`,
      ]),
    );
    // No certificate yet: osquery then uses the system CAs.
    expect(flags).not.toContain('--tls_server_certs');
  });

  it.each([
    ['flagsMac', '/private/var/osquery/fleetctl.secret'],
    ['flagsWindows', 'C:\\Program Files\\osquery\\fleetctl.secret'],
    ['flagsFreeBSD', '/usr/local/etc/fleetctl.secret'],
    ['flags', '__SECRET_FILE__'],
  ])('%s uses that OS’s secret path', async (target, secretPath) => {
    const flags = await read(target);
    expect(flags).toContain(`--enroll_secret_path=${secretPath}\n`);
    // Same flags as Linux apart from the paths.
    const linux = await read('flagsLinux');
    expect(flags.replace(secretPath, '/etc/osquery/fleetctl.secret')).toBe(linux);
  });

  it('follow interval changes and name the certificate file once there is one', async () => {
    const p = await ts.call('PATCH', '/api/v1/environments/intervals/prod', { token: tok.prodAdmin, body: { log_interval: 45 } });
    expect(p.status).toBe(200);
    expect(await read('flagsLinux')).toContain('--logger_tls_period=45\n');
    expect((await act('cert', { certificate: TEST_CERT })).status).toBe(200);
    expect(await read('flagsLinux')).toContain('--tls_server_certs=/etc/osquery/certs/fleetctl.crt\n');
    expect(await read('flagsWindows')).toContain('--tls_server_certs=C:\\Program Files\\osquery\\certs\\fleetctl.crt\n');
    expect(await read('flags')).toContain('--tls_server_certs=__CERT_FILE__\n');
  });
});

describe('secret and cert', () => {
  it('secret is the environment’s enroll secret; cert its certificate', async () => {
    const e = await env();
    expect(await read('secret')).toBe(e.secret);
    expect(await read('cert')).toBe(e.certificate);
    expect(await read('cert')).toBe(TEST_CERT);
  });
});

describe('shell scripts', () => {
  it('enroll.sh and remove.sh parse (sh -n) and carry hostname, uuid and secret paths', async () => {
    const e = await env();
    const enroll = await read('enroll.sh');
    const remove = await read('remove.sh');
    shCheck(enroll);
    shCheck(remove);
    expect(enroll.startsWith('#!/bin/sh\n')).toBe(true);
    expect(enroll).toContain(`https://${e.hostname}/${e.uuid}/${e.enroll_secret_path}/enroll.sh`);
    expect(remove).toContain(`https://${e.hostname}/${e.uuid}/${e.remove_secret_path}/remove.sh`);
    expect(enroll).toContain(`ENROLL_SECRET='${e.secret}'`);
    expect(remove).not.toContain(e.secret);
    expect(enroll).not.toContain('EXPIRED');
  });

  it('an expired enrollment still answers, with a comment line saying so', async () => {
    expect((await act('expire')).status).toBe(200);
    const enroll = await read('enroll.sh');
    const ps1 = await read('enroll.ps1');
    shCheck(enroll);
    for (const script of [enroll, ps1]) {
      const line = script.split(/\r?\n/).find((l) => l.includes('EXPIRED'));
      expect(line).toMatch(/^# EXPIRED: the enrollment of environment prod expired at \d{4}-/);
    }
    // The remove link has its own expiry (never, here).
    expect(await read('remove.sh')).not.toContain('EXPIRED');

    // With tls/oneliner_expiration off, scripts do not expire with the enrollment.
    const off = await ts.call('PATCH', '/api/v1/settings/tls/oneliner_expiration', { token: tok.admin, body: { boolean: false } });
    expect(off.status).toBe(200);
    expect(await read('enroll.sh')).not.toContain('EXPIRED');
    await ts.call('PATCH', '/api/v1/settings/tls/oneliner_expiration', { token: tok.admin, body: { boolean: true } });

    expect((await act('notexpire')).status).toBe(200);
    const never = await read('enroll.sh');
    expect(never).not.toContain('EXPIRED');
    expect(never).not.toContain('Valid until');
    expect((await act('extend')).status).toBe(200);
    expect(await read('enroll.sh')).toMatch(/^# Valid until \d{4}-.*Z\.$/m);
  });

  describe('run against stub commands', () => {
    /** A PATH of stubs: system changes land under `root`, service calls in calls.log. */
    function sandbox(os: 'Linux' | 'Darwin', withOsquery: boolean) {
      const dir = mkdtempSync(join(tmp, 'run-'));
      const bin = join(dir, 'bin');
      const root = join(dir, 'root');
      mkdirSync(bin);
      mkdirSync(root);
      const log = join(dir, 'calls.log');
      const which = (c: string) => execFileSync('sh', ['-c', `command -v ${c}`], { encoding: 'utf8' }).trim();
      for (const c of ['sed', 'tr', 'dirname', 'basename', 'cat']) symlinkSync(which(c), join(bin, c));
      const real = { mkdir: which('mkdir'), chmod: which('chmod'), cat: which('cat') };
      const stub = (name: string, body: string) => {
        writeFileSync(join(bin, name), `#!/bin/sh\n${body}\n`);
        chmodSync(join(bin, name), 0o755);
      };
      const record = `echo "$(basename "$0") $*" >> '${log}'`;
      stub('id', 'echo 0');
      stub('uname', `echo ${os}`);
      stub('mkdir', `for a in "$@"; do case "$a" in -*) ;; *) '${real.mkdir}' -p "${root}$a" ;; esac; done`);
      stub('chmod', `'${real.chmod}' "$1" "${root}$2"`);
      stub('tee', `'${real.cat}' > "${root}$1"`);
      for (const c of ['systemctl', 'service', 'launchctl', 'cp', 'curl', 'dpkg', 'installer']) stub(c, record);
      if (withOsquery) stub('osqueryd', 'exit 0');
      return { dir, root, log, bin };
    }
    const run = (script: string, box: ReturnType<typeof sandbox>) => {
      const file = join(box.dir, 'enroll.sh');
      writeFileSync(file, script);
      return spawnSync('/bin/sh', [file], { encoding: 'utf8', cwd: box.dir, env: { PATH: box.bin, HOME: box.dir } });
    };

    it('on Linux writes the secret, certificate and flags, then enables and restarts osqueryd', async () => {
      const e = await env();
      const box = sandbox('Linux', true);
      const r = run(await read('enroll.sh'), box);
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      expect(readFileSync(join(box.root, '/etc/osquery/fleetctl.secret'), 'utf8')).toBe(`${e.secret}\n`);
      expect(readFileSync(join(box.root, '/etc/osquery/certs/fleetctl.crt'), 'utf8')).toBe(TEST_CERT);
      expect(readFileSync(join(box.root, '/etc/osquery/osquery.flags'), 'utf8')).toBe(await read('flagsLinux'));
      expect(readFileSync(box.log, 'utf8')).toBe('systemctl enable osqueryd\nsystemctl restart osqueryd\n');
      expect(r.stdout).toContain('enrolling this linux node in prod');
    });

    it('on macOS writes the files in /private/var/osquery and loads the launchd job', async () => {
      const box = sandbox('Darwin', true);
      const r = run(await read('enroll.sh'), box);
      expect(r.status, r.stderr).toBe(0);
      expect(readFileSync(join(box.root, '/private/var/osquery/osquery.flags'), 'utf8')).toBe(await read('flagsMac'));
      expect(readFileSync(box.log, 'utf8')).toContain('launchctl load /Library/LaunchDaemons/io.osquery.agent.plist');
    });

    it('installs the environment’s package when osquery is missing, quoting the URL safely', async () => {
      const url = 'https://pkgs.example.com/osquery_$(touch_pwned)_amd64.deb';
      expect((await act('set_deb', { url_deb_pkg: url })).status).toBe(200);
      const box = sandbox('Linux', false);
      const r = run(await read('enroll.sh'), box);
      expect(r.status, r.stderr).toBe(0);
      const calls = readFileSync(box.log, 'utf8').split('\n');
      expect(calls).toContain(`curl -fsSL ${url} -o /tmp/osquery_$(touch_pwned)_amd64.deb`);
      expect(calls).toContain('dpkg -i /tmp/osquery_$(touch_pwned)_amd64.deb');
      expect(existsSync(join(box.dir, 'touch_pwned'))).toBe(false);
    });

    it('without osquery or a package, stops and says what to do', async () => {
      expect((await act('set_deb', { url_deb_pkg: '' })).status).toBe(200);
      const box = sandbox('Linux', false);
      const r = run(await read('enroll.sh'), box);
      expect(r.status).toBe(1);
      expect(r.stderr).toContain('has no deb package');
      expect(existsSync(join(box.root, 'etc'))).toBe(false);
    });

    it('remove.sh stops osqueryd and deletes the enrollment files', async () => {
      const box = sandbox('Linux', true);
      expect(run(await read('enroll.sh'), box).status).toBe(0);
      writeFileSync(join(box.dir, 'calls.log'), '');
      // rm must act under the sandbox root too.
      writeFileSync(
        join(box.bin, 'rm'),
        `#!/bin/sh\nshift\nfor f in "$@"; do ${execFileSync('sh', ['-c', 'command -v rm'], { encoding: 'utf8' }).trim()} -f "${box.root}$f"; done\n`,
      );
      chmodSync(join(box.bin, 'rm'), 0o755);
      const file = join(box.dir, 'remove.sh');
      writeFileSync(file, await read('remove.sh'));
      const r = spawnSync('/bin/sh', [file], { encoding: 'utf8', cwd: box.dir, env: { PATH: box.bin } });
      expect(r.status, r.stderr).toBe(0);
      expect(existsSync(join(box.root, '/etc/osquery/fleetctl.secret'))).toBe(false);
      expect(existsSync(join(box.root, '/etc/osquery/osquery.flags'))).toBe(false);
      expect(readFileSync(box.log, 'utf8')).toBe('systemctl stop osqueryd\nsystemctl disable osqueryd\n');
    });
  });
});

describe('PowerShell scripts', () => {
  it('enroll.ps1 carries the secret, the Windows flags and well-formed here-strings', async () => {
    const e = await env();
    const ps1 = await read('enroll.ps1');
    expect(ps1).toContain('\r\n');
    expect(ps1.replace(/\r\n/g, '')).not.toContain('\n');
    const lines = ps1.split('\r\n');
    expect(lines).toContain(`$enrollSecret = '${e.secret}'`);
    expect(lines).toContain(`$tlsHostname = '${e.hostname}'`);
    expect(lines).toContain(`$envUuid = '${e.uuid}'`);
    expect(ps1).toContain(`https://${e.hostname}/${e.uuid}/${e.enroll_secret_path}/enroll.ps1`);
    // Every here-string opened at a line end is closed at a line start.
    expect(lines.filter((l) => l.endsWith("@'")).length).toBe(2);
    expect(lines.filter((l) => l === "'@").length).toBe(2);
    const start = lines.indexOf("$flags = @'");
    const end = lines.indexOf("'@", start);
    expect(lines.slice(start + 1, end).join('\n') + '\n').toBe(await read('flagsWindows'));
    expect(lines).toContain('#Requires -RunAsAdministrator');
  });

  it('remove.ps1 names the remove link and the files it deletes', async () => {
    const e = await env();
    const ps1 = await read('remove.ps1');
    expect(ps1).toContain(`https://${e.hostname}/${e.uuid}/${e.remove_secret_path}/remove.ps1`);
    expect(ps1).toContain("$secretFile = 'C:\\Program Files\\osquery\\fleetctl.secret'");
    expect(ps1).not.toContain(e.secret);
  });
});

describe('errors', () => {
  it('an unknown target is 400 invalid_target', async () => {
    const r = await ts.call('GET', '/api/v1/environments/prod/enroll/enroll.bat', { token: tok.prodAdmin });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('invalid_target');
    expect(r.body.error).toContain('flagsLinux');
  });

  it('is 401 without a token, 403 below env admin, 404 for an unknown env', async () => {
    const noTok = await ts.call('GET', '/api/v1/environments/prod/enroll/secret');
    expect(noTok.status).toBe(401);
    for (const t of [tok.analyst, tok.carver, tok.devUser]) {
      const r = await ts.call('GET', '/api/v1/environments/prod/enroll/secret', { token: t });
      expect(r.status).toBe(403);
      expect(r.body.code).toBe('forbidden');
      expect(JSON.stringify(r.body)).not.toContain((await env()).secret);
    }
    const other = await ts.call('GET', '/api/v1/environments/staging/enroll/enroll.sh', { token: tok.prodAdmin });
    expect(other.status).toBe(403);
    const unknown = await ts.call('GET', '/api/v1/environments/nope/enroll/secret', { token: tok.admin });
    expect(unknown.status).toBe(404);
    expect(unknown.body.code).toBe('not_found');
  });
});
