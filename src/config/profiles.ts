// Profiles (server URL, environment, user) kept as one JSON file in the config directory
// (FLEETCTL_CONFIG_DIR overrides). Tokens are NOT kept here: see src/auth/credentials.ts.
//
// A few lines of JSON file handling instead of `conf`: conf loaded ajv, semver and friends at
// every start (about a third of `fleetctl --version`) for a file we read whole and write whole.
// The path is the one conf used (its env-paths rules), so existing configs keep working.
import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

export interface Profile {
  url: string;
  env: string;
  username: string;
  /** RFC 3339 expiry of the stored token (from its JWT), for warnings without reading the token. */
  tokenExpiresAt?: string;
  /** Where the token of this profile is kept. */
  credentialStore?: 'keychain' | 'file';
  /** What the server is (learned at login): this API (`fleet`) or osctrl. Absent: `fleet`. */
  serverFlavor?: 'fleet' | 'osctrl';
  /** Environment names seen at login, for shell completion without a server call. */
  environments?: string[];
}

interface ConfigShape {
  current?: string;
  profiles: Record<string, Profile>;
  /** One-time notices already shown from this config directory (key -> when), like gh's. */
  notices?: Record<string, string>;
}

export const DEFAULT_PROFILE = 'default';

/** Profile names are keychain account names and file keys: keep them plain. */
export const PROFILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export function isValidProfileName(name: string): boolean {
  return PROFILE_NAME.test(name);
}

/** Where conf kept its file (env-paths with no suffix), so upgrading finds the old profiles. */
export function defaultConfigDir(env: NodeJS.ProcessEnv = process.env): string {
  if (process.platform === 'darwin') return join(homedir(), 'Library', 'Preferences', 'fleetctl');
  if (process.platform === 'win32') return join(env.APPDATA || join(homedir(), 'AppData', 'Roaming'), 'fleetctl', 'Config');
  return join(env.XDG_CONFIG_HOME || join(homedir(), '.config'), 'fleetctl');
}

export class ConfigStore {
  readonly dir: string;
  readonly path: string;
  private data?: ConfigShape;

  constructor(env: NodeJS.ProcessEnv = process.env) {
    this.dir = env.FLEETCTL_CONFIG_DIR || defaultConfigDir(env);
    this.path = join(this.dir, 'config.json');
  }

  /** Read once, on first use; a missing file is an empty config. */
  private read(): ConfigShape {
    if (this.data) return this.data;
    let text: string | undefined;
    try {
      text = readFileSync(this.path, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
    let parsed: unknown = {};
    if (text !== undefined && text.trim() !== '') {
      try {
        parsed = JSON.parse(text);
      } catch {
        throw new Error(`the config file ${this.path} is not valid JSON: fix or remove it`);
      }
    }
    const obj = (parsed && typeof parsed === 'object' ? parsed : {}) as Partial<ConfigShape>;
    this.data = { ...obj, profiles: obj.profiles && typeof obj.profiles === 'object' ? obj.profiles : {} };
    return this.data;
  }

  /** Whole-file write through a temporary file and a rename: a crash never leaves half a file. */
  private write(change: (c: ConfigShape) => void): void {
    const next = structuredClone(this.read());
    change(next);
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    try {
      chmodSync(this.dir, 0o700);
    } catch {
      /* not ours to change (e.g. a shared directory); the file itself stays 0600 */
    }
    const tmp = `${this.path}.${process.pid}.tmp`;
    writeFileSync(tmp, `${JSON.stringify(next, null, '\t')}\n`, { mode: 0o600 });
    renameSync(tmp, this.path);
    this.data = next;
  }

  currentName(): string {
    return this.read().current ?? DEFAULT_PROFILE;
  }

  list(): Record<string, Profile> {
    return this.read().profiles;
  }

  get(name: string): Profile | undefined {
    return Object.hasOwn(this.list(), name) ? this.list()[name] : undefined;
  }

  set(name: string, profile: Profile): void {
    this.write((c) => (c.profiles[name] = profile));
  }

  remove(name: string): boolean {
    if (!Object.hasOwn(this.list(), name)) return false;
    this.write((c) => {
      delete c.profiles[name];
      if (c.current === name) delete c.current;
    });
    return true;
  }

  use(name: string): void {
    this.write((c) => (c.current = name));
  }

  /** Whether a one-time notice was already shown from this config directory. */
  noticeShown(key: string): boolean {
    return Boolean(this.read().notices?.[key]);
  }

  markNoticeShown(key: string, when: Date = new Date()): void {
    this.write((c) => (c.notices = { ...(c.notices ?? {}), [key]: when.toISOString() }));
  }
}

/** A server URL as saved in a profile: http(s), no trailing slash; undefined when not a URL. */
export function normalizeServerUrl(raw: string): string | undefined {
  let u: URL;
  try {
    u = new URL(raw.trim());
  } catch {
    return undefined;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return undefined;
  if (u.username || u.password) return undefined; // credentials never live in a URL
  return u.toString().replace(/\/+$/, '');
}
