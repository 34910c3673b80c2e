// Hostile data at a real terminal (issue 9): a failed-login username (unauthenticated input) that
// clears the screen (ESC[2J), sets the title (OSC 0), writes the clipboard (OSC 52), plants a
// hyperlink (OSC 8) and reverses text (U+202E) is shown escaped by `audit list` in table and csv
// form, and server error text that echoes it is escaped too. Bytes are read from a pseudo-terminal.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/api-server.js';
import { Cli, DEV_PASSWORD } from '../helpers/cli.js';
import { Terminal } from '../fixtures/terminal.js';

const EVIL =
  'evil\u001b[2J\u001b]0;pwned\u0007\u001b]52;c;ZXZpbA==\u0007\u001b]8;;http://evil.example/\u0007click\u001b]8;;\u0007invoice\u202efdp.exe';
/** What must never reach the terminal from the data. */
const RAW_SEQUENCES = ['\u001b[2J', '\u001b]0;', '\u001b]52;', '\u001b]8;', '\u202e', '\u0007'];

let ts: TestServer;
let cli: Cli;
const terms: Terminal[] = [];

async function runAtTerminal(args: string[]): Promise<{ raw: string; exitCode: number }> {
  const t = new Terminal(args, { configDir: cli.configDir });
  terms.push(t);
  const exitCode = await t.exitCode();
  return { raw: t.rawText(), exitCode };
}

beforeAll(async () => {
  ts = await startTestServer();
  cli = new Cli();
  const r = await cli.run(['login', '--url', ts.url, '--env', 'prod', '--username', 'admin', '--password-stdin'], { input: DEV_PASSWORD });
  expect(r.exitCode).toBe(0);
  // The attacker: no account, just a login attempt with a crafted username.
  const res = await fetch(`${ts.url}/api/v1/login/prod`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: EVIL, password: 'whatever-1' }),
  });
  expect(res.status).toBe(401);
});

afterAll(async () => {
  for (const t of terms) t.kill();
  cli?.cleanup();
  await ts?.close();
});

describe('hostile text at a terminal', () => {
  for (const form of [[], ['-o', 'csv'], ['-o', 'json'], ['-o', 'yaml'], ['--jq', '.[].username']]) {
    it(`audit list ${form.join(' ') || '(table)'}: the username is shown escaped, no control sequence reaches the terminal`, async () => {
      const { raw, exitCode } = await runAtTerminal(['audit', 'list', '--limit', '5', '--user', EVIL, ...form]);
      expect(exitCode).toBe(0);
      for (const seq of RAW_SEQUENCES) expect(raw, JSON.stringify(seq)).not.toContain(seq);
      expect(raw).toMatch(/evil\\(x1b|u001b|e)\[2J/);
      if (form.length === 0) return; // the table cuts long cells to the width; the rest is checked above
      expect(raw).toMatch(/\\(x1b|u001b|e)\]52;c;ZXZpbA==/);
      expect(raw).toMatch(/invoice\\u202efdp\.exe/);
    });
  }

  it('a server error message that echoes the text is escaped', async () => {
    const { raw, exitCode } = await runAtTerminal(['nodes', 'show', EVIL]);
    expect(exitCode).toBe(3);
    for (const seq of RAW_SEQUENCES) expect(raw, JSON.stringify(seq)).not.toContain(seq);
    expect(raw).toMatch(/error: node "evil\\x1b\[2J\\x1b\]0;pwned\\x07/);
    expect(raw).toMatch(/invoice\\u202efdp\.exe/);
  });
});
