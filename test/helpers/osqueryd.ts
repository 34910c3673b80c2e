// The real osquery agent in tests (issue 26). Starts `osqueryd` from the OSQUERYD environment
// variable (`.ci/run` points it at the real agent in the shared folder beside the clone when it
// exists; nothing else in the repository names that path) against a test server, with the flags `fleetctl enroll show ENV
// flags` hands out. Each agent has its own temporary directory: the secret and certificate files
// the flags point at, its database, pidfile, extensions socket and logger path, and its stderr.
// Agents are stopped by their PID. Without OSQUERYD the real-agent tests skip with a one-line
// notice; under CI they fail, so a CI machine without the peer cannot pass them silently.
//
//   describeRealAgent('enroll', () => {
//     let srv: AgentServer;
//     let agent: Osqueryd;
//     beforeAll(async () => {
//       srv = await startAgentServer();
//       agent = await startOsqueryd({ enrollment: await srv.enrollment() });
//     });
//     afterAll(async () => { await agent?.stop(); await srv?.stop(); });
//     it('enrolls', async () => {
//       const uuid = await agent.identifier();
//       await srv.waitForNode(uuid, (n) => n.config_hash !== '');
//     });
//   });
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, onTestFailed } from 'vitest';
import { Cli, startServerProcess, type ServerProcess } from './cli.js';
import { apiCall, apiToken, type Reply } from './admin-cli.js';
import { eventually } from './osquery-agent.js';
import { selfSigned } from '../../src/server/agent/listener.js';

/** The osqueryd binary the real-agent tests run, or undefined. */
export const OSQUERYD: string | undefined = process.env.OSQUERYD || undefined;

/** Why the real agent cannot run here, or undefined when it can. */
function missing(): string | undefined {
  if (!OSQUERYD) return 'OSQUERYD is not set (the path of an osqueryd binary, e.g. osquery 5.x)';
  try {
    accessSync(OSQUERYD, constants.X_OK);
  } catch {
    return `OSQUERYD=${OSQUERYD} is not an executable file`;
  }
  return undefined;
}

let noticeShown = false;

/**
 * A describe block of tests that run the real agent. Without OSQUERYD: skipped with a one-line
 * notice (once per test process), or, under CI, one failing test that says why. OSQUERYD set to
 * something that cannot run is always a failure: the caller asked for the real agent.
 */
export function describeRealAgent(title: string, fn: () => void): void {
  const why = missing();
  if (!why) {
    describe(title, fn);
    return;
  }
  if (process.env.CI || OSQUERYD) {
    describe(title, () => {
      it('needs the real osquery agent', () => {
        throw new Error(`the real-agent tests cannot run: ${why}`);
      });
    });
    return;
  }
  if (!noticeShown) {
    noticeShown = true;
    console.warn(`notice: real-agent tests skipped: ${why}`);
  }
  // Skipped, not failed: no osqueryd and neither CI nor OSQUERYD set (a developer's machine; the notice says why).
  describe.skip(title, fn);
}

/** What an environment hands an agent: its flags (with osctrl's file placeholders), secret and certificate. */
export interface Enrollment {
  flags: string;
  secret: string;
  cert: string;
}

/** The enrollment of `env` as `fleetctl enroll show ENV flags|secret|cert` prints it (the CLI under test). */
export async function enrollmentOf(cli: Cli, env: string): Promise<Enrollment> {
  const show = async (target: string) => {
    const r = await cli.run(['enroll', 'show', env, target]);
    if (r.exitCode !== 0) throw new Error(`fleetctl enroll show ${env} ${target} failed (${r.exitCode}): ${r.stderr}`);
    return r.stdout;
  };
  return { flags: await show('flags'), secret: (await show('secret')).trim(), cert: await show('cert') };
}

/** How an agent names itself. `instance` (default): a UUID of its own database, so several agents on one machine are several nodes. */
export type HostIdentifier = 'instance' | 'uuid' | 'hostname' | 'ephemeral' | { specified: string };

export interface OsquerydOptions {
  enrollment: Enrollment;
  hostIdentifier?: HostIdentifier;
  /** More flags, after the flags file (they win over it), e.g. `--carver_compression=true`. */
  flags?: string[];
  /** osquery's --verbose (default true): every TLS request and carve step is on stderr, where tests wait for them. */
  verbose?: boolean;
  /** Start in this directory (an earlier agent's: same database, same identity) instead of a new one. */
  dir?: string;
}

/** Agents still running in this test process: stopped at exit if a test forgot (or failed before) stopping them. */
const running = new Set<Osqueryd>();
/** Directories the harness made: removed when the test process ends (OSQUERYD_KEEP=1 keeps them to look into). */
const made = new Set<string>();
process.once('exit', () => {
  for (const a of running) a.killNow();
  if (process.env.OSQUERYD_KEEP !== '1') for (const d of made) rmSync(d, { recursive: true, force: true });
});

const hostIdentifierFlags = (h: HostIdentifier): string[] =>
  typeof h === 'object' ? ['--host_identifier=specified', `--specified_identifier=${h.specified}`] : [`--host_identifier=${h}`];

/** One running osqueryd. */
export class Osqueryd {
  private err = '';
  private readonly waiters = new Set<() => void>();
  private exit?: { code: number | null; signal: NodeJS.Signals | null };
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  private constructor(
    readonly dir: string,
    private readonly proc: ChildProcess,
    readonly options: OsquerydOptions,
  ) {
    const errLog = join(dir, 'stderr.log');
    const take = (d: Buffer) => {
      const s = d.toString('utf8');
      this.err += s;
      appendFileSync(errLog, s);
      for (const w of [...this.waiters]) w();
    };
    proc.stderr!.on('data', take);
    proc.stdout!.on('data', take);
    this.exited = new Promise((resolve) => {
      proc.once('exit', (code, signal) => {
        this.exit = { code, signal };
        running.delete(this);
        for (const w of [...this.waiters]) w();
        resolve(this.exit);
      });
    });
  }

  /** Starts osqueryd in a new temporary directory (or `o.dir`) with the enrollment's flags. */
  static start(o: OsquerydOptions): Osqueryd {
    const why = missing();
    if (why) throw new Error(`cannot start the real agent: ${why}`);
    // Short: the extensions socket's path must fit a Unix socket address (about 100 bytes).
    const dir = o.dir ?? mkdtempSync(join(tmpdir(), 'osqd-'));
    if (!o.dir) made.add(dir);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const secretFile = join(dir, 'secret');
    const certFile = join(dir, 'cert.pem');
    const flagsFile = join(dir, 'osquery.flags');
    writeFileSync(secretFile, o.enrollment.secret, { mode: 0o600 });
    writeFileSync(certFile, o.enrollment.cert);
    writeFileSync(flagsFile, o.enrollment.flags.replaceAll('__SECRET_FILE__', secretFile).replaceAll('__CERT_FILE__', certFile));
    const args = [
      `--flagfile=${flagsFile}`,
      `--database_path=${join(dir, 'db')}`,
      `--pidfile=${join(dir, 'osqueryd.pid')}`,
      `--extensions_socket=${join(dir, 'em.sock')}`,
      `--logger_path=${join(dir, 'logs')}`,
      '--disable_watchdog',
      ...hostIdentifierFlags(o.hostIdentifier ?? 'instance'),
      ...(o.verbose === false ? [] : ['--verbose']),
      ...(o.flags ?? []),
    ];
    mkdirSync(join(dir, 'logs'), { recursive: true });
    const proc = spawn(OSQUERYD!, args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    const agent = new Osqueryd(dir, proc, o);
    running.add(agent);
    proc.once('error', (e) => {
      agent.err += `\n[harness] could not start ${OSQUERYD}: ${e.message}\n`;
    });
    return agent;
  }

  get pid(): number {
    return this.proc.pid ?? -1;
  }

  /** Everything the agent wrote to stderr (and stdout) so far; also kept in `dir`/stderr.log. */
  stderr(): string {
    return this.err;
  }

  /** A mark in stderr: waitFor(re, { after: mark }) looks only at what came after it. */
  mark(): number {
    return this.err.length;
  }

  /** The last lines of stderr (for error messages). */
  tail(lines = 40): string {
    return this.err.split('\n').slice(-lines).join('\n');
  }

  /** Waits until stderr (after `o.after`) matches `re`; fails when the agent exits first. */
  waitFor(re: RegExp, o: { after?: number } = {}): Promise<RegExpExecArray> {
    const from = o.after ?? 0;
    return this.until((text) => re.exec(text.slice(from)) ?? undefined, String(re));
  }

  /**
   * Waits until `check(stderr so far)` returns a value; fails when the agent exits first. No clock
   * of its own (tests wait for events): a hang ends in the test's timeout, and the failed test
   * shows what was waited for and the agent's last lines.
   */
  until<T>(check: (stderr: string) => T | undefined, what: string): Promise<T> {
    let waiting = true;
    try {
      onTestFailed(() => {
        if (waiting) console.error(`was waiting for ${what} in osqueryd's stderr; last lines:\n${this.tail()}`);
      });
    } catch {
      // in a hook: no test to report to
    }
    return new Promise((resolve, reject) => {
      const finish = (e?: Error, v?: T) => {
        waiting = false;
        this.waiters.delete(test);
        if (e) reject(e);
        else resolve(v as T);
      };
      const test = () => {
        const v = check(this.err);
        if (v !== undefined) return finish(undefined, v);
        if (this.exit)
          finish(new Error(`osqueryd exited (${this.exit.code ?? this.exit.signal}) before ${what}; last lines:\n${this.tail()}`));
      };
      this.waiters.add(test);
      test();
    });
  }

  /**
   * The times (ms, from glog's line prefix, this day) of the agent's requests to an endpoint whose
   * path ends in `/suffix` (with --verbose: "TLS/HTTPS POST request to URI: ..."), after `mark`.
   */
  requests(suffix: string, after = 0): number[] {
    const re = new RegExp(String.raw`^I\d{4} (\d\d):(\d\d):(\d\d)\.(\d{6}) .*TLS/HTTPS POST request to URI: \S+/${suffix}$`, 'gm');
    return [...this.err.slice(after).matchAll(re)].map(
      (m) => ((Number(m[1]) * 60 + Number(m[2])) * 60 + Number(m[3])) * 1000 + Number(m[4]) / 1000,
    );
  }

  /** The host identifier osquery enrolls with (its "Using host identifier" line). */
  async identifier(): Promise<string> {
    return (await this.waitFor(/Using host identifier: (\S+)/))[1];
  }

  /**
   * Freezes the agent (SIGSTOP by its PID): it sends nothing until thaw(), as an agent in the
   * middle of a long pause. Its monotonic clock runs on, so at thaw() every pause that ended while
   * it was frozen ends at once. For tests that need the agent's last request to be some time ago.
   */
  freeze(): void {
    if (this.exit || this.proc.pid === undefined) return;
    process.kill(this.proc.pid, 'SIGSTOP');
  }

  /** Lets a frozen agent run again (SIGCONT). */
  thaw(): void {
    if (this.exit || this.proc.pid === undefined) return;
    process.kill(this.proc.pid, 'SIGCONT');
  }

  /** Stops the agent by its PID (SIGTERM; SIGKILL if it has not ended after `graceMs`). A frozen agent is thawed to take it. */
  async stop(graceMs = 30_000): Promise<void> {
    if (this.exit || this.proc.pid === undefined) return;
    process.kill(this.proc.pid, 'SIGTERM');
    this.thaw();
    const timer = setTimeout(() => this.killNow(), graceMs);
    await this.exited;
    clearTimeout(timer);
  }

  /** SIGKILL by PID at once (a crash; also the exit-time safety net). */
  killNow(): void {
    if (this.exit || this.proc.pid === undefined) return;
    try {
      process.kill(this.proc.pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }

  /** A new osqueryd on the same directory (same database, node key and identity), after this one stopped. */
  async restart(o: Partial<OsquerydOptions> = {}): Promise<Osqueryd> {
    await this.stop();
    return Osqueryd.start({ ...this.options, ...o, dir: this.dir });
  }

  /** Stops the agent and removes its directory. */
  async remove(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

export const startOsqueryd = (o: OsquerydOptions) => Osqueryd.start(o);

/** Agent intervals for tests, in seconds: fast enough that waits stay short, slow enough for a loaded 2-core machine. */
export const TEST_INTERVALS = { config: 5, log: 2, query: 2 };

export interface AgentServer {
  server: ServerProcess;
  /** The admin API's URL. */
  url: string;
  /** A CLI (own config directory) logged in as admin on `env`. */
  cli: Cli;
  token: string;
  /** The server's database, sink directory and agent certificate live here. */
  dir: string;
  env: string;
  /** The admin API as admin: a raw call, to read back what the server stored. */
  api(method: string, path: string, body?: unknown): Promise<Reply>;
  /** The enrollment of `env` from `fleetctl enroll show` (after the test intervals were set). */
  enrollment(env?: string): Promise<Enrollment>;
  /** Waits until the node `uuid` exists and `ok(node)` holds; returns it. */
  waitForNode(uuid: string, ok?: (n: any) => boolean, what?: string): Promise<any>;
  /** Stops the server process only (SIGTERM, drained): agents see it gone; its database and directory stay. */
  halt(): Promise<void>;
  /** Starts it again on the same database and the same two ports (agents come back to it). */
  resume(): Promise<void>;
  stop(): Promise<void>;
}

const ADMIN_PASSWORD = 'real-agent-test-password-1';

/**
 * A `fleetctl server` for real agents: its own SQLite database (or the test PostgreSQL), an agent
 * listener on a free port with a self-signed certificate for 127.0.0.1, file sinks confined to its
 * directory, environment `env` (default prod) with TEST_INTERVALS set through `fleetctl env
 * intervals`, and a CLI logged in.
 */
export async function startAgentServer(o: { env?: string; args?: string[]; intervals?: typeof TEST_INTERVALS } = {}): Promise<AgentServer> {
  const env = o.env ?? 'prod';
  const dir = mkdtempSync(join(tmpdir(), 'fleetctl-real-agent-'));
  const { certFile, keyFile } = selfSigned(dir, '127.0.0.1');
  const args = [
    '--db',
    join(dir, 'fleet.db'),
    '--create-env',
    env,
    '--agent-listen',
    '127.0.0.1:0',
    '--agent-tls-cert',
    certFile,
    '--agent-tls-key',
    keyFile,
    '--sink-dir',
    dir,
    ...(o.args ?? []),
  ];
  let server = await startServerProcess(args, { env: { FLEETCTL_ADMIN_PASSWORD: ADMIN_PASSWORD } });
  const cli = new Cli();
  await cli.login(server.url, 'admin', env, ADMIN_PASSWORD);
  const token = await apiToken(server.url, 'admin', ADMIN_PASSWORD, env);
  const api = (method: string, path: string, body?: unknown) => apiCall(server.url, method, path, { token, body });
  const iv = o.intervals ?? TEST_INTERVALS;
  const r = await cli.run(['env', 'intervals', env, '--config', String(iv.config), '--log', String(iv.log), '--query', String(iv.query)]);
  if (r.exitCode !== 0) throw new Error(`fleetctl env intervals failed (${r.exitCode}): ${r.stderr}`);
  const agentPort = Number(/Agent API \(osquery TLS\) listening on https:\/\/127\.0\.0\.1:(\d+)/.exec(server.output())?.[1]);
  const apiPort = Number(new URL(server.url).port);
  let halted = false;
  return {
    get server() {
      return server;
    },
    url: server.url,
    cli,
    token,
    dir,
    env,
    api,
    enrollment: (e = env) => enrollmentOf(cli, e),
    waitForNode: (uuid, ok = () => true, what = `node ${uuid}`) =>
      eventually(async () => {
        const n = await api('GET', `/api/v1/nodes/${env}/node/${encodeURIComponent(uuid)}`);
        return n.status === 200 && ok(n.body) ? n.body : undefined;
      }, what),
    async halt() {
      await server.stop();
      halted = true;
    },
    async resume() {
      // The later --listen and --agent-listen win over startServerProcess's own (any free port).
      server = await startServerProcess([...args, '--listen', `127.0.0.1:${apiPort}`, '--agent-listen', `127.0.0.1:${agentPort}`], {
        env: { FLEETCTL_ADMIN_PASSWORD: ADMIN_PASSWORD },
      });
      halted = false;
    },
    async stop() {
      if (!halted) await server.stop();
      cli.cleanup();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
