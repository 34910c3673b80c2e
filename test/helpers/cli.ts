// Running the built `fleetctl` binary (execa) against a real `fleetctl server` process, each
// test with its own config directory. Needs `npm run build` first (npm test does it).
import { execa, type ResultPromise } from 'execa';
import { onTestFailed } from 'vitest';
import { testDatabaseUrl } from './test-db.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/** The CLI entry: bin/fleetctl.cjs, or a build elsewhere (FLEETCTL_TEST_ENTRY=.build/x/main.js). */
export const BIN = process.env.FLEETCTL_TEST_ENTRY
  ? resolve(process.env.FLEETCTL_TEST_ENTRY)
  : resolve(import.meta.dirname, '../../bin/fleetctl.cjs');
export const DEV_PASSWORD = 'test-password-1';

export interface CliResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  input?: string;
  env?: Record<string, string | undefined>;
  timeout?: number;
  cwd?: string;
}

/** A clean environment for the CLI: no inherited FLEETCTL_* or color settings. */
export function baseEnv(configDir: string): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith('FLEETCTL_') || k === 'FORCE_COLOR' || k === 'NO_COLOR') delete env[k];
  // Without a Secret Service the keychain is skipped; tests that want it set their own D-Bus session.
  env.DBUS_SESSION_BUS_ADDRESS = process.env.FLEETCTL_TEST_DBUS ?? 'disabled:';
  env.FLEETCTL_CONFIG_DIR = configDir;
  // Terminal tests read the screen as printed: no pager unless a test asks for one.
  env.FLEETCTL_PAGER = 'cat';
  return env;
}

export class Cli {
  readonly configDir: string;

  constructor() {
    this.configDir = mkdtempSync(join(tmpdir(), 'fleetctl-cfg-'));
  }

  async run(args: string[], o: RunOptions = {}): Promise<CliResult> {
    const r = await execa('node', [BIN, ...args], {
      input: o.input,
      stdin: o.input === undefined ? 'ignore' : undefined,
      env: { ...baseEnv(this.configDir), ...o.env },
      extendEnv: false,
      reject: false,
      timeout: o.timeout ?? 180_000, // a bound for a hung command, far from what a loaded machine takes
      stripFinalNewline: false,
      cwd: o.cwd,
    });
    return { exitCode: r.exitCode ?? -1, stdout: String(r.stdout), stderr: String(r.stderr) };
  }

  /** Logs in with the dev password (or `password`) and asserts success. */
  async login(url: string, username = 'admin', env = 'prod', password = DEV_PASSWORD): Promise<CliResult> {
    const r = await this.run(['login', '--url', url, '--env', env, '--username', username, '--password-stdin'], { input: password });
    if (r.exitCode !== 0) throw new Error(`login failed (${r.exitCode}): ${r.stderr}`);
    return r;
  }

  cleanup(): void {
    rmSync(this.configDir, { recursive: true, force: true });
  }
}

export interface ServerProcess {
  url: string;
  proc: ResultPromise;
  output(): string;
  /**
   * Resolves when the output matches (at once if it already does), rejects if the server exits
   * first. No clock of its own: what never comes ends in the test's timeout, and the failed test
   * shows what was waited for and the output so far.
   */
  waitFor(re: RegExp, what?: string): Promise<RegExpExecArray>;
  stop(): Promise<void>;
}

/** Starts `fleetctl server --dev` (or with `args`) on a free port and waits for its URL. */
export async function startServerProcess(
  args: string[] = ['--dev', '--dev-password', DEV_PASSWORD],
  o: { env?: Record<string, string>; input?: string } = {},
): Promise<ServerProcess> {
  // In the postgres project, a --dev server seeds its demo fleet into a fresh database.
  const pgUrl = args.includes('--dev') && !args.includes('--db') ? await testDatabaseUrl() : undefined;
  if (pgUrl) args = [...args, '--db', pgUrl];
  // One server process unless a test is about --workers: the default follows the machine's cores
  // (cores less one), and what the CLI tests look at is the same either way (test/server/workers
  // and test/e2e/workers-default cover the workers).
  if (!args.some((a) => a === '--workers' || a.startsWith('--workers='))) args = [...args, '--workers', '1'];
  const proc = execa(
    'node',
    [
      BIN,
      'server',
      '--listen',
      '127.0.0.1:0',
      '--login-rate-limit',
      '10000',
      '--denied-rate-limit',
      '10000',
      '--account-login-limit',
      '10000',
      ...args,
    ],
    {
      env: { ...o.env },
      input: o.input,
      reject: false,
      all: true,
      buffer: false,
      // stop() waits for the drain (grace 5 s plus a second); execa's default would kill -9 after 5 s.
      forceKillAfterDelay: 60_000,
    },
  );
  let out = '';
  // Waited for, not timed: a server that never says its URL ends in the hook's timeout.
  const url = await new Promise<string>((resolveUrl, reject) => {
    proc.all.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /(https?:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m) resolveUrl(m[1]);
    });
    void proc.then((r) => reject(new Error(`server exited (${r.exitCode}): ${out}`)));
  });
  const exited = proc.then((r) => r.exitCode);
  return {
    url,
    proc,
    output: () => out,
    waitFor(re: RegExp, what = String(re)) {
      let waiting = true;
      try {
        onTestFailed(() => {
          if (waiting) console.error(`was waiting for ${what} in the server's output:\n${out.slice(-4000)}`);
        });
      } catch {
        // in a hook: no test to report to
      }
      return new Promise<RegExpExecArray>((resolveMatch, reject) => {
        const check = () => {
          const m = re.exec(out);
          if (!m) return;
          waiting = false;
          proc.all.off('data', check);
          resolveMatch(m);
        };
        proc.all.on('data', check);
        check();
        void exited.then((code) => {
          if (!waiting) return;
          waiting = false;
          reject(new Error(`the server exited (${code}) before ${what}:\n${out}`));
        });
      });
    },
    async stop() {
      proc.kill('SIGTERM');
      await proc;
    },
  };
}
