// The Context handed to every command: io, configuration, credentials, the API client and
// prompts, each built lazily on first use so a command pays only for what it touches.
import type { IO } from './io.js';
import { processIO } from './io.js';
import { ConfigStore, normalizeServerUrl, type Profile } from './config/profiles.js';
import { KeychainUnavailableError, tokenExpiry, type CredentialStore, type StoredCredential } from './auth/credentials.js';
import { CredentialStores } from './auth/select-store.js';
import { EnvCredentialStore } from './auth/env-store.js';
import { ReauthHttpClient } from './auth/reauth.js';
import { expiryWarning, sessionEnded } from './auth/session-end.js';
import { FleetApi, parseFlavor, type ServerFlavor } from './client/index.js';
import { CliError, ExitCode, UsageError, type ApiError } from './errors.js';
import type { OutputOptions } from './output/index.js';
import { parseOutputFormat, setTimeStyle, type TimeStyle } from './output/index.js';
import type { Prompter } from './prompt.js';
import { safeText } from './output/sanitize.js';

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
  time?: TimeStyle;
  insecure?: boolean;
  caFile?: string;
  insecureStorage?: boolean;
  serverFlavor?: string;
}

export const DEFAULT_TIMEOUT_MS = 30_000;

import { parseDuration } from './lib/duration.js';

export { parseDuration };

export class Context {
  readonly io: IO;
  private _config?: ConfigStore;
  private _stores?: CredentialStores;
  private warned = new Set<string>();

  constructor(
    readonly globals: GlobalOptions,
    readonly env: NodeJS.ProcessEnv = process.env,
    io?: IO,
    /** Logs in again when the session ended mid-command (the login flow, given by commands/define.ts). */
    private readonly renewSession?: (ctx: Context, e: ApiError) => Promise<StoredCredential>,
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

  /** A --profile or FLEETCTL_PROFILE naming no saved profile is a typo: say so, not "not logged in". */
  private unknownProfile(): CliError | undefined {
    const named = this.globals.profile || this.env.FLEETCTL_PROFILE;
    if (!named || this.profile()) return undefined;
    return new CliError(`no profile named "${named}"`, ExitCode.notFound, 'see `fleetctl config list`');
  }

  /**
   * Nothing says where or who: no profile, no --url/FLEETCTL_URL, no FLEETCTL_TOKEN. That is a
   * first run, and the one thing to say is "not logged in" (exit 4), whichever value was asked
   * for first (a missing environment used to say "no environment", exit 2).
   */
  private notLoggedIn(): CliError | undefined {
    if (this.profile() || this.globals.url || this.env.FLEETCTL_URL || this.env.FLEETCTL_TOKEN) return undefined;
    return new CliError('not logged in', ExitCode.auth, 'run `fleetctl login --url URL --env ENV`');
  }

  requireUrl(): string {
    const url = this.url();
    if (!url) {
      throw (
        this.unknownProfile() ??
        this.notLoggedIn() ??
        new CliError('no server URL: pass --url or set FLEETCTL_URL', ExitCode.auth, 'run `fleetctl login --url URL`')
      );
    }
    return url;
  }

  /** Environment: --env, then FLEETCTL_ENV, then the profile. */
  envName(): string | undefined {
    return this.globals.env || this.env.FLEETCTL_ENV || this.profile()?.env;
  }

  requireEnv(): string {
    const env = this.envName();
    if (!env)
      throw (
        this.unknownProfile() ?? this.notLoggedIn() ?? new UsageError('no environment: pass --env, set FLEETCTL_ENV, or log in with --env')
      );
    return env;
  }

  warnOnce(key: string, message: string): void {
    if (this.warned.has(key)) return;
    this.warned.add(key);
    this.io.err(`warning: ${safeText(message)}\n`);
  }

  /** The keychain and file stores of this run (shared, so the keychain is probed once). */
  get credentialStores(): CredentialStores {
    return (this._stores ??= new CredentialStores(this.config.dir, this.env));
  }

  /** The store that holds the profile's token (where it was saved at login). Not FLEETCTL_TOKEN. */
  async credentialStore(): Promise<CredentialStore> {
    return this.credentialStores.forProfile(this.profile()?.credentialStore, this.globals.insecureStorage);
  }

  /** Where the token used by this run comes from: FLEETCTL_TOKEN, else the profile's store. */
  async tokenSource(): Promise<CredentialStore> {
    if (this.env.FLEETCTL_TOKEN) return new EnvCredentialStore(this.env.FLEETCTL_TOKEN);
    return this.credentialStore();
  }

  /** FLEETCTL_TOKEN always wins over the stored token; `stored` reads the profile's own token only. */
  async credential(o: { stored?: boolean } = {}): Promise<StoredCredential | undefined> {
    const store = o.stored ? await this.credentialStore() : await this.tokenSource();
    try {
      return await store.get(this.profileName);
    } catch (e) {
      if (!(e instanceof KeychainUnavailableError)) throw e;
      throw new CliError(
        `the token of profile "${this.profileName}" is in the OS keychain, which cannot be used now: ${e.message}`,
        ExitCode.auth,
        'run `fleetctl login` again (the token then goes to a 0600 file if the keychain stays unusable), or set FLEETCTL_TOKEN',
      );
    }
  }

  timeoutMs(): number {
    return this.globals.timeout ? parseDuration(this.globals.timeout) : DEFAULT_TIMEOUT_MS;
  }

  /** The flavour given by --server-flavor or FLEETCTL_SERVER_FLAVOR, if any (it wins over detection). */
  flavorOverride(): ServerFlavor | undefined {
    if (this.globals.serverFlavor) return parseFlavor(this.globals.serverFlavor, '--server-flavor');
    if (this.env.FLEETCTL_SERVER_FLAVOR) return parseFlavor(this.env.FLEETCTL_SERVER_FLAVOR, 'FLEETCTL_SERVER_FLAVOR');
    return undefined;
  }

  /** --server-flavor, FLEETCTL_SERVER_FLAVOR, then what login learned (the profile), else this API. */
  serverFlavor(): ServerFlavor {
    return this.flavorOverride() ?? this.profile()?.serverFlavor ?? 'fleet';
  }

  /** A client for `url` without credentials (login). */
  anonymousApi(url: string, flavor: ServerFlavor = this.serverFlavor()): Promise<FleetApi> {
    return FleetApi.create(this.httpOptions(url), flavor);
  }

  /**
   * A client with the stored (or FLEETCTL_TOKEN) credential; exit 4 when there is none.
   * `check`: for asking the server about the token itself (`auth status`, `logout`): no offer to
   * log in again on 401, no expiry warning. `stored`: the profile's own token, even when
   * FLEETCTL_TOKEN is set (logout ends the stored session).
   */
  async api(o: { check?: boolean; stored?: boolean } = {}): Promise<FleetApi> {
    const url = this.requireUrl();
    const cred = await this.credential({ stored: o.stored });
    if (!cred)
      throw (
        this.unknownProfile() ??
        new CliError(
          `not logged in (profile "${this.profileName}")`,
          ExitCode.auth,
          'run `fleetctl login` to sign in, or set FLEETCTL_TOKEN',
        )
      );
    const saved = this.profile()?.url;
    const fromEnv = !o.stored && Boolean(this.env.FLEETCTL_TOKEN);
    if (!fromEnv && saved && normalizeServerUrl(saved) !== normalizeServerUrl(url)) {
      // A profile's token is a secret for its own server: never hand it to another one.
      throw new CliError(
        `the token of profile "${this.profileName}" is for ${saved}, not ${url}: it is not sent there`,
        ExitCode.auth,
        'log in to that server under its own profile (`fleetctl login --profile NAME --url URL`), or set FLEETCTL_TOKEN',
      );
    }
    const opts = { ...this.httpOptions(url), token: cred.token, csrfToken: cred.csrfToken || undefined };
    if (o.check) return FleetApi.create(opts, this.serverFlavor());
    const soon = expiryWarning(this, tokenExpiry(cred.token), Date.now());
    if (soon) this.warnOnce('expiry', soon);
    const renew = this.renewSession && ((e: ApiError) => this.renewSession!(this, e));
    return FleetApi.over(new ReauthHttpClient(opts, (e) => sessionEnded(this, e), renew), this.serverFlavor());
  }

  private httpOptions(url: string) {
    return {
      baseUrl: url,
      timeoutMs: this.timeoutMs(),
      debug: this.globals.debug ? (line: string) => this.io.err(`[debug] ${safeText(line)}\n`) : undefined,
      caFile: this.globals.caFile,
      insecure: this.globals.insecure,
      userAgent: 'fleetctl',
      warn: (key: string, message: string) => this.warnOnce(key, message),
    };
  }

  output(): OutputOptions {
    // `-o wide` is the table with every column (kubectl's spelling), not a format of its own.
    if (this.globals.time) setTimeStyle(this.globals.time);
    const wide = !this.globals.json && this.globals.output?.trim().toLowerCase() === 'wide';
    const format = this.globals.json ? 'json' : wide ? 'table' : parseOutputFormat(this.globals.output ?? 'table');
    const fields = this.globals.fields
      ?.split(',')
      .map((f) => f.trim())
      .filter(Boolean);
    return { format, fields: fields?.length ? fields : undefined, jq: this.globals.jq, noHeaders: this.globals.headers === false, wide };
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
