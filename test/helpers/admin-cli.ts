// Helpers for the users/mfa/env/enroll/settings e2e tests: raw API calls to read back what the
// server stored (independent of the CLI under test), and the built CLI run inside a
// pseudo-terminal to drive its prompts the way a person would.
import { spawn, type IPty } from '@lydell/node-pty';
import { onTestFailed } from 'vitest';
import { BIN, Cli, DEV_PASSWORD, startServerProcess, type ServerProcess } from './cli.js';

export interface Reply {
  status: number;
  body: any;
}

export async function apiCall(url: string, method: string, path: string, o: { token?: string; body?: unknown } = {}): Promise<Reply> {
  const headers: Record<string, string> = {};
  if (o.token) headers.authorization = `Bearer ${o.token}`;
  if (o.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(url + path, { method, headers, body: o.body === undefined ? undefined : JSON.stringify(o.body) });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    /* keep the text */
  }
  return { status: res.status, body };
}

/** Password step of a login; the reply as is (200 token, 401 mfa_required, ...). */
export function apiLogin(url: string, username: string, password = DEV_PASSWORD, env = 'prod'): Promise<Reply> {
  return apiCall(url, 'POST', `/api/v1/login/${env}`, { body: { username, password } });
}

export async function apiToken(url: string, username = 'admin', password = DEV_PASSWORD, env = 'prod'): Promise<string> {
  const r = await apiLogin(url, username, password, env);
  if (r.status !== 200) throw new Error(`login ${username} failed: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.token as string;
}

export interface AdminSession {
  server: ServerProcess;
  url: string;
  /** A CLI (own config directory) logged in as admin on prod. */
  cli: Cli;
  /** An admin API token, to read back what the server stored. */
  token: string;
}

/** The setup most e2e files share: `fleetctl server --dev`, a logged-in CLI, an admin token. */
export async function startAdminSession(): Promise<AdminSession> {
  const server = await startServerProcess();
  const cli = new Cli();
  await cli.login(server.url);
  return { server, url: server.url, cli, token: await apiToken(server.url) };
}

export interface PtyRun {
  /**
   * Waits until the output after the previous match (ANSI stripped) matches, like expect(1):
   * prompts redraw themselves as they are typed into, so older text must not match again.
   * Returns all output so far.
   */
  expect(re: RegExp): Promise<string>;
  /** Types a line and Enter. */
  line(text: string): void;
  /** Types raw keys (e.g. Ctrl-C, "\x03"). */
  write(text: string): void;
  /** Waits for the process to end. */
  done(): Promise<{ exitCode: number; output: string }>;
  output(): string;
}

const ANSI = /\u001b\[[0-9;?]*[ -/]*[@-~]|\u001b[()][0-9A-B]|\u001b[=>]/g;

/** Runs `fleetctl args` in a pseudo-terminal (stdin, stdout and stderr are TTYs) with `cli`'s config. */
export function runInPty(cli: Cli, args: string[], env: Record<string, string> = {}, o: { cols?: number } = {}): PtyRun {
  const base: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env))
    if (v !== undefined && !k.startsWith('FLEETCTL_') && k !== 'FORCE_COLOR' && k !== 'NO_COLOR') base[k] = v;
  const p: IPty = spawn('node', [BIN, ...args], {
    cols: o.cols ?? 200,
    rows: 60,
    env: {
      ...base,
      DBUS_SESSION_BUS_ADDRESS: 'disabled:',
      FLEETCTL_CONFIG_DIR: cli.configDir,
      FLEETCTL_PAGER: 'cat',
      NO_COLOR: '1',
      ...env,
    },
  });
  let out = '';
  let cursor = 0;
  let exit: number | undefined;
  const waiters: (() => void)[] = [];
  const notify = () => waiters.splice(0).forEach((w) => w());
  p.onData((d) => {
    out += d;
    notify();
  });
  p.onExit((e) => {
    exit = e.exitCode;
    notify();
  });
  const clean = () => out.replace(ANSI, '').replace(/\r/g, '');
  // Waits for events (output, the exit), never a clock: a hang ends in the test's timeout, which
  // then shows the terminal.
  try {
    onTestFailed(() => console.error(`the terminal showed:\n${clean()}`));
  } catch {
    // started outside a test (a hook)
  }
  const waitFor = (ok: () => boolean) =>
    new Promise<void>((resolve) => {
      const check = () => {
        if (ok()) resolve();
        else waiters.push(check);
      };
      check();
    });
  return {
    async expect(re) {
      const find = () => re.exec(clean().slice(cursor));
      await waitFor(() => find() !== null || exit !== undefined);
      const m = find();
      if (!m) throw new Error(`process ended (exit ${exit}) without ${re}; terminal:\n${clean()}`);
      cursor += m.index + m[0].length;
      return clean();
    },
    line(text) {
      p.write(`${text}\r`);
    },
    write(text) {
      p.write(text);
    },
    async done() {
      await waitFor(() => exit !== undefined);
      return { exitCode: exit!, output: clean() };
    },
    output: clean,
  };
}
