// Where tokens land. With a real Secret Service (gnome-keyring in a private D-Bus session, started
// by this test through test/fixtures/keyring-session.sh): one entry per profile under the
// service "fleetctl", visible to secret-tool, removed by logout; and a TOTP login typed at a
// terminal against `fleetctl server --dev` ending up there. Without a usable keychain (no
// D-Bus session, or one that never answers): the 0600 file in the 0700 config directory, with a
// warning shown once.
//
// Needs the Debian packages dbus (dbus-run-session), gnome-keyring and libsecret-tools
// (secret-tool). Where they cannot be installed (e.g. macOS), set FLEETCTL_SKIP_KEYRING_TESTS=1
// to skip only the Secret Service part.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startTestServer, type TestServer } from '../helpers/api-server.js';
import { BIN, baseEnv, Cli, DEV_PASSWORD, startServerProcess, type ServerProcess } from '../helpers/cli.js';
import { parseMfaBanner } from '../helpers/mfa.js';
import { totpCode } from '../../src/lib/totp.js';
import { KEY, Terminal } from '../fixtures/terminal.js';

const KEYRING_SESSION = resolve(import.meta.dirname, '../fixtures/keyring-session.sh');
const ROUNDTRIP = resolve(import.meta.dirname, '../fixtures/keyring-roundtrip.sh');

let ts: TestServer;
const clis: Cli[] = [];
const dirs: string[] = [];

function newCli(): Cli {
  const c = new Cli();
  clis.push(c);
  return c;
}

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'fleetctl-kr-'));
  dirs.push(d);
  return d;
}

const mode = (path: string) => (statSync(path).mode & 0o777).toString(8);

beforeAll(async () => {
  ts = await startTestServer();
});

afterAll(async () => {
  for (const c of clis) c.cleanup();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  await ts?.close();
});

// Skipped only with FLEETCTL_SKIP_KEYRING_TESTS=1, where dbus, gnome-keyring and libsecret-tools cannot be
// installed (e.g. macOS); the project's dependency step installs them, so CI runs this.
describe.skipIf(process.env.FLEETCTL_SKIP_KEYRING_TESTS === '1')('OS keychain: a real Secret Service', () => {
  const out = (step: string, ext: 'out' | 'err' | 'rc' = 'out') => readFileSync(join(outDir, `${step}.${ext}`), 'utf8');
  const rc = (step: string) => Number(out(step, 'rc').trim());
  // secret-tool prints the secret on stdout and the attributes on stderr.
  const search = (step: string) => out(step) + out(step, 'err');
  let outDir: string;
  let cli: Cli;

  beforeAll(async () => {
    for (const tool of ['dbus-run-session', 'gnome-keyring-daemon', 'secret-tool']) {
      const found = await execa('sh', ['-c', `command -v ${tool}`], { reject: false });
      if (found.exitCode !== 0) {
        throw new Error(
          `${tool} is missing: apt-get install -y --no-install-recommends dbus gnome-keyring libsecret-tools (or FLEETCTL_SKIP_KEYRING_TESTS=1)`,
        );
      }
    }
    expect(existsSync(KEYRING_SESSION)).toBe(true);
    cli = newCli();
    outDir = tempDir();
    const env: Record<string, string | undefined> = {
      ...baseEnv(cli.configDir),
      FLEETCTL_BIN: BIN,
      SERVER_URL: ts.url,
      FLEET_PASSWORD: DEV_PASSWORD,
    };
    // dbus-run-session gives the script its own bus address: the helper's 'disabled:' must not leak in.
    delete env.DBUS_SESSION_BUS_ADDRESS;
    const r = await execa('dbus-run-session', ['--', KEYRING_SESSION, 'sh', ROUNDTRIP, outDir], {
      env,
      extendEnv: false,
      reject: false,
      timeout: 120_000,
    });
    if (r.exitCode !== 0) throw new Error(`keyring session failed (${r.exitCode}): ${r.stderr}`);
  });

  it('login stores the token in the Secret Service under service "fleetctl", one entry per profile, and no file', () => {
    expect(rc('login-default')).toBe(0);
    expect(out('login-default', 'err')).toContain('Token stored in OS keychain (Secret Service, service "fleetctl")');
    expect(out('login-default', 'err')).not.toContain('warning');
    expect(rc('login-second')).toBe(0);
    const found = search('search-after-login');
    expect(found).toContain('attribute.service = fleetctl');
    expect(found).toContain('attribute.username = default');
    expect(found).toContain('attribute.username = second');
    expect(out('files-after-login').split('\n').filter(Boolean)).toEqual(['config.json']);
    const config = JSON.parse(readFileSync(join(cli.configDir, 'config.json'), 'utf8'));
    expect(config.profiles.default.credentialStore).toBe('keychain');
  });

  it('the entry secret-tool sees holds the token that commands use', () => {
    const entry = JSON.parse(out('lookup-default')) as { token: string; csrfToken: string };
    expect(entry.token).toMatch(/^eyJ/);
    expect(entry.csrfToken).toMatch(/^[0-9a-f]{32}$/);
    expect(rc('auth-token')).toBe(0);
    expect(out('auth-token')).toBe(`${entry.token}\n`);
    const status = JSON.parse(out('auth-status'));
    expect(status).toMatchObject({
      profile: 'default',
      username: 'admin',
      logged_in: true,
      credential_store: 'keychain',
      token_location: 'OS keychain (Secret Service, service "fleetctl")',
    });
    expect(JSON.stringify(status)).not.toContain(entry.token);
    expect(rc('nodes')).toBe(0);
    expect(JSON.parse(out('nodes'))).toHaveLength(1);
  });

  it('--insecure-storage puts the token in the 0600 file, not the keychain, without the fallback warning', () => {
    expect(rc('login-plain')).toBe(0);
    expect(out('login-plain', 'err')).toContain(`Token stored in file ${join(cli.configDir, 'credentials.json')}`);
    expect(out('login-plain', 'err')).not.toContain('warning');
    expect(rc('lookup-plain')).not.toBe(0);
    expect(out('lookup-plain')).toBe('');
    const file = JSON.parse(readFileSync(join(cli.configDir, 'credentials.json'), 'utf8'));
    expect(Object.keys(file)).toEqual(['plain']);
    expect(mode(join(cli.configDir, 'credentials.json'))).toBe('600');
  });

  it('logout removes the entry from the keychain; config remove removes the profile and its entry', () => {
    expect(rc('logout')).toBe(0);
    expect(out('logout', 'err')).toContain('Logged out of profile default (session ended on the server; token removed from OS keychain');
    const after = search('search-after-logout');
    expect(after).not.toContain('attribute.username = default');
    expect(after).toContain('attribute.username = second');
    expect(rc('status-after-logout')).toBe(4);
    expect(JSON.parse(out('status-after-logout'))).toMatchObject({ logged_in: false, credential_store: '' });
    expect(rc('remove-second')).toBe(0);
    expect(search('search-after-remove')).not.toContain('attribute.service = fleetctl');
    expect(search('search-after-remove')).not.toContain('label = keyring:');
  });
});

// Skipped only with FLEETCTL_SKIP_KEYRING_TESTS=1, where dbus, gnome-keyring and libsecret-tools cannot be
// installed (e.g. macOS); the project's dependency step installs them, so CI runs this.
describe.skipIf(process.env.FLEETCTL_SKIP_KEYRING_TESTS === '1')('OS keychain: the whole path a user takes', () => {
  it('a TOTP login typed at a terminal against `fleetctl server --dev` lands in the Secret Service', async () => {
    // A D-Bus session with an unlocked keyring that lives while its stdin is open.
    const session = execa('dbus-run-session', ['--', KEYRING_SESSION, 'sh', '-c', 'echo "BUS=$DBUS_SESSION_BUS_ADDRESS"; cat >/dev/null'], {
      stdin: 'pipe',
      reject: false,
      buffer: false,
    });
    // Listened to at once: execa drops output nobody reads. Waited for, not timed: a session
    // that never starts ends in the test's timeout; one that exits first fails here.
    const busReady = new Promise<string>((resolveBus, reject) => {
      let text = '';
      session.stdout.on('data', (d: Buffer) => {
        text += d.toString();
        const m = /BUS=(\S+)/.exec(text);
        if (m) resolveBus(m[1]);
      });
      void session.then((r) => reject(new Error(`no D-Bus session (dbus-run-session exited ${r.exitCode}): ${text}`)));
    });
    let server: ServerProcess | undefined;
    let term: Terminal | undefined;
    try {
      server = await startServerProcess();
      const bus = await busReady;
      const mfa = parseMfaBanner(server.output());
      const cli = newCli();
      const env = { DBUS_SESSION_BUS_ADDRESS: bus };
      term = new Terminal(['login', '--url', server.url, '--env', 'prod'], { configDir: cli.configDir, env });
      await term.waitFor('Username:');
      term.line(mfa.username);
      await term.waitFor('Password:');
      term.line(DEV_PASSWORD);
      await term.waitFor('Recovery code');
      term.type(KEY.enter);
      await term.waitFor('TOTP code:');
      term.line(totpCode(mfa.secret));
      await term.waitFor('Token stored in OS keychain (Secret Service, service "fleetctl")');
      expect(await term.exitCode()).toBe(0);
      expect(term.text()).not.toContain('warning');

      const found = await execa('secret-tool', ['search', '--all', 'service', 'fleetctl'], {
        env: { ...process.env, ...env },
        reject: false,
      });
      expect(`${found.stdout}\n${found.stderr}`).toContain('attribute.username = default');
      const entry = JSON.parse(
        (await execa('secret-tool', ['lookup', 'service', 'fleetctl', 'username', 'default'], { env: { ...process.env, ...env } })).stdout,
      );
      const status = await cli.run(['auth', 'status', '--json'], { env });
      expect(JSON.parse(status.stdout)).toMatchObject({ username: 'mfa-user', logged_in: true, credential_store: 'keychain' });
      expect((await cli.run(['auth', 'token'], { env })).stdout).toBe(`${entry.token}\n`);
      expect(existsSync(join(cli.configDir, 'credentials.json'))).toBe(false);
    } finally {
      term?.kill();
      session.stdin.end();
      await session;
      await server?.stop();
    }
  });
});

describe('no usable keychain: the 0600 file', () => {
  it('without a D-Bus session: warning once (naming the file), file 0600 in a 0700 directory created by fleetctl', async () => {
    const cli = newCli();
    const dir = join(tempDir(), 'nested', 'fleetctl');
    const env = { FLEETCTL_CONFIG_DIR: dir, DBUS_SESSION_BUS_ADDRESS: undefined, XDG_RUNTIME_DIR: undefined };
    const args = ['login', '--url', ts.url, '--env', 'prod', '--username', 'admin', '--password-stdin'];
    const first = await cli.run(args, { input: DEV_PASSWORD, env });
    expect(first.exitCode).toBe(0);
    const file = join(dir, 'credentials.json');
    expect(first.stderr).toContain(
      `warning: the OS keychain cannot be used here (no D-Bus session: DBUS_SESSION_BUS_ADDRESS is not set); tokens are stored in the file ${file} instead (readable only by you, mode 0600). This warning is shown once`,
    );
    expect(first.stderr).toContain(`Token stored in file ${file}`);
    expect(mode(file)).toBe('600');
    expect(mode(dir)).toBe('700');
    expect(mode(join(dir, 'config.json'))).toBe('600');

    // Once per config directory: later logins (any profile) only say where the token went.
    for (const profile of ['default', 'other']) {
      const again = await cli.run([...args, '--profile', profile], { input: DEV_PASSWORD, env });
      expect(again.exitCode).toBe(0);
      expect(again.stderr).not.toContain('warning');
      expect(again.stderr).toContain(`Token stored in file ${file}`);
    }
    expect(Object.keys(JSON.parse(readFileSync(file, 'utf8'))).sort()).toEqual(['default', 'other']);
    expect(mode(file)).toBe('600');
    // Commands read the token from the file without any warning.
    const nodes = await cli.run(['nodes', 'list', '--limit', '1', '--json'], { env });
    expect(nodes.exitCode).toBe(0);
    expect(nodes.stderr).toBe('');
  });

  it("a D-Bus that never answers is given up after the keychain's 3 s (one try), then the file is used", async () => {
    const sock = join(tempDir(), 'bus.sock');
    let connections = 0;
    const silent: Server = createServer((s) => {
      connections++;
      s.on('data', () => {});
    });
    await new Promise<void>((r) => silent.listen(sock, r));
    try {
      const cli = newCli();
      const r = await cli.run(['login', '--url', ts.url, '--env', 'prod', '--username', 'admin', '--password-stdin'], {
        input: DEV_PASSWORD,
        env: { DBUS_SESSION_BUS_ADDRESS: `unix:path=${sock}` },
      });
      expect(r.exitCode).toBe(0);
      // Given up by the CLI's own 3 s timeout (this message), not libdbus's 25 s (another error).
      expect(r.stderr).toContain('warning: the OS keychain cannot be used here (no answer from the keychain within 3 s)');
      expect(connections).toBe(1);
      expect(mode(join(cli.configDir, 'credentials.json'))).toBe('600');
    } finally {
      await new Promise((r) => silent.close(r));
    }
  });

  it('a token saved in the keychain that cannot be reached now: exit 4 saying so (no silent fallback)', async () => {
    const cli = newCli();
    const profile = {
      url: ts.url,
      env: 'prod',
      username: 'admin',
      credentialStore: 'keychain',
      tokenExpiresAt: new Date(Date.now() + 3600_000).toISOString(),
    };
    writeFileSync(join(cli.configDir, 'config.json'), JSON.stringify({ current: 'default', profiles: { default: profile } }), {
      mode: 0o600,
    });
    const status = await cli.run(['auth', 'status']);
    expect(status.exitCode).toBe(4);
    expect(status.stderr).toBe(
      'error: the token of profile "default" is in the OS keychain, which cannot be used now: D-Bus is disabled: DBUS_SESSION_BUS_ADDRESS=disabled:\n' +
        'hint: run `fleetctl login` again (the token then goes to a 0600 file if the keychain stays unusable), or set FLEETCTL_TOKEN\n',
    );
    const logout = await cli.run(['logout']);
    expect(logout.exitCode).toBe(1);
    expect(logout.stderr).toContain('error: cannot remove the token of profile "default" from the OS keychain: D-Bus is disabled');
  });
});
