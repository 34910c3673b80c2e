// What every real sink peer needs (issue 28): where `node scripts/test-deps.mjs` installed it, a
// free loopback port, a process started (as `nobody` where a JVM refuses root), stopped by its PID
// and started again on the same ports and data (an outage), and readiness as an event: the port
// accepting or the health endpoint answering, failing at once if the process exits first.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, mkdtempSync, openSync, closeSync, readFileSync, rmSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readManifest, peersDir, type InstalledPeer } from '../../../scripts/test-peers.mjs';

/** The installed peer, or undefined (then describePeer skips, or fails under CI). */
export function installedPeer(name: string): InstalledPeer | undefined {
  return readManifest()?.[name];
}

/** The peer's install, or a clear error naming the command that installs it. */
export function requirePeer(name: string): InstalledPeer {
  const p = installedPeer(name);
  if (!p) throw new Error(`the sink test peer ${name} is not installed in ${peersDir()}: run node scripts/test-deps.mjs`);
  return p;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      const port = typeof a === 'object' && a ? a.port : 0;
      s.close(() => resolve(port));
    });
  });
}

/** A temporary directory; with `forUser`, owned by that unprivileged user. */
export function tempDir(prefix: string, forUser?: { uid: number; gid: number }): string {
  const dir = mkdtempSync(join(tmpdir(), `fleetctl-${prefix}-`));
  if (forUser) chownSync(dir, forUser.uid, forUser.gid);
  return dir;
}

/** `nobody` when we are root (Elasticsearch and OpenSearch refuse to run as root), else undefined. */
export function unprivilegedUser(): { uid: number; gid: number; name: string } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const uid = Number(spawnSync('id', ['-u', 'nobody'], { encoding: 'utf8' }).stdout);
  const gid = Number(spawnSync('id', ['-g', 'nobody'], { encoding: 'utf8' }).stdout);
  return { uid, gid, name: 'nobody' };
}

/** Recursively hands a directory to a user (the JVM peers write their data and logs there). */
export function chownTree(dir: string, user: { uid: number; gid: number }): void {
  spawnSync('chown', ['-R', `${user.uid}:${user.gid}`, dir]);
}

export interface PeerSpec {
  name: string;
  cmd: string;
  args: string[];
  env?: Record<string, string>;
  cwd?: string;
  /** Run as this user (through setpriv) when we are root. */
  user?: { uid: number; gid: number };
  /** Resolves when the peer is ready; called repeatedly until true. */
  ready: () => Promise<boolean>;
  /** Seconds to wait for readiness: a bound for a hang (JVMs take 30 s on a loaded machine). */
  readyTimeout?: number;
}

/** One peer process: started, stopped by its PID, and started again with the same spec. */
export class PeerProcess {
  private child?: ChildProcess;
  private exited?: Promise<void>;
  readonly logFile: string;

  constructor(
    private readonly spec: PeerSpec,
    readonly dir: string,
  ) {
    this.logFile = join(dir, `${spec.name}.out`);
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** The tail of the peer's own output, for error messages. */
  tail(lines = 30): string {
    try {
      return readFileSync(this.logFile, 'utf8').split('\n').slice(-lines).join('\n');
    } catch {
      return '';
    }
  }

  async start(): Promise<void> {
    const { spec } = this;
    const fd = openSync(this.logFile, 'a');
    const [cmd, args] = spec.user
      ? ['setpriv', [`--reuid=${spec.user.uid}`, `--regid=${spec.user.gid}`, '--clear-groups', spec.cmd, ...spec.args]]
      : [spec.cmd, spec.args];
    const child = spawn(cmd, args, { cwd: spec.cwd, env: { ...process.env, ...spec.env }, stdio: ['ignore', fd, fd], detached: true });
    closeSync(fd);
    this.child = child;
    let exitInfo = '';
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        exitInfo = `exit ${code ?? signal}`;
        resolve();
      });
      child.once('error', (err) => {
        exitInfo = err.message;
        resolve();
      });
    });
    const deadline = Date.now() + (spec.readyTimeout ?? 120) * 1000;
    let gone = false;
    void this.exited.then(() => (gone = true));
    for (;;) {
      if (gone) throw new Error(`${spec.name} ended before it was ready (${exitInfo}):\n${this.tail()}`);
      if (await spec.ready().catch(() => false)) return;
      if (Date.now() > deadline) {
        await this.stop();
        throw new Error(`${spec.name} was not ready within ${spec.readyTimeout ?? 120} s:\n${this.tail()}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** SIGTERM to the peer's process group (launcher scripts and their JVM), SIGKILL after 30 s. */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child?.pid || child.exitCode !== null || child.signalCode !== null) return;
    const kill = (sig: NodeJS.Signals) => {
      try {
        process.kill(-child.pid!, sig);
      } catch {
        /* already gone */
      }
    };
    kill('SIGTERM');
    const timer = setTimeout(() => kill('SIGKILL'), 30_000);
    await this.exited;
    clearTimeout(timer);
    this.child = undefined;
  }

  /** Removes the peer's directory (after stop). */
  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** True when something accepts TCP connections on 127.0.0.1:port. */
export function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
    s.setTimeout(2000, () => {
      s.destroy();
      resolve(false);
    });
  });
}

/** True when GET url answers 2xx. */
export async function httpOk(url: string, init?: RequestInit): Promise<boolean> {
  try {
    const r = await fetch(url, { ...init, signal: AbortSignal.timeout(5000) });
    await r.arrayBuffer();
    return r.ok;
  } catch {
    return false;
  }
}

/** Waits until check() is true (polled), failing with `what` after `seconds`. */
export async function until(what: string, check: () => Promise<boolean> | boolean, seconds = 120): Promise<void> {
  const deadline = Date.now() + seconds * 1000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${seconds} s waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
