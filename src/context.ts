// The Context handed to every command: io, configuration, credentials, the API client and
// prompts, each built lazily on first use so a command pays only for what it touches.
import type { IO } from './io.js';
import { processIO } from './io.js';
import { ConfigStore, type Profile } from './config/profiles.js';
import type { CredentialStore, StoredCredential } from './auth/credentials.js';
import { selectCredentialStore } from './auth/select-store.js';
import { FleetApi } from './client/index.js';
import { CliError, ExitCode, UsageError } from './errors.js';
import type { OutputOptions } from './output/index.js';
import { parseOutputFormat } from './output/index.js';
import type { Prompter } from './prompt.js';

export interface GlobalOptions {
  url?: string;
  env?: string;
  profile?: string;
  output?: string;
  json?: boolean;
  /** false with --no-color */
  color?: boolean;
  timeout?: string;
  debug?: boolean;
  fields?: string;
  jq?: string;
  /** false with --no-headers */
  headers?: boolean;
  insecure?: boolean;
  caFile?: string;
  insecureStorage?: boolean;
}

export const DEFAULT_TIMEOUT_MS = 30_000;

/** "30", "30s", "2m", "500ms" -> milliseconds. */
export function parseDuration(s: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(s.trim());
  if (!m) throw new UsageError(`invalid duration "${s}": use seconds (30), or 30s, 2m, 500ms`);
  const n = Number(m[1]);
  const ms = m[2] === 'ms' ? n : m[2] === 'm' ? n * 60_000 : n * 1000;
  if (ms <= 0) throw new UsageError(`invalid duration "${s}": must be positive`);
  return ms;
}

export class Context {
  readonly io: IO;
  private _config?: ConfigStore;
  private _store?: Promise<CredentialStore>;
  private warned = new Set<string>();

  constructor(
    readonly globals: GlobalOptions,
    readonly env: NodeJS.ProcessEnv = process.env,
    io?: IO,
  ) {
    this.io = io ?? processIO({ noColor: globals.color === false, env });
  }

  get config(): ConfigStore {
    return (this._config ??= new ConfigStore(this.env));
  }

  get profileName(): string {
    return this.globals.profile || this.env.FLEETCTL_PROFILE || this.config.currentName();
  }

  profile(): Profile | undefined {
    return this.config.get(this.profileName);
  }

  /** Server URL: --url, then FLEETCTL_URL, then the profile. */
  url(): string | undefined {
    return this.globals.url || this.env.FLEETCTL_URL || this.profile()?.url;
  }

  requireUrl(): string {
    const url = this.url();
    if (!url) throw new CliError('no server URL: pass --url, set FLEETCTL_URL, or log in first', ExitCode.auth, 'run `fleetctl login --url URL`');
    return url;
  }

  /** Environment: --env, then FLEETCTL_ENV, then the profile. */
  envName(): string | undefined {
    return this.globals.env || this.env.FLEETCTL_ENV || this.profile()?.env;
  }

  requireEnv(): string {
    const env = this.envName();
    if (!env) throw new UsageError('no environment: pass --env, set FLEETCTL_ENV, or log in with --env');
    return env;
  }

  warnOnce(key: string, message: string): void {
    if (this.warned.has(key)) return;
    this.warned.add(key);
    this.io.err(`warning: ${message}\n`);
  }

  credentialStore(): Promise<CredentialStore> {
    return (this._store ??= selectCredentialStore({
      configDir: this.config.dir,
      insecureStorage: this.globals.insecureStorage,
      recorded: this.profile()?.credentialStore,
      warn: (m) => this.warnOnce('store', m),
    }));
  }

  /** FLEETCTL_TOKEN always wins over the stored token. */
  async credential(): Promise<StoredCredential | undefined> {
    if (this.env.FLEETCTL_TOKEN) return { token: this.env.FLEETCTL_TOKEN, csrfToken: '' };
    return (await this.credentialStore()).get(this.profileName);
  }

  timeoutMs(): number {
    return this.globals.timeout ? parseDuration(this.globals.timeout) : DEFAULT_TIMEOUT_MS;
  }

  /** A client for `url` without credentials (login). */
  anonymousApi(url: string): FleetApi {
    return FleetApi.create(this.httpOptions(url));
  }

  /** A client with the stored (or FLEETCTL_TOKEN) credential; exit 4 when there is none. */
  async api(): Promise<FleetApi> {
    const url = this.requireUrl();
    const cred = await this.credential();
    if (!cred) throw new CliError(`not logged in (profile "${this.profileName}")`, ExitCode.auth, 'run `fleetctl login` to sign in, or set FLEETCTL_TOKEN');
    return FleetApi.create({ ...this.httpOptions(url), token: cred.token, csrfToken: cred.csrfToken || undefined });
  }

  private httpOptions(url: string) {
    if (this.globals.insecure) this.warnOnce('insecure', 'TLS certificate verification is disabled (--insecure)');
    return {
      baseUrl: url,
      timeoutMs: this.timeoutMs(),
      debug: this.globals.debug ? (line: string) => this.io.err(`[debug] ${line}\n`) : undefined,
      caFile: this.globals.caFile,
      insecure: this.globals.insecure,
      userAgent: 'fleetctl',
    };
  }

  output(): OutputOptions {
    const format = this.globals.json ? 'json' : parseOutputFormat(this.globals.output ?? 'table');
    const fields = this.globals.fields
      ?.split(',')
      .map((f) => f.trim())
      .filter(Boolean);
    return { format, fields: fields?.length ? fields : undefined, jq: this.globals.jq, noHeaders: this.globals.headers === false };
  }

  /** Machine-readable output requested (anything but a table). */
  wantsData(): boolean {
    const o = this.output();
    return o.format !== 'table' || o.jq !== undefined;
  }

  async prompter(): Promise<Prompter> {
    const { prompter } = await import('./prompt.js');
    return prompter(this.io);
  }
}
