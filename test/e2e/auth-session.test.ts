// The token's end of life as a user meets it: a warning when it expires within 10 minutes; on
// 401 token_expired a clear error naming how to log in again, or at a terminal an offer to log
// in again after which the command goes on with the new token.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestServer, type TestServer } from '../helpers/api-server.js';
import { Cli, DEV_PASSWORD } from '../helpers/cli.js';
import { demoMfa } from '../helpers/mfa.js';
import { KEY, Terminal } from '../fixtures/terminal.js';

let ts: TestServer;
let realNow: () => Date;
const clis: Cli[] = [];
const terms: Terminal[] = [];

function newCli(): Cli {
  const c = new Cli();
  clis.push(c);
  return c;
}

/** Moves the server's clock by `ms` (tokens are issued and checked on that clock). */
function shiftServerClock(ms: number): void {
  ts.server.deps.now = () => new Date(Date.now() + ms);
}

const storedToken = (cli: Cli, profile = 'default') =>
  (JSON.parse(readFileSync(join(cli.configDir, 'credentials.json'), 'utf8')) as Record<string, { token: string }>)[profile].token;

async function login(cli: Cli, username = 'analyst', extra: string[] = [], env = 'prod') {
  const r = await cli.run(['login', '--url', ts.url, '--env', env, '--username', username, '--password-stdin', ...extra], {
    input: DEV_PASSWORD,
  });
  expect(r.exitCode).toBe(0);
}

/** Ends every session of `username` on the server, as a password change or removal would. */
async function endSessions(username: string) {
  const u = await ts.server.deps.db.selectFrom('users').select('id').where('username', '=', username).executeTakeFirstOrThrow();
  await ts.server.deps.db.deleteFrom('sessions').where('user_id', '=', u.id).execute();
}

beforeAll(async () => {
  ts = await startTestServer();
  realNow = ts.server.deps.now;
});

afterEach(() => {
  ts.server.deps.now = realNow;
});

afterAll(async () => {
  for (const t of terms) t.kill();
  for (const c of clis) c.cleanup();
  await ts?.close();
});

describe('token expiry warning', () => {
  it('warns on stderr when the token expires within 10 minutes; the command still runs', async () => {
    const cli = newCli();
    shiftServerClock(-55 * 60_000); // issued "55 minutes ago" for 1 hour: 5 minutes left
    await login(cli, 'analyst', ['--exp-hours', '1']);
    ts.server.deps.now = realNow;
    const r = await cli.run(['nodes', 'list', '--limit', '1', '--json']);
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(r.stdout)).toHaveLength(1);
    expect(r.stderr).toMatch(
      /^warning: the token of profile "default" expires in [45] minutes \(\d{4}-\d\d-\d\dT[\d:.]+Z\): run `fleetctl login` to get a new one\n$/,
    );
  });

  it('says nothing while more than 10 minutes are left', async () => {
    const cli = newCli();
    await login(cli, 'analyst', ['--exp-hours', '1']);
    const r = await cli.run(['nodes', 'list', '--limit', '1', '--json']);
    expect(r.exitCode).toBe(0);
    expect(r.stderr).toBe('');
  });
});

describe('401 token_expired without a terminal', () => {
  it('an expired token: exit 4, says so and how to log in again', async () => {
    const cli = newCli();
    await login(cli);
    shiftServerClock(4 * 3600_000);
    const r = await cli.run(['nodes', 'list', '--json']);
    expect(r.exitCode).toBe(4);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      'error: your session for profile "default" has ended: token expired: log in again (token_expired, HTTP 401)\nhint: run `fleetctl login` to sign in again\n',
    );
    const named = await cli.run(['nodes', 'list', '--profile', 'default']);
    expect(named.stderr).toContain('hint: run `fleetctl login --profile default` to sign in again');
  });

  it('a session ended on the server (password changed): the same, and no prompt is attempted', async () => {
    const cli = newCli();
    await login(cli, 'querier');
    await endSessions('querier');
    const r = await cli.run(['nodes', 'list']);
    expect(r.exitCode).toBe(4);
    expect(r.stderr).toMatch(
      /^error: your session for profile "default" has ended: session ended \(.*\): log in again \(token_expired, HTTP 401\)\nhint: run `fleetctl login` to sign in again\n$/,
    );
  });

  it('an expired FLEETCTL_TOKEN: exit 4, pointing at the variable', async () => {
    const token = await ts.login('analyst');
    shiftServerClock(4 * 3600_000);
    const r = await newCli().run(['nodes', 'list'], { env: { FLEETCTL_TOKEN: token, FLEETCTL_URL: ts.url, FLEETCTL_ENV: 'prod' } });
    expect(r.exitCode).toBe(4);
    expect(r.stderr).toBe(
      'error: the token in FLEETCTL_TOKEN is no longer accepted: token expired: log in again (token_expired, HTTP 401)\n' +
        'hint: set FLEETCTL_TOKEN to a fresh token (`fleetctl login`, then `fleetctl auth token`)\n',
    );
  });
});

describe('401 token_expired at a terminal', () => {
  function terminal(cli: Cli, args: string[]): Terminal {
    const t = new Terminal(args, { configDir: cli.configDir });
    terms.push(t);
    return t;
  }

  it('offers to log in again, then runs the command with the new token', async () => {
    const cli = newCli();
    await login(cli, 'carver');
    const before = storedToken(cli);
    await endSessions('carver');
    const t = terminal(cli, ['nodes', 'list', '--limit', '1', '--json', '--fields', 'uuid']);
    await t.waitFor(/Your session for profile "default" \(carver at http:\/\/127\.0\.0\.1:\d+\) has ended: session ended/);
    await t.waitFor('Log in again now?');
    t.type(KEY.enter); // default: yes
    await t.waitFor('Password for carver:');
    t.line(DEV_PASSWORD);
    await t.waitFor('Logged in again as carver; retrying.');
    await t.waitFor(/"uuid": "[0-9a-f-]{36}"/);
    expect(await t.exitCode()).toBe(0);
    expect(t.text()).not.toContain(DEV_PASSWORD);
    const after = storedToken(cli);
    expect(after).not.toBe(before);
    // The new token is a live session on the server, for the same user.
    const r = await cli.run(['api', 'api/v1/users/me']);
    expect(JSON.parse(r.stdout).username).toBe('carver');
  });

  it('declined: exit 4 with how to log in again', async () => {
    const cli = newCli();
    await login(cli, 'dev-user', [], 'dev');
    await endSessions('dev-user');
    const t = terminal(cli, ['nodes', 'list']);
    await t.waitFor('Log in again now?');
    t.line('n');
    await t.waitFor('error: your session for profile "default" has ended');
    await t.waitFor('hint: run `fleetctl login` to sign in again');
    expect(await t.exitCode()).toBe(4);
  });

  it('an account with a second factor logs in again with it (here a recovery code)', async () => {
    const mfa = demoMfa(ts);
    const cli = newCli();
    await login(cli, mfa.username, ['--recovery-code', mfa.recoveryCodes[0]]);
    await endSessions(mfa.username);
    const t = terminal(cli, ['nodes', 'list', '--limit', '1', '--json', '--fields', 'uuid']);
    await t.waitFor('Log in again now?');
    t.type(KEY.enter);
    await t.waitFor(`Password for ${mfa.username}:`);
    t.line(DEV_PASSWORD);
    await t.waitFor('Second factor:');
    await t.waitFor('Recovery code');
    t.type(KEY.down);
    await t.waitFor(/❯ Recovery code/); // the choice moved: then Enter picks it
    t.type(KEY.enter);
    await t.waitFor('Recovery code:');
    t.line(mfa.recoveryCodes[1]);
    await t.waitFor('Logged in again as mfa-user; retrying.');
    await t.waitFor(/"uuid": "[0-9a-f-]{36}"/);
    expect(await t.exitCode()).toBe(0);
  });

  it('Ctrl-C at the offer: exit 130, nothing changed', async () => {
    const cli = newCli();
    await login(cli, 'prod-admin');
    const before = readFileSync(join(cli.configDir, 'credentials.json'), 'utf8');
    await endSessions('prod-admin');
    const t = terminal(cli, ['nodes', 'list']);
    await t.waitFor('Log in again now?');
    t.type(KEY.ctrlC);
    expect(await t.exitCode()).toBe(130);
    expect(t.text()).not.toMatch(/Error:|\bat .+\.js:\d+/);
    expect(readFileSync(join(cli.configDir, 'credentials.json'), 'utf8')).toBe(before);
  });
});

describe('token_expired seen by commands that inspect API errors', () => {
  it('`api` still prints the error body on stdout, with the session message on stderr', async () => {
    const cli = newCli();
    await login(cli, 'analyst');
    shiftServerClock(4 * 3600_000);
    const r = await cli.run(['api', 'api/v1/users/me']);
    expect(r.exitCode).toBe(4);
    expect(JSON.parse(r.stdout)).toEqual({ code: 'token_expired', error: 'token expired: log in again' });
    expect(r.stderr).toContain('error: your session for profile "default" has ended');
  });
});
