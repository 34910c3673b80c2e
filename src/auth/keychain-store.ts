// Tokens in the OS keychain (macOS Keychain, Windows Credential Manager, Linux Secret Service)
// through @napi-rs/keyring: one entry per profile under the service name "fleetctl".
//
// Why a helper process: the native module connects to D-Bus synchronously when an entry is
// created, and a D-Bus that accepts the connection but never answers blocks that call for
// libdbus's 25 s reply timeout or longer. On the main thread that would freeze the CLI; a worker
// thread is no better, because process.exit() waits for a worker stuck in native code. A child
// process can be killed: each call waits at most KEYCHAIN_TIMEOUT_MS, then the helper is killed
// and the keychain is given up for this run. Secrets travel over its stdin/stdout pipes, never
// argv or the environment.
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import {
  decodeCredential,
  encodeCredential,
  KeychainUnavailableError,
  type CredentialStore,
  type StoredCredential,
} from './credentials.js';

export const KEYCHAIN_SERVICE = 'fleetctl';
export const KEYCHAIN_TIMEOUT_MS = 3000;
const MODULE = '@napi-rs/keyring';

// CommonJS for `node -e` (argv: module path, service); one JSON request a line on stdin, one
// JSON reply a line on stdout. On Linux the entry is pinned to the Secret Service: the library's
// default falls back to the kernel keyring (keyutils), which forgets tokens at logout or reboot
// and is invisible to keychain tools; the 0600 file is the better fallback.
const HELPER_SOURCE = `
const [modulePath, service] = process.argv.slice(1);
let mod, loadError;
try { mod = require(modulePath); } catch (e) { loadError = 'cannot load ${MODULE}: ' + ((e && e.message) || e); }
const options = process.platform === 'linux' ? { linux: { store: 'secret-service' } } : undefined;
const reply = (m) => process.stdout.write(JSON.stringify(m) + '\\n');
require('node:readline').createInterface({ input: process.stdin }).on('line', async (line) => {
  let m;
  try { m = JSON.parse(line); } catch { return; }
  try {
    if (loadError) throw new Error(loadError);
    const entry = new mod.AsyncEntry(service, m.account, options);
    let value;
    if (m.op === 'get') value = await entry.getPassword();
    else if (m.op === 'set') { await entry.setPassword(m.secret); value = true; }
    else value = await entry.deleteCredential();
    reply({ id: m.id, ok: true, value });
  } catch (e) {
    reply({ id: m.id, ok: false, error: String((e && e.message) || e) });
  }
});
`;

interface Reply {
  id: number;
  ok: boolean;
  value?: unknown;
  error?: string;
}

interface Pending {
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout;
}

/** Why the keychain cannot be used in this environment, found without touching it; or undefined. */
export function keychainPrecheck(env: NodeJS.ProcessEnv, platform: NodeJS.Platform = process.platform): string | undefined {
  if (platform !== 'linux') return undefined;
  const addr = env.DBUS_SESSION_BUS_ADDRESS;
  if (addr?.startsWith('disabled:')) return 'D-Bus is disabled: DBUS_SESSION_BUS_ADDRESS=disabled:';
  if (!addr) {
    // libdbus also finds a systemd user bus at $XDG_RUNTIME_DIR/bus without the variable.
    const runtime = env.XDG_RUNTIME_DIR;
    if (!runtime || !existsSync(join(runtime, 'bus'))) return 'no D-Bus session: DBUS_SESSION_BUS_ADDRESS is not set';
  }
  return undefined;
}

function keyringModulePath(): string | undefined {
  try {
    return createRequire(import.meta.url).resolve(MODULE);
  } catch {
    return undefined;
  }
}

/** Shortens native error text to its first sentence (D-Bus messages run long). */
function shortReason(text: string): string {
  const t = text.replace(/^Platform failure:\s*/i, '').trim();
  const cut = t.search(/\s\((examples|possible causes)|\.\s/i);
  return (cut > 0 ? t.slice(0, cut) : t).replace(/\.$/, '');
}

export class KeychainCredentialStore implements CredentialStore {
  readonly kind = 'keychain' as const;
  private helper?: ChildProcessWithoutNullStreams;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  /** Set once the keychain failed in this run: later calls fail at once instead of waiting again. */
  private unusable?: string;

  constructor(
    env: NodeJS.ProcessEnv = process.env,
    private readonly timeoutMs = KEYCHAIN_TIMEOUT_MS,
  ) {
    this.unusable = keychainPrecheck(env);
  }

  describe(): string {
    const where =
      process.platform === 'darwin' ? 'macOS Keychain' : process.platform === 'win32' ? 'Windows Credential Manager' : 'Secret Service';
    return `OS keychain (${where}, service "${KEYCHAIN_SERVICE}")`;
  }

  /** Why the keychain is known to be unusable in this run, if it is. */
  get unavailableReason(): string | undefined {
    return this.unusable;
  }

  private fail(reason: string): KeychainUnavailableError {
    this.unusable ??= reason;
    return new KeychainUnavailableError(reason);
  }

  /**
   * node:child_process and node:readline are loaded by the first keychain call, not with this
   * module: every command builds the credential stores, and a token from FLEETCTL_TOKEN or the
   * file never needs them (their loading was a tenth of `nodes list`'s start-up).
   */
  private async start(): Promise<ChildProcessWithoutNullStreams> {
    if (this.helper) return this.helper;
    const [{ spawn }, { createInterface }] = await Promise.all([import('node:child_process'), import('node:readline')]);
    if (this.helper) return this.helper;
    const modulePath = keyringModulePath();
    if (!modulePath) throw this.fail(`the keychain module ${MODULE} is not installed`);
    // Its own process group: Ctrl-C in the terminal is for fleetctl (which may be finishing a
    // save), not for the helper. It still ends with fleetctl, when its stdin closes.
    const child = spawn(process.execPath, ['-e', HELPER_SOURCE, modulePath, KEYCHAIN_SERVICE], {
      stdio: ['pipe', 'pipe', 'pipe'],
      windowsHide: true,
      detached: process.platform !== 'win32',
    });
    // The helper never keeps fleetctl alive: pending calls hold the event loop through their timers.
    child.unref();
    for (const s of [child.stdin, child.stdout, child.stderr] as unknown as { unref?: () => void }[]) s.unref?.();
    child.stderr.resume();
    createInterface({ input: child.stdout }).on('line', (line) => {
      let r: Reply;
      try {
        r = JSON.parse(line) as Reply;
      } catch {
        return;
      }
      const p = this.pending.get(r.id);
      if (!p) return;
      this.pending.delete(r.id);
      clearTimeout(p.timer);
      if (r.ok) p.resolve(r.value);
      else p.reject(this.fail(shortReason(r.error ?? 'unknown keychain error')));
    });
    child.on('error', (e) => this.abandon(`cannot start the keychain helper: ${e.message}`));
    child.on('exit', () => this.abandon('the keychain helper stopped'));
    child.stdin.on('error', () => {}); // EPIPE when the helper died: reported through 'exit'
    return (this.helper = child);
  }

  /** Gives up on the keychain for this run: every waiting call fails with `reason`. */
  private abandon(reason: string): void {
    const child = this.helper;
    this.helper = undefined;
    if (this.pending.size === 0) return; // an idle helper that ended: a later call starts another
    const err = this.fail(reason);
    for (const [id, p] of this.pending) {
      clearTimeout(p.timer);
      p.reject(err);
      this.pending.delete(id);
    }
    if (child && child.exitCode === null) child.kill('SIGKILL');
  }

  private async call(op: 'get' | 'set' | 'delete', account: string, secret?: string): Promise<unknown> {
    if (this.unusable) throw new KeychainUnavailableError(this.unusable);
    const child = await this.start();
    if (this.unusable) throw new KeychainUnavailableError(this.unusable);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => this.abandon(`no answer from the keychain within ${this.timeoutMs / 1000} s`), this.timeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      child.stdin.write(`${JSON.stringify({ id, op, account, secret })}\n`);
    });
  }

  async get(profile: string): Promise<StoredCredential | undefined> {
    const v = await this.call('get', profile);
    return typeof v === 'string' ? decodeCredential(v) : undefined;
  }

  async set(profile: string, cred: StoredCredential): Promise<void> {
    await this.call('set', profile, encodeCredential(cred));
  }

  async delete(profile: string): Promise<boolean> {
    return (await this.call('delete', profile)) === true;
  }
}
