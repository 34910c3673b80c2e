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
}

interface ConfigShape {
  current?: string;
  profiles: Record<string, Profile>;
}

export const DEFAULT_PROFILE = 'default';

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
}
