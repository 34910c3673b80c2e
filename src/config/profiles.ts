// Profiles (server URL, environment, user) kept with conf in the XDG config directory
// (FLEETCTL_CONFIG_DIR overrides). Tokens are NOT kept here: see src/auth/credentials.ts.
import Conf from 'conf';
import { chmodSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';

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

export class ConfigStore {
  private readonly conf: Conf<ConfigShape>;
  readonly dir: string;

  constructor(env: NodeJS.ProcessEnv = process.env) {
    const cwd = env.FLEETCTL_CONFIG_DIR || undefined;
    if (cwd) mkdirSync(cwd, { recursive: true, mode: 0o700 });
    this.conf = new Conf<ConfigShape>({
      projectName: 'fleetctl',
      projectSuffix: '',
      ...(cwd ? { cwd } : {}),
      configName: 'config',
      configFileMode: 0o600,
      defaults: { profiles: {} },
      accessPropertiesByDotNotation: false,
    });
    this.dir = dirname(this.conf.path);
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    try {
      chmodSync(this.dir, 0o700);
    } catch {
      /* not ours to change (e.g. a shared directory); the files themselves stay 0600 */
    }
  }

  get path(): string {
    return this.conf.path;
  }

  currentName(): string {
    return this.conf.get('current') ?? DEFAULT_PROFILE;
  }

  list(): Record<string, Profile> {
    return this.conf.get('profiles') ?? {};
  }

  get(name: string): Profile | undefined {
    return this.list()[name];
  }

  set(name: string, profile: Profile): void {
    this.conf.set('profiles', { ...this.list(), [name]: profile });
  }

  remove(name: string): boolean {
    const all = this.list();
    if (!(name in all)) return false;
    delete all[name];
    this.conf.set('profiles', all);
    if (this.conf.get('current') === name) this.conf.delete('current');
    return true;
  }

  use(name: string): void {
    this.conf.set('current', name);
  }

  /** Whether a one-time notice was already shown from this config directory. */
  noticeShown(key: string): boolean {
    return Boolean(this.conf.get('notices')?.[key]);
  }

  markNoticeShown(key: string, when: Date = new Date()): void {
    this.conf.set('notices', { ...(this.conf.get('notices') ?? {}), [key]: when.toISOString() });
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
