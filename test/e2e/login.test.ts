// `fleetctl login` in scripts (no terminal) against the real `fleetctl server --dev` process:
// second factor from flags or stdin, exit 4 naming those flags when none is given, --debug
// output free of secrets, and nothing saved by a failed login.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { BIN, baseEnv, Cli, DEV_PASSWORD, startServerProcess, type ServerProcess } from '../helpers/cli.js';
import { parseMfaBanner, type DemoMfa } from '../helpers/mfa.js';
import { totpCode } from '../../src/lib/totp.js';

let server: ServerProcess;
let mfa: DemoMfa;
const clis: Cli[] = [];

function newCli(): Cli {
  const c = new Cli();
  clis.push(c);
  return c;
}

function storedCredential(cli: Cli, profile = 'default'): { token: string; csrfToken: string } {
  return JSON.parse(readFileSync(join(cli.configDir, 'credentials.json'), 'utf8'))[profile];
}

function profiles(cli: Cli): Record<string, unknown> {
  const f = join(cli.configDir, 'config.json');
  return existsSync(f) ? (JSON.parse(readFileSync(f, 'utf8')).profiles as Record<string, unknown>) : {};
}

const loginArgs = (env = 'prod') => ['login', '--url', server.url, '--env', env, '--username', mfa.username, '--password-stdin'];

beforeAll(async () => {
  server = await startServerProcess();
  mfa = parseMfaBanner(server.output());
});

afterAll(async () => {
  for (const c of clis) c.cleanup();
  await server?.stop();
});

describe('login with a second factor, no terminal', () => {
  it('--password-stdin + --totp-code from a shell script logs in; --debug shows no password, token, csrf token, challenge or code', async () => {
    const cli = newCli();
    const code = totpCode(mfa.secret);
    // A script as CI would write it: the secret in a variable, the code computed, stdin piped.
    const script =
      'printf %s "$FLEET_PASSWORD" | node "$FLEETCTL_BIN" --debug login --url "$URL" --env prod --username mfa-user --password-stdin --totp-code "$CODE"';
    const r = await execa('sh', ['-c', script], {
      env: { ...baseEnv(cli.configDir), FLEET_PASSWORD: DEV_PASSWORD, FLEETCTL_BIN: BIN, URL: server.url, CODE: code },
      extendEnv: false,
      reject: false,
      stdin: 'ignore',
    });
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/Logged in to .* as mfa-user \(environment prod, profile default\)/);
    // The debug log shows both steps...
    expect(r.stderr).toContain('[debug] > POST ' + server.url + '/api/v1/login/prod');
    expect(r.stderr).toContain('[debug] > POST ' + server.url + '/api/v1/login/mfa');
    expect(r.stderr).toMatch(/"code":"mfa_required"/);
    // ...and none of the secrets.
    const cred = storedCredential(cli);
    expect(cred.token).toMatch(/^eyJ/);
    expect(cred.csrfToken).toMatch(/^[0-9a-f]{32}$/);
    for (const secret of [DEV_PASSWORD, code, cred.token, cred.csrfToken, cred.token.split('.')[2], mfa.secret]) {
      expect(r.stderr).not.toContain(secret);
    }
    expect(r.stderr).not.toMatch(/"challenge":"(?!\[redacted\])/);
    expect(profiles(cli)).toMatchObject({ default: { username: 'mfa-user', env: 'prod', credentialStore: 'file' } });
    // The saved token works for the next command.
    const who = await cli.run(['nodes', 'list', '--limit', '1', '--json']);
    expect(who.exitCode).toBe(0);
  });

  it('without a code and without a terminal: exit 4 naming the flags, nothing saved', async () => {
    const cli = newCli();
    const r = await cli.run(loginArgs(), { input: DEV_PASSWORD });
    expect(r.exitCode).toBe(4);
    expect(r.stderr).toBe(
      'error: this account needs a second factor: pass --totp-code CODE or --recovery-code CODE (or --mfa-code-stdin), or log in at a terminal\n',
    );
    expect(existsSync(join(cli.configDir, 'credentials.json'))).toBe(false);
    expect(profiles(cli)).toEqual({});
  });

  it('a wrong --totp-code: exit 4, a clear message without the code, nothing saved', async () => {
    const cli = newCli();
    const now = Date.now();
    const near = new Set([-1, 0, 1].map((s) => totpCode(mfa.secret, now + s * 30_000)));
    const wrong = ['123456', '654321', '111111'].find((c) => !near.has(c))!;
    const r = await cli.run([...loginArgs(), '--totp-code', wrong], { input: DEV_PASSWORD });
    expect(r.exitCode).toBe(4);
    expect(r.stderr).toContain(
      'error: the TOTP code was not accepted (mfa_invalid); nothing was saved\nhint: a TOTP code changes every 30 s',
    );
    expect(r.stderr).not.toContain(wrong);
    expect(r.stderr).not.toContain(DEV_PASSWORD);
    expect(profiles(cli)).toEqual({});
  });

  it('--recovery-code logs in once; the same code is refused the second time', async () => {
    const code = mfa.recoveryCodes[1];
    const cli = newCli();
    const r = await cli.run([...loginArgs('staging'), '--recovery-code', code], { input: DEV_PASSWORD });
    expect(r.exitCode).toBe(0);
    expect(profiles(cli)).toMatchObject({ default: { username: 'mfa-user', env: 'staging' } });
    const again = await newCli().run([...loginArgs(), '--recovery-code', code], { input: DEV_PASSWORD });
    expect(again.exitCode).toBe(4);
    expect(again.stderr).toContain('the recovery code was not accepted (mfa_invalid)');
  });

  it('--mfa-code-stdin reads the password and the code as two lines; the method follows the code', async () => {
    const cli = newCli();
    const r = await cli.run([...loginArgs(), '--mfa-code-stdin', '--profile', 'rc'], {
      input: `${DEV_PASSWORD}\n${mfa.recoveryCodes[2]}\n`,
    });
    expect(r.stderr).toMatch(/Logged in .* profile rc\)/);
    expect(r.exitCode).toBe(0);
    expect(storedCredential(cli, 'rc').token).toMatch(/^eyJ/);
    const missing = await newCli().run([...loginArgs(), '--mfa-code-stdin'], { input: `${DEV_PASSWORD}\n` });
    expect(missing.exitCode).toBe(2);
    expect(missing.stderr).toContain('error: the second-factor code is missing on stdin');
  });

  it('rejects contradictory or unsafe second-factor flags (exit 2)', async () => {
    const cli = newCli();
    const both = await cli.run([...loginArgs(), '--totp-code', '123456', '--recovery-code', 'abcd'], { input: DEV_PASSWORD });
    expect(both.exitCode).toBe(2);
    expect(both.stderr).toContain('pass only one of --totp-code, --recovery-code and --mfa-code-stdin');
    const noPw = await cli.run(['login', '--url', server.url, '--env', 'prod', '--username', 'mfa-user', '--mfa-code-stdin'], {
      input: '123456',
    });
    expect(noPw.exitCode).toBe(2);
    expect(noPw.stderr).toContain('--mfa-code-stdin reads the code after the password: use it with --password-stdin');
    const bad = await cli.run([...loginArgs(), '--totp-code', '12ab56'], { input: DEV_PASSWORD });
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toContain('--totp-code must be the digits');
  });
});

describe('login without a second factor', () => {
  it('a password never appears in --debug output or in the error of a failed login', async () => {
    const cli = newCli();
    const pw = 'Wr0ng-Secret-Pa55';
    const r = await cli.run(['--debug', 'login', '--url', server.url, '--env', 'prod', '--username', 'admin', '--password-stdin'], {
      input: pw,
    });
    expect(r.exitCode).toBe(4);
    expect(r.stderr).toContain('"password":"[redacted]"');
    expect(r.stderr).not.toContain(pw);
    expect(profiles(cli)).toEqual({});
    // the hint is about the credentials, not "run fleetctl login" (that is what the user ran)
    expect(r.stderr).toMatch(/^hint: check the username and password for http:\/\/127\.0\.0\.1:\d+; nothing was saved$/m);
    expect(r.stderr).not.toMatch(/run `fleetctl login`/);
  });

  it('prompts are never attempted without a terminal: a missing value names its flag (exit 2)', async () => {
    const cli = newCli();
    const r = await cli.run(['login', '--url', server.url, '--env', 'prod', '--username', 'admin']);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toBe('error: a password is required: pass --password-stdin and pipe it in\n');
    const noUser = await cli.run(['login', '--url', server.url, '--env', 'prod', '--password-stdin'], { input: DEV_PASSWORD });
    expect(noUser.exitCode).toBe(2);
    expect(noUser.stderr).toBe('error: Username is required: pass --username\n');
  });
});
