// The reference servers examples run against, and the sandbox each example runs in.
//
// World 'demo' is what the README tells a user to start: `fleetctl server --dev --dev-agents 5`
// (the demo fleet: users, tags, carves, sinks, queries, and five simulated agents). World 'live'
// is the same demo whose prod environment holds only live simulated agents, for live queries and
// carves that must be answered by every target (in the demo, most targets are records with no
// agent behind them, and such a query waits out --wait and exits 9, as it would in a real fleet
// with offline hosts).
import { execa } from 'execa';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { BIN, Cli, baseEnv, startServerProcess, type ServerProcess } from '../../helpers/cli.js';
import { apiCall, type Reply } from '../../helpers/admin-cli.js';

export type WorldName = 'demo' | 'live';

/** A node as the admin API lists it (the fields fixtures read). */
type NodeItem = { uuid: string; hostname: string; platform: string; tags?: unknown };

export class World {
  private constructor(
    readonly name: WorldName,
    readonly server: ServerProcess,
    readonly password: string,
    /** An admin token (prod), to set up and read back state independently of the CLI. */
    readonly token: string,
    /** A config directory logged in as admin on prod: each example starts from a copy. */
    readonly adminConfig: string,
    private readonly cli: Cli,
  ) {}

  get url(): string {
    return this.server.url;
  }

  /** What the server printed at start (the demo banner: TOTP secret, recovery codes, agents). */
  banner(): string {
    return this.server.output();
  }

  static async start(name: WorldName, password: string): Promise<World> {
    // The live world: the smallest demo (3 records, deleted below from prod) and ten agents.
    const size = name === 'live' ? ['--dev-nodes', '3', '--dev-agents', '10'] : ['--dev-agents', '5'];
    // The secrets sink examples name by environment variable (headers_env) are set for the server.
    const server = await startServerProcess(['--dev', '--dev-password', password, ...size], {
      env: { SIEM_TOKEN: 'siem-token-for-examples' },
    });
    await waitForLine(server, /Simulated agents: \d+ of \d+ enrolled/);
    const cli = new Cli();
    await cli.login(server.url, 'admin', 'prod', password);
    const login = await apiCall(server.url, 'POST', '/api/v1/login/prod', { body: { username: 'admin', password } });
    if (login.status !== 200) throw new Error(`admin login: ${login.status} ${JSON.stringify(login.body)}`);
    const world = new World(name, server, password, (login.body as { token: string }).token, cli.configDir, cli);
    if (name === 'live') {
      await world.keepOnlyLiveAgents('prod');
      // --target tag:pci: the demo tags a share of prod's records pci; here, the live Macs.
      await world.api('POST', '/api/v1/tags/prod/add', { name: 'pci', description: 'In PCI scope' }, [200, 409]);
      const macs = (await world.nodes('prod')).filter((n) => n.platform === 'darwin').map((n) => n.uuid);
      if (macs.length === 0) throw new Error('the live world has no Mac agent to tag pci');
      await world.api('POST', '/api/v1/tags/prod/tag', { name: 'pci', uuids: macs });
    }
    return world;
  }

  /** An admin API call; throws unless the status is one of `ok`. */
  async api(method: string, path: string, body?: unknown, ok: number[] = [200]): Promise<Reply> {
    const r = await apiCall(this.url, method, path, { token: this.token, body });
    if (!ok.includes(r.status)) throw new Error(`${method} ${path}: HTTP ${r.status} ${JSON.stringify(r.body)}`);
    return r;
  }

  /** Every node of `env`, all pages. */
  async nodes(env: string, query = ''): Promise<NodeItem[]> {
    const out: NodeItem[] = [];
    for (let page = 1; ; page++) {
      const body = (await this.api('GET', `/api/v1/nodes/${env}?page=${page}&page_size=500${query}`)).body as {
        items: NodeItem[];
        total_pages: number;
      };
      out.push(...body.items);
      if (page >= body.total_pages) return out;
    }
  }

  /** Deletes the demo records of `env`, leaving the simulated agents (tag live-agents). */
  private async keepOnlyLiveAgents(env: string): Promise<void> {
    const live = new Set((await this.nodes(env, '&tag=live-agents')).map((n) => n.uuid));
    if (live.size === 0) throw new Error('the live world has no live agents');
    for (const n of await this.nodes(env)) {
      if (!live.has(n.uuid)) await this.api('POST', `/api/v1/nodes/${env}/delete`, { uuid: n.uuid });
    }
  }

  async stop(): Promise<void> {
    await this.server.stop();
    this.cli.cleanup();
  }
}

function waitForLine(server: ServerProcess, re: RegExp): Promise<void> {
  // No clock: the test's hook timeout bounds a server that never says it.
  return new Promise((resolve, reject) => {
    const poll = setInterval(() => {
      if (re.test(server.output())) {
        clearInterval(poll);
        resolve();
      }
    }, 100);
    void server.proc.then(() => {
      clearInterval(poll);
      reject(new Error(`server exited before ${re}:\n${server.output()}`));
    });
  });
}

/** A directory on PATH whose `fleetctl` is the built CLI, as `npm link` would install it. */
let shimDir: string | undefined;
export function removeShim(): void {
  if (shimDir) rmSync(shimDir, { recursive: true, force: true });
  shimDir = undefined;
}
export function fleetctlOnPath(): string {
  if (shimDir) return shimDir;
  shimDir = mkdtempSync(join(tmpdir(), 'fleetctl-bin-'));
  const shim = join(shimDir, 'fleetctl');
  writeFileSync(shim, `#!/bin/sh\nexec '${process.execPath}' '${BIN}' "$@"\n`);
  chmodSync(shim, 0o755);
  return shimDir;
}

/**
 * One example's own directories: its working directory, a home, and a config directory that
 * starts as a copy of the world's admin login (so an example that logs out or changes a profile
 * changes nothing for the next one).
 */
export class Sandbox {
  /** Sandboxes not cleaned up yet (an example that failed or hung): removed after the file. */
  static readonly open = new Set<Sandbox>();
  readonly root: string;
  readonly cwd: string;
  readonly home: string;
  readonly configDir: string;
  /** Environment variables of the example's shell (fixtures add theirs). */
  readonly env: Record<string, string> = {};

  private constructor(readonly world: World) {
    this.root = mkdtempSync(join(tmpdir(), 'fleetctl-example-'));
    Sandbox.open.add(this);
    this.cwd = join(this.root, 'work');
    this.home = join(this.root, 'home');
    this.configDir = join(this.root, 'config');
    mkdirSync(this.cwd);
    mkdirSync(this.home);
  }

  /**
   * A sandbox logged in as admin on prod with a session of its own (an example that logs out or
   * changes its password ends only its own session), or, with `loggedIn` false, not logged in.
   */
  static async create(world: World, loggedIn: boolean): Promise<Sandbox> {
    const sb = new Sandbox(world);
    if (!loggedIn) {
      mkdirSync(sb.configDir, { mode: 0o700 });
      return sb;
    }
    cpSync(world.adminConfig, sb.configDir, { recursive: true });
    const login = () => apiCall(world.url, 'POST', '/api/v1/login/prod', { body: { username: 'admin', password: world.password } });
    // A kept-alive connection the server closed as it was reused ('other side closed', seen once
    // at load 16) is not what an example tests: the login (a new session, harmless twice) is sent
    // again on a new connection.
    const r = await login().catch((e: unknown) => {
      if ((e as { cause?: { code?: string } }).cause?.code === 'UND_ERR_SOCKET') return login();
      throw e;
    });
    if (r.status !== 200) throw new Error(`sandbox login: ${r.status} ${JSON.stringify(r.body)}`);
    // The CLI's file credential store (--insecure-storage; no keychain in tests): one entry per profile.
    const { token, csrf_token } = r.body as { token: string; csrf_token: string };
    writeFileSync(join(sb.configDir, 'credentials.json'), JSON.stringify({ default: { token, csrfToken: csrf_token } }), { mode: 0o600 });
    return sb;
  }

  /** Writes a file: relative to the working directory, or under the home with `~/`. */
  file(path: string, content: string): string {
    const full = path.startsWith('~/') ? join(this.home, path.slice(2)) : join(this.cwd, path);
    mkdirSync(dirname(full), { recursive: true });
    writeFileSync(full, content);
    return full;
  }

  /** The environment the example's shell gets: no inherited FLEETCTL_*, fleetctl on PATH. */
  shellEnv(): Record<string, string> {
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(baseEnv(this.configDir))) if (v !== undefined) env[k] = v;
    return { ...env, HOME: this.home, PATH: `${fleetctlOnPath()}:${process.env.PATH ?? '/usr/bin:/bin'}`, ...this.env };
  }

  /** `fleetctl login` into this sandbox's config (a profile, another user, another env). */
  async login(username: string, o: { password?: string; env?: string; profile?: string } = {}): Promise<void> {
    const args = ['login', '--url', this.world.url, '--env', o.env ?? 'prod', '--username', username, '--password-stdin'];
    if (o.profile) args.push('--profile', o.profile);
    const r = await execa(process.execPath, [BIN, ...args], {
      env: this.shellEnv(),
      extendEnv: false,
      input: o.password ?? this.world.password,
      reject: false,
    });
    if (r.exitCode !== 0) throw new Error(`fixture login ${username}: ${r.stderr}`);
  }

  cleanup(): void {
    Sandbox.open.delete(this);
    rmSync(this.root, { recursive: true, force: true });
  }
}
