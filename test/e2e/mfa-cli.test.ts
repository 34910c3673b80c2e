// `fleetctl mfa ...` end to end against a real `fleetctl server --dev` process. Each test that
// enrols TOTP uses its own fresh user, so the tests do not depend on one another's state.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { BIN, Cli, DEV_PASSWORD, type ServerProcess } from '../helpers/cli.js';
import { apiCall, apiLogin, runInPty, startAdminSession } from '../helpers/admin-cli.js';
import { totpCode, TOTP_STEP_SECONDS } from '../../src/lib/totp.js';
import type { User, WebauthnCredential } from '../../src/api/index.js';

let server: ServerProcess;
let url: string;
let admin: Cli;
let adminToken: string;
let seq = 0;

/** A fresh user with prod access, and a CLI logged in as that user. */
async function freshUser(): Promise<{ name: string; cli: Cli }> {
  const name = `mfa-${++seq}-${Date.now() % 100000}`;
  const r = await admin.run(['users', 'add', name, '--environment', 'prod', '--password-stdin'], { input: DEV_PASSWORD });
  if (r.exitCode !== 0) throw new Error(`users add failed: ${r.stderr}`);
  const cli = new Cli();
  await cli.login(url, name);
  return { name, cli };
}

async function storedMfa(username: string): Promise<User['mfa']> {
  const r = await apiCall(url, 'GET', '/api/v1/users', { token: adminToken });
  return (r.body as User[]).find((u) => u.username === username)!.mfa;
}

/** A code for a TOTP step the server has not seen yet (codes are single use per step). */
function codeAt(secret: string, steps: number): string {
  return totpCode(secret, Date.now() + steps * TOTP_STEP_SECONDS * 1000);
}

/** Enrols TOTP the scripted way: setup prints the secret, confirm --code finishes. */
async function enrol(cli: Cli): Promise<{ secret: string; codes: string[] }> {
  const setup = await cli.run(['mfa', 'totp', 'setup', '-o', 'json']);
  expect(setup.exitCode).toBe(0);
  const { secret } = JSON.parse(setup.stdout) as { secret: string };
  const confirm = await cli.run(['mfa', 'totp', 'confirm', '--code', totpCode(secret), '-o', 'json']);
  expect(confirm.exitCode).toBe(0);
  return { secret, codes: JSON.parse(confirm.stdout).recovery_codes };
}

beforeAll(async () => {
  ({ server, url, cli: admin, token: adminToken } = await startAdminSession());
});

afterAll(async () => {
  admin?.cleanup();
  await server?.stop();
});

describe('mfa totp setup (scripted: setup, then confirm --code)', () => {
  it('without a terminal starts enrolment and prints the secret and otpauth URI on stdout', async () => {
    const { name, cli } = await freshUser();
    const r = await cli.run(['mfa', 'totp', 'setup', '-o', 'json']);
    expect(r.exitCode).toBe(0);
    const begun = JSON.parse(r.stdout);
    expect(begun.secret).toMatch(/^[A-Z2-7]{16,}$/);
    expect(begun.otpauth_uri).toMatch(new RegExp(`^otpauth://totp/.*secret=${begun.secret}`));
    expect(r.stderr).toMatch(/TOTP is not on yet: .*fleetctl mfa totp confirm --code CODE/);
    // not on until confirmed: a password login still gets a token
    expect(await storedMfa(name)).toMatchObject({ totp: false });
    expect((await apiLogin(url, name)).status).toBe(200);
    cli.cleanup();
  });

  it('confirm with a code computed from the secret prints 10 recovery codes; login then asks for MFA', async () => {
    const { name, cli } = await freshUser();
    const setup = await cli.run(['mfa', 'totp', 'setup', '--json']);
    const { secret } = JSON.parse(setup.stdout);
    const r = await cli.run(['mfa', 'totp', 'confirm', '--code', totpCode(secret)]);
    expect(r.exitCode).toBe(0);
    const codes = r.stdout.trimEnd().split('\n');
    expect(codes).toHaveLength(10);
    expect(new Set(codes).size).toBe(10);
    expect(r.stdout).toBe(`${codes.join('\n')}\n`);
    expect(r.stderr).toMatch(/Store these 10 recovery codes somewhere safe/);
    expect(r.stderr).toMatch(/will NOT be shown again/);
    expect(await storedMfa(name)).toMatchObject({ totp: true });

    const login = await apiLogin(url, name);
    expect(login.status).toBe(401);
    expect(login.body).toMatchObject({ code: 'mfa_required', methods: expect.arrayContaining(['totp', 'recovery']) });
    const viaCli = new Cli();
    const l = await viaCli.run(['login', '--url', url, '--env', 'prod', '--username', name, '--password-stdin'], { input: DEV_PASSWORD });
    expect(l.exitCode).toBe(4);
    expect(l.stderr).toMatch(/second factor/);
    // a recovery code printed by confirm completes the login
    const mfa = await apiCall(url, 'POST', '/api/v1/login/mfa', {
      body: { challenge: login.body.challenge, code: codes[0], method: 'recovery' },
    });
    expect(mfa.status).toBe(200);
    viaCli.cleanup();
    cli.cleanup();
  });

  it('--code-stdin reads the code after showing the secret (an expect-style script)', async () => {
    const { name, cli } = await freshUser();
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('FLEETCTL_')) env[k] = v;
    const proc = execa('node', [BIN, 'mfa', 'totp', 'setup', '--code-stdin'], {
      env: { ...env, FLEETCTL_CONFIG_DIR: cli.configDir, DBUS_SESSION_BUS_ADDRESS: 'disabled:' },
      extendEnv: false,
      reject: false,
      stripFinalNewline: false,
    });
    let err = '';
    const secret = await new Promise<string>((resolve, reject) => {
      proc.stderr.on('data', (d: Buffer) => {
        err += d.toString();
        const m = /Secret: ([A-Z2-7]+)/.exec(err);
        if (m) resolve(m[1]);
      });
      void proc.then(() => reject(new Error(`ended before the secret: ${err}`)));
    });
    expect(err).toMatch(/URI: +otpauth:\/\/totp\//);
    proc.stdin.end(`${totpCode(secret)}\n`);
    const r = await proc;
    expect(r.exitCode).toBe(0);
    expect(String(r.stdout).trimEnd().split('\n')).toHaveLength(10);
    expect(await storedMfa(name)).toMatchObject({ totp: true });
    cli.cleanup();
  });

  it('setup when TOTP is on exits 6 with a hint; confirm with nothing started exits 1 with a hint', async () => {
    const { name, cli } = await freshUser();
    const early = await cli.run(['mfa', 'totp', 'confirm', '--code', '123456']);
    expect(early.exitCode).toBe(1);
    expect(early.stderr).toMatch(/\(bad_request, HTTP 400\)\nhint: start with `fleetctl mfa totp setup`/);
    await enrol(cli);
    const again = await cli.run(['mfa', 'totp', 'setup']);
    expect(again.exitCode).toBe(6);
    expect(again.stdout).toBe('');
    expect(again.stderr).toMatch(/\(conflict, HTTP 409\)\nhint: TOTP is already on: `fleetctl mfa totp disable` first/);
    expect(await storedMfa(name)).toMatchObject({ totp: true });
    cli.cleanup();
  });

  it('a wrong code exits 5 and leaves TOTP off; a malformed one exits 2 without a request', async () => {
    const { name, cli } = await freshUser();
    const setup = await cli.run(['mfa', 'totp', 'setup', '--json']);
    const { secret } = JSON.parse(setup.stdout);
    const good = totpCode(secret);
    const wrong = good === '000000' ? '111111' : '000000';
    const r = await cli.run(['mfa', 'totp', 'confirm', '--code', wrong]);
    expect(r.exitCode).toBe(5);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/\(mfa_invalid, HTTP 403\)/);
    const bad = await cli.run(['mfa', 'totp', 'confirm', '--code', '12ab']);
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toMatch(/"12ab" is not a 6-digit code/);
    expect(await storedMfa(name)).toMatchObject({ totp: false });
    const none = await cli.run(['mfa', 'totp', 'confirm']);
    expect(none.exitCode).toBe(2);
    expect(none.stderr).toMatch(/--code CODE or --code-stdin/);
    cli.cleanup();
  });

  it('at a terminal shows a QR code, asks for the code and prints the recovery codes', async () => {
    const { name, cli } = await freshUser();
    const p = runInPty(cli, ['mfa', 'totp', 'setup']);
    const shown = await p.expect(/code from the app:/);
    expect(shown).toMatch(/Scan this QR code/);
    expect(shown).toMatch(/[▀▄█]{10,}/); // the small terminal QR uses half blocks
    const secret = /Secret: ([A-Z2-7]+)/.exec(shown)![1];
    p.line(totpCode(secret));
    const { exitCode, output } = await p.done();
    expect(exitCode).toBe(0);
    expect(output).toMatch(/Store these 10 recovery codes/);
    expect(await storedMfa(name)).toMatchObject({ totp: true });
    cli.cleanup();
  });
});

describe('mfa status and totp disable', () => {
  it('status shows the factors; disable needs the password and turns TOTP off', async () => {
    const { name, cli } = await freshUser();
    await enrol(cli);
    const st = await cli.run(['mfa', 'status', '--json']);
    expect(st.exitCode).toBe(0);
    expect(JSON.parse(st.stdout)).toEqual({ username: name, totp: true, webauthn: 0, recovery_codes: 10 });

    const wrong = await cli.run(['mfa', 'totp', 'disable', '--password-stdin'], { input: 'not-the-password' });
    expect(wrong.exitCode).toBe(5);
    expect(await storedMfa(name)).toMatchObject({ totp: true });

    const none = await cli.run(['mfa', 'totp', 'disable']);
    expect(none.exitCode).toBe(2);
    expect(none.stderr).toMatch(/--password-stdin/);

    const ok = await cli.run(['mfa', 'totp', 'disable', '--password-stdin'], { input: `${DEV_PASSWORD}\n` });
    expect(ok.exitCode).toBe(0);
    expect(ok.stdout).toBe('');
    expect(await storedMfa(name)).toMatchObject({ totp: false });
    expect((await apiLogin(url, name)).status).toBe(200);
    cli.cleanup();
  });

  it('a code used to confirm is not accepted again at login', async () => {
    const { name, cli } = await freshUser();
    const setup = await cli.run(['mfa', 'totp', 'setup', '--json']);
    const { secret } = JSON.parse(setup.stdout);
    const code = totpCode(secret);
    expect((await cli.run(['mfa', 'totp', 'confirm', '--code', code])).exitCode).toBe(0);
    const login = await apiLogin(url, name);
    const replay = await apiCall(url, 'POST', '/api/v1/login/mfa', { body: { challenge: login.body.challenge, code, method: 'totp' } });
    expect(replay.status).toBe(403);
    const next = await apiCall(url, 'POST', '/api/v1/login/mfa', {
      body: { challenge: login.body.challenge, code: codeAt(secret, 1), method: 'totp' },
    });
    expect(next.status).toBe(200);
    cli.cleanup();
  });
});

describe('mfa recovery-codes', () => {
  it('a recovery login says how many codes are left; status counts them; regenerate voids the old ones', async () => {
    const { name, cli } = await freshUser();
    const { codes } = await enrol(cli);

    const viaCli = new Cli();
    const login = await viaCli.run(
      ['login', '--url', url, '--env', 'prod', '--username', name, '--password-stdin', '--recovery-code', codes[0]],
      { input: DEV_PASSWORD },
    );
    expect(login.exitCode).toBe(0);
    expect(login.stderr).toMatch(/^9 recovery codes left\.$/m);
    expect(login.stderr).not.toMatch(/regenerate/);
    expect(JSON.parse((await viaCli.run(['mfa', 'status', '--json'])).stdout)).toMatchObject({ totp: true, recovery_codes: 9 });
    viaCli.cleanup();

    const scripted = await cli.run(['mfa', 'recovery-codes', 'regenerate', '--password-stdin'], { input: DEV_PASSWORD });
    expect(scripted.exitCode).toBe(2);
    expect(scripted.stderr).toMatch(/--yes/);
    const wrong = await cli.run(['mfa', 'recovery-codes', 'regenerate', '--yes', '--password-stdin'], { input: 'not-the-password' });
    expect(wrong.exitCode).toBe(5);
    expect(await storedMfa(name)).toMatchObject({ recovery_codes: 9 });

    const r = await cli.run(['mfa', 'recovery-codes', 'regenerate', '--yes', '--password-stdin'], { input: DEV_PASSWORD });
    expect(r.exitCode).toBe(0);
    const fresh = r.stdout.trimEnd().split('\n');
    expect(fresh).toHaveLength(10);
    expect(fresh.some((c) => codes.includes(c))).toBe(false);
    expect(r.stderr).toMatch(/previous ones no longer work/);
    expect(await storedMfa(name)).toMatchObject({ recovery_codes: 10 });

    const old = await apiLogin(url, name);
    const refused = await apiCall(url, 'POST', '/api/v1/login/mfa', {
      body: { challenge: old.body.challenge, code: codes[1], method: 'recovery' },
    });
    expect(refused.status).toBe(403);
    const ok = await apiCall(url, 'POST', '/api/v1/login/mfa', {
      body: { challenge: old.body.challenge, code: fresh[0], method: 'recovery' },
    });
    expect(ok.status).toBe(200);
    expect(ok.body.recovery_codes_left).toBe(9);
    cli.cleanup();
  });

  it('few codes left: the login hints at regenerate; without TOTP regenerate is 404 (exit 3)', async () => {
    const { name, cli } = await freshUser();
    const none = await cli.run(['mfa', 'recovery-codes', 'regenerate', '--yes', '--password-stdin'], { input: DEV_PASSWORD });
    expect(none.exitCode).toBe(3);
    expect(none.stderr).toMatch(/TOTP is not enabled/);

    const { codes } = await enrol(cli);
    for (const code of codes.slice(0, 7)) {
      const l = await apiLogin(url, name);
      expect(
        (await apiCall(url, 'POST', '/api/v1/login/mfa', { body: { challenge: l.body.challenge, code, method: 'recovery' } })).status,
      ).toBe(200);
    }
    const viaCli = new Cli();
    const login = await viaCli.run(
      ['login', '--url', url, '--env', 'prod', '--username', name, '--password-stdin', '--recovery-code', codes[7]],
      { input: DEV_PASSWORD },
    );
    expect(login.exitCode).toBe(0);
    expect(login.stderr).toMatch(/^2 recovery codes left\.$/m);
    expect(login.stderr).toMatch(/fleetctl mfa recovery-codes regenerate/);
    viaCli.cleanup();
    cli.cleanup();
  });
});

describe('mfa webauthn', () => {
  it("lists the dev admin's two credentials", async () => {
    const r = await admin.run(['mfa', 'webauthn', 'list', '-o', 'json']);
    expect(r.exitCode).toBe(0);
    const creds = JSON.parse(r.stdout) as WebauthnCredential[];
    expect(creds.map((c) => c.name).sort()).toEqual(['MacBook Touch ID', 'YubiKey 5C']);
    const table = await admin.run(['mfa', 'webauthn', 'list']);
    expect(table.stdout.split('\n')[0].split('\t')).toEqual(['ID', 'NAME', 'CREATED', 'LAST USED']);
  });

  it('show prints one credential by id; an unknown id exits 3', async () => {
    const list = JSON.parse((await admin.run(['mfa', 'webauthn', 'list', '--json'])).stdout) as WebauthnCredential[];
    const one = await admin.run(['mfa', 'webauthn', 'show', list[0].id, '--json']);
    expect(one.exitCode).toBe(0);
    expect(JSON.parse(one.stdout)).toEqual(list[0]);
    expect((await admin.run(['mfa', 'webauthn', 'show', 'no-such-cred'])).exitCode).toBe(3);
  });

  it('an empty list is [] for a user without keys', async () => {
    const { cli } = await freshUser();
    const r = await cli.run(['mfa', 'webauthn', 'list', '--json']);
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual([]);
    cli.cleanup();
  });

  it('at a terminal confirms, then asks for the password, and removes exactly that key', async () => {
    const list = JSON.parse((await admin.run(['mfa', 'webauthn', 'list', '--json'])).stdout) as WebauthnCredential[];
    const target = list.find((c) => c.name === 'YubiKey 5C')!;
    const p = runInPty(admin, ['mfa', 'webauthn', 'remove', target.id]);
    await p.expect(/Remove WebAuthn credential/);
    p.line('y');
    await p.expect(/Your password:/);
    p.line(DEV_PASSWORD);
    const { exitCode, output } = await p.done();
    expect(exitCode).toBe(0);
    expect(output).not.toContain(DEV_PASSWORD);
    const after = JSON.parse((await admin.run(['mfa', 'webauthn', 'list', '--json'])).stdout) as WebauthnCredential[];
    expect(after.map((c) => c.name)).toEqual(['MacBook Touch ID']);
  });

  it('scripted: needs --yes and the password; a super-admin cannot remove the last second factor (exit 6)', async () => {
    const [last] = JSON.parse((await admin.run(['mfa', 'webauthn', 'list', '--json'])).stdout) as WebauthnCredential[];

    const noYes = await admin.run(['mfa', 'webauthn', 'remove', last.id, '--password-stdin'], { input: DEV_PASSWORD });
    expect(noYes.exitCode).toBe(2);
    expect(noYes.stderr).toMatch(/pass --yes/);

    const noPw = await admin.run(['mfa', 'webauthn', 'remove', last.id, '--yes']);
    expect(noPw.exitCode).toBe(2);
    expect(noPw.stderr).toMatch(/--password-stdin/);

    const wrongPw = await admin.run(['mfa', 'webauthn', 'remove', last.id, '--yes', '--password-stdin'], { input: 'wrong-password' });
    expect(wrongPw.exitCode).toBe(5);

    const unknown = await admin.run(['mfa', 'webauthn', 'remove', 'no-such-credential', '--yes', '--password-stdin'], {
      input: DEV_PASSWORD,
    });
    expect(unknown.exitCode).toBe(3);

    const lastOne = await admin.run(['mfa', 'webauthn', 'remove', last.id, '--yes', '--password-stdin'], { input: DEV_PASSWORD });
    expect(lastOne.exitCode).toBe(6);
    expect(lastOne.stderr).toMatch(/\(conflict, HTTP 409\)/);
    let after = JSON.parse((await admin.run(['mfa', 'webauthn', 'list', '--json'])).stdout) as WebauthnCredential[];
    expect(after.map((c) => c.id)).toEqual([last.id]);

    // With TOTP as another second factor, the key can go.
    await enrol(admin);
    const ok = await admin.run(['mfa', 'webauthn', 'remove', last.id, '--yes', '--password-stdin', '-o', 'json'], { input: DEV_PASSWORD });
    expect(ok.exitCode).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ id: last.id, removed: true });
    after = JSON.parse((await admin.run(['mfa', 'webauthn', 'list', '--json'])).stdout) as WebauthnCredential[];
    expect(after).toEqual([]);
  });
});

describe('help', () => {
  it.each([['status'], ['totp', 'setup'], ['totp', 'confirm'], ['totp', 'disable'], ['webauthn', 'list'], ['webauthn', 'remove']])(
    'mfa %s --help has examples',
    async (...verb) => {
      const r = await admin.run(['mfa', ...verb, '--help']);
      expect(r.exitCode).toBe(0);
      expect(r.stdout).toMatch(/Examples:\n {2}\$ fleetctl mfa /);
    },
  );
});
