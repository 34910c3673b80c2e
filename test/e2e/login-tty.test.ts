// `fleetctl login` in a real terminal (a pty) against the real `fleetctl server --dev` process,
// for the demo `mfa-user`: username and password typed at prompts, the second-factor method
// chosen with the arrow keys, a TOTP code computed from the secret the server printed (a wrong
// one first), a recovery code, and Ctrl-C.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Cli, DEV_PASSWORD, startServerProcess, type ServerProcess } from '../helpers/cli.js';
import { demoMfa, parseMfaBanner, type DemoMfa } from '../helpers/mfa.js';
import { startTestServer } from '../helpers/api-server.js';
import { totpCode } from '../../src/lib/totp.js';
import { KEY, Terminal } from '../fixtures/terminal.js';

let server: ServerProcess;
let mfa: DemoMfa;
const clis: Cli[] = [];
const terms: Terminal[] = [];

function newCli(): Cli {
  const c = new Cli();
  clis.push(c);
  return c;
}

function terminal(cli: Cli, args: string[]): Terminal {
  const t = new Terminal(args, { configDir: cli.configDir });
  terms.push(t);
  return t;
}

/** Six digits that are not the code of the previous, current or next TOTP step. */
function wrongCode(secret: string): string {
  const now = Date.now();
  const near = new Set([-1, 0, 1].map((s) => totpCode(secret, now + s * 30_000)));
  for (const c of ['000000', '111111', '222222', '333333']) if (!near.has(c)) return c;
  throw new Error('unreachable');
}

async function status(cli: Cli): Promise<Record<string, unknown>> {
  const r = await cli.run(['auth', 'status', '--json']);
  expect(r.exitCode).toBe(0);
  return JSON.parse(r.stdout) as Record<string, unknown>;
}

beforeAll(async () => {
  server = await startServerProcess();
  mfa = parseMfaBanner(server.output());
});

afterAll(async () => {
  for (const t of terms) t.kill();
  for (const c of clis) c.cleanup();
  await server?.stop();
});

describe('login at a terminal, account with TOTP', () => {
  it('asks username and password, offers TOTP or a recovery code, retries a wrong TOTP code, then logs in', async () => {
    const cli = newCli();
    const t = terminal(cli, ['login', '--url', server.url, '--env', 'prod']);
    await t.waitFor('Username:');
    t.line(mfa.username);
    await t.waitFor('Password:');
    t.line(DEV_PASSWORD);
    await t.waitFor('This account has a second factor.');
    await t.waitFor('Second factor:');
    const menu = await t.waitFor(/TOTP code from an authenticator app[\s\S]*Recovery code/);
    expect(menu).toBeTruthy();
    t.type(KEY.enter); // the first choice: TOTP
    await t.waitFor('TOTP code:');
    t.line(wrongCode(mfa.secret));
    await t.waitFor('That TOTP code was not accepted. 2 tries left.');
    await t.waitFor('TOTP code:');
    t.line(totpCode(mfa.secret));
    await t.waitFor(/Logged in to http:\/\/127\.0\.0\.1:\d+ as mfa-user \(environment prod, profile default\)/);
    expect(await t.exitCode()).toBe(0);
    // The password was masked on the screen, never echoed.
    expect(t.text()).not.toContain(DEV_PASSWORD);
    expect(await status(cli)).toMatchObject({ profile: 'default', url: server.url, env: 'prod', username: 'mfa-user', logged_in: true });
    // The token works for a command.
    const nodes = await cli.run(['nodes', 'list', '--limit', '1', '--json']);
    expect(nodes.exitCode).toBe(0);
    expect(JSON.parse(nodes.stdout)).toHaveLength(1);
  });

  it('logs in with a recovery code chosen from the menu, and that code is then used up', async () => {
    const cli = newCli();
    const code = mfa.recoveryCodes[0];
    const t = terminal(cli, ['login', '--url', server.url, '--env', 'staging', '--username', mfa.username]);
    await t.waitFor('Password:');
    t.line(DEV_PASSWORD);
    await t.waitFor('Second factor:');
    await t.waitFor('Recovery code');
    t.type(KEY.down);
    await t.waitFor(/❯ Recovery code/); // the choice moved: then Enter picks it
    t.type(KEY.enter);
    await t.waitFor('Recovery code:');
    t.line(code);
    await t.waitFor(/Logged in to .* as mfa-user \(environment staging/);
    expect(await t.exitCode()).toBe(0);
    expect(t.text()).not.toContain(code); // masked like a password
    expect(await status(cli)).toMatchObject({ env: 'staging', username: 'mfa-user', logged_in: true });

    // Single use: the same code is refused afterwards (non-interactive, exit 4, nothing saved).
    const again = newCli();
    const r = await again.run(
      ['login', '--url', server.url, '--env', 'prod', '--username', mfa.username, '--password-stdin', '--recovery-code', code],
      { input: DEV_PASSWORD },
    );
    expect(r.exitCode).toBe(4);
    expect(r.stderr).toContain('error: the recovery code was not accepted (mfa_invalid); nothing was saved');
    expect(r.stderr).not.toContain(code);
    expect(existsSync(join(again.configDir, 'credentials.json'))).toBe(false);
  });

  it('gives up after 3 wrong codes with exit 4 and saves nothing', async () => {
    const cli = newCli();
    const t = terminal(cli, ['login', '--url', server.url, '--env', 'prod', '--username', mfa.username]);
    await t.waitFor('Password:');
    t.line(DEV_PASSWORD);
    await t.waitFor('Second factor:');
    await t.waitFor('Recovery code');
    t.type(KEY.enter);
    const wrong = wrongCode(mfa.secret);
    for (const left of ['2 tries left', '1 try left']) {
      await t.waitFor('TOTP code:');
      t.line(wrong);
      await t.waitFor(`That TOTP code was not accepted. ${left}.`);
    }
    await t.waitFor('TOTP code:');
    t.line(wrong);
    await t.waitFor('error: the TOTP code was not accepted 3 times; nothing was saved');
    expect(await t.exitCode()).toBe(4);
    expect(existsSync(join(cli.configDir, 'credentials.json'))).toBe(false);
    // nothing saved: no config file at all, or one without profiles
    const cfg = join(cli.configDir, 'config.json');
    expect(existsSync(cfg) ? JSON.parse(readFileSync(cfg, 'utf8')).profiles : {}).toEqual({});
  });
});

describe('Ctrl-C at a prompt', () => {
  for (const at of ['Password:', 'Second factor:', 'TOTP code:']) {
    it(`at "${at}" exits 130 quietly and saves nothing`, async () => {
      const cli = newCli();
      const t = terminal(cli, ['login', '--url', server.url, '--env', 'prod', '--username', mfa.username]);
      await t.waitFor('Password:');
      if (at !== 'Password:') {
        t.line(DEV_PASSWORD);
        await t.waitFor('Second factor:');
        await t.waitFor('Recovery code');
        if (at === 'TOTP code:') {
          t.type(KEY.enter);
          await t.waitFor('TOTP code:');
          t.type('12'); // half-typed
          await t.waitFor('12'); // shown: the prompt has it
        }
      }
      t.type(KEY.ctrlC);
      expect(await t.exitCode()).toBe(130);
      const screen = t.text();
      expect(screen).not.toMatch(/\bat .+\.js:\d+|Error:|ExitPromptError|^error:/m);
      expect(existsSync(join(cli.configDir, 'credentials.json'))).toBe(false);
      const cfg = join(cli.configDir, 'config.json');
      if (existsSync(cfg)) expect(JSON.parse(readFileSync(cfg, 'utf8')).profiles).toEqual({});
    });
  }
});

describe('an expired challenge', () => {
  it('sends the user back to the password, then the second factor again', async () => {
    // In-process server: its clock can jump past the 5-minute challenge lifetime.
    const ts = await startTestServer();
    try {
      const m = demoMfa(ts);
      const cli = newCli();
      const t = terminal(cli, ['login', '--url', ts.url, '--env', 'prod', '--username', m.username]);
      await t.waitFor('Password:');
      t.line(DEV_PASSWORD);
      await t.waitFor('Recovery code');
      const later = 6 * 60_000;
      ts.server.deps.now = () => new Date(Date.now() + later);
      t.type(KEY.enter);
      await t.waitFor('TOTP code:');
      t.line(totpCode(m.secret, Date.now() + later));
      await t.waitFor('The login challenge has expired (it lasts 5 minutes): enter your password again.');
      await t.waitFor('Password:');
      t.line(DEV_PASSWORD);
      await t.waitFor('Recovery code');
      t.type(KEY.down);
      await t.waitFor(/❯ Recovery code/); // the choice moved: then Enter picks it
      t.type(KEY.enter);
      await t.waitFor('Recovery code:');
      t.line(m.recoveryCodes[3]);
      await t.waitFor('Logged in to');
      expect(await t.exitCode()).toBe(0);
      expect(await status(cli)).toMatchObject({ username: 'mfa-user', logged_in: true });
    } finally {
      await ts.close();
    }
  });
});
