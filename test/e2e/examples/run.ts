// Runs one example the way a user would: its text as one `sh -c` command line, fleetctl on PATH,
// in the example's sandbox, after its fixture's setup; at a pseudo-terminal when the fixture
// answers prompts; inside fresh mount/network namespaces when it writes system paths or binds a
// fixed port. Every wait is for an event (a prompt, a line, the exit): a hang is caught by the
// test's timeout, never by a clock here.
import { spawn, type IPty } from '@lydell/node-pty';
import { execa } from 'execa';
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { stripAnsi } from '../../fixtures/terminal.js';
import type { Fixture } from './types.js';
import { Sandbox, type World } from './world.js';

export interface ExampleResult {
  exitCode: number;
  stdout: string;
  stderr: string;
  /** At a terminal: the screen text (stdout and stderr together). */
  screen?: string;
  /** The command line as run (after the fixture's address rewrites). */
  ran: string;
}

/**
 * Addresses an example names that cannot exist in a test: the documentation's server names
 * and the default port, which mean "your server". Each is replaced by the test server's URL.
 */
export const SERVER_ADDRESSES = ['http://127.0.0.1:8080', 'https://fleet.example.com', 'https://staging.example.com'];

export function rewrite(text: string, fixture: Fixture, sb: Sandbox): string {
  let out = text;
  for (const r of fixture.rewrite ?? []) {
    if (!out.includes(r.from)) throw new Error(`fixture rewrite "${r.from}" does not occur in: ${text}`);
    out = out.replaceAll(r.from, r.to(sb));
  }
  if (!fixture.namespaces?.includes('net')) for (const a of SERVER_ADDRESSES) out = out.replaceAll(a, sb.world.url);
  return out;
}

let namespacesChecked: boolean | undefined;
/** Whether this machine lets us make mount and network namespaces (root, or user namespaces). */
export function namespacesAvailable(): boolean {
  if (namespacesChecked === undefined) {
    try {
      execFileSync('unshare', ['--mount', '--net', '--propagation', 'private', 'true'], { stdio: 'ignore' });
      namespacesChecked = true;
    } catch {
      namespacesChecked = false;
    }
  }
  return namespacesChecked;
}

/**
 * The argv that runs `script` with the fixture's namespaces: system directories the example
 * writes are overlaid by directories of the sandbox (so `/etc/osquery/...` lands in
 * `<sandbox>/root/etc/osquery/...`), and a network namespace has its own loopback (so a fixed
 * port such as 8080 is free).
 */
function shellArgv(fixture: Fixture, sb: Sandbox): string[] {
  const ns = fixture.namespaces ?? [];
  if (!ns.length) return ['sh', '-c', 'eval "$FLEETCTL_EXAMPLE"'];
  const prelude: string[] = [];
  if (ns.includes('mount')) {
    for (const dir of ['/etc', '/var', '/opt']) {
      const upper = join(sb.root, 'root', dir);
      const work = join(sb.root, 'overlay-work', dir);
      mkdirSync(upper, { recursive: true });
      mkdirSync(work, { recursive: true });
      prelude.push(`mount -t overlay overlay -o lowerdir=${dir},upperdir=${upper},workdir=${work} ${dir}`);
    }
  }
  if (ns.includes('net')) prelude.push('ip link set lo up');
  if (fixture.prelude) prelude.push(fixture.prelude(sb));
  const flags = [...(ns.includes('mount') ? ['--mount', '--propagation', 'private'] : []), ...(ns.includes('net') ? ['--net'] : [])];
  return ['unshare', ...flags, 'sh', '-c', `set -e; ${prelude.join('; ')}; set +e; eval "$FLEETCTL_EXAMPLE"`];
}

/** What the example running now printed so far: shown when a hang meets the test's timeout. */
let shownSoFar: (() => string) | undefined;
export const outputSoFar = (): string => shownSoFar?.() ?? '';

export async function runExample(world: World, text: string, fixture: Fixture): Promise<{ result: ExampleResult; sandbox: Sandbox }> {
  const sb = await Sandbox.create(world, fixture.login !== 'none');
  for (const [path, content] of Object.entries(fixture.files ?? {})) sb.file(path, content);
  await fixture.setup?.(sb);
  const ran = rewrite(text, fixture, sb);
  const env = { ...sb.shellEnv(), FLEETCTL_EXAMPLE: ran };
  const argv = shellArgv(fixture, sb);
  try {
    const result = fixture.terminal ? await atTerminal(argv, env, sb, fixture) : await piped(argv, env, sb, fixture);
    return { result: { ...result, ran }, sandbox: sb };
  } finally {
    await fixture.after?.(sb);
  }
}

async function piped(argv: string[], env: Record<string, string>, sb: Sandbox, fixture: Fixture): Promise<Omit<ExampleResult, 'ran'>> {
  const input = typeof fixture.stdin === 'function' ? fixture.stdin(sb) : fixture.stdin;
  const proc = execa(argv[0], argv.slice(1), {
    env,
    extendEnv: false,
    cwd: sb.cwd,
    input,
    stdin: input === undefined ? 'ignore' : undefined,
    reject: false,
    stripFinalNewline: false,
    buffer: true,
    detached: true, // its own process group: an interrupt reaches the whole command line
  });
  let seen = '';
  proc.stdout.on('data', (d: Buffer) => void (seen += d.toString()));
  proc.stderr.on('data', (d: Buffer) => void (seen += d.toString()));
  shownSoFar = () => seen;
  const during = fixture.during?.(sb);
  if (fixture.stop) {
    const stop = fixture.stop;
    await new Promise<void>((resolve) => {
      const look = () => {
        if (stop.test(seen)) resolve();
      };
      proc.stdout.on('data', look);
      proc.stderr.on('data', look);
      void proc.then(() => resolve());
    });
    // Ctrl-C at a terminal interrupts the foreground process group: the same here.
    try {
      process.kill(-proc.pid!, 'SIGINT');
    } catch {
      /* already gone */
    }
  }
  const r = await proc;
  await during;
  return { exitCode: r.exitCode ?? (r.signal ? 128 + signalNumber(r.signal) : -1), stdout: String(r.stdout), stderr: String(r.stderr) };
}

const signalNumber = (s: string): number => ({ SIGINT: 2, SIGTERM: 15, SIGKILL: 9 })[s] ?? 0;

/** At a pseudo-terminal: answers each prompt once it is shown, then waits for the exit. */
async function atTerminal(argv: string[], env: Record<string, string>, sb: Sandbox, fixture: Fixture): Promise<Omit<ExampleResult, 'ran'>> {
  const pty: IPty = spawn(argv[0], argv.slice(1), {
    name: 'xterm-256color',
    cols: 160,
    rows: 50,
    cwd: sb.cwd,
    env: { ...env, TERM: 'xterm-256color', NO_COLOR: '1' },
  });
  let raw = '';
  let cursor = 0;
  let exitCode: number | undefined;
  const waiters = new Set<() => void>();
  const changed = () => waiters.forEach((w) => w());
  pty.onData((d) => {
    raw += d;
    changed();
  });
  pty.onExit((e) => {
    exitCode = e.exitCode;
    changed();
  });
  const screen = () => stripAnsi(raw);
  shownSoFar = screen;
  const until = (ok: () => boolean) =>
    new Promise<void>((resolve) => {
      const check = () => {
        if (ok()) {
          waiters.delete(check);
          resolve();
        }
      };
      waiters.add(check);
      check();
    });
  const waitFor = async (pattern: RegExp) => {
    let m: RegExpExecArray | null = null;
    await until(() => (m = pattern.exec(screen().slice(cursor))) !== null || exitCode !== undefined);
    if (!m) throw new Error(`the example ended (exit ${exitCode}) before showing ${pattern}; its terminal:\n${screen()}`);
    cursor += (m as RegExpExecArray).index + (m as RegExpExecArray)[0].length;
  };
  const during = fixture.during?.(sb);
  try {
    for (const [prompt, answer] of fixture.terminal!) {
      await waitFor(prompt);
      const text = typeof answer === 'function' ? answer(sb, screen()) : answer;
      if (text) {
        // Typed, then Enter once the prompt has shown what was typed (the text, or its mask).
        const before = screen().length;
        pty.write(text);
        await until(() => screen().length > before || exitCode !== undefined);
      }
      pty.write('\r');
    }
    if (fixture.stop) {
      await waitFor(fixture.stop);
      pty.write('\x03');
    }
    await until(() => exitCode !== undefined);
    await during;
  } finally {
    if (exitCode === undefined) pty.kill();
  }
  return { exitCode: exitCode!, stdout: '', stderr: '', screen: screen() };
}
