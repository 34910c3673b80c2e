// `config`: the profiles (server URL, environment, user) kept in the config directory.
import type { Command } from 'commander';
import { group, verb } from '../define.js';
import { CliError, ExitCode, UsageError } from '../../errors.js';
import { isValidProfileName, normalizeServerUrl, type Profile } from '../../config/profiles.js';
import { printObject, type Column } from '../../output/index.js';
import type { Context } from '../../context.js';
import { removeStoredToken } from '../login/index.js';
import { printWholeList } from '../paged-list.js';

export interface ProfileView {
  name: string;
  current: boolean;
  url: string;
  env: string;
  username: string;
  /** keychain | file, or '' before the first login. */
  credential_store: string;
  token_expires_at: string;
}

const COLUMNS: Column<ProfileView>[] = [
  { key: 'current', header: 'CURRENT', get: (p) => (p.current ? '*' : '') },
  { key: 'name' },
  { key: 'url', header: 'URL' },
  { key: 'env', header: 'ENV' },
  { key: 'username', header: 'USER' },
  { key: 'credential_store', header: 'TOKEN STORE' },
  { key: 'token_expires_at', header: 'TOKEN EXPIRES', kind: 'time' },
];

/** Keys `config set` accepts, each checked and normalized. */
const SETTABLE: Record<string, (v: string) => string> = {
  url: (v) => {
    const u = normalizeServerUrl(v);
    if (!u) throw new UsageError(`invalid URL "${v}": use http://host:port or https://host`);
    return u;
  },
  env: (v) => {
    if (!v.trim()) throw new UsageError('env must not be empty');
    return v.trim();
  },
  username: (v) => {
    if (!v.trim()) throw new UsageError('username must not be empty');
    return v.trim();
  },
};

function view(ctx: Context, name: string, p: Profile): ProfileView {
  return {
    name,
    current: ctx.config.currentName() === name,
    url: p.url ?? '',
    env: p.env ?? '',
    username: p.username ?? '',
    credential_store: p.tokenExpiresAt ? (p.credentialStore ?? '') : '',
    token_expires_at: p.tokenExpiresAt ?? '',
  };
}

function requireProfile(ctx: Context, name: string): Profile {
  const p = ctx.config.get(name);
  if (!p) throw new CliError(`no profile named "${name}"`, ExitCode.notFound, 'see `fleetctl config list`');
  return p;
}

function checkName(name: string): string {
  if (!isValidProfileName(name)) throw new UsageError(`invalid profile name "${name}": use letters, digits, ".", "_" and "-"`);
  return name;
}

export function registerConfig(program: Command): void {
  const config = group(program, {
    name: 'config',
    summary: 'Manage profiles (server, environment, user)',
    description:
      'Profiles keep a server URL, an environment and a username, so several servers or users can be used\n' +
      'side by side. `fleetctl login --profile NAME` creates one; --profile or FLEETCTL_PROFILE picks one for\n' +
      'a command; `config use` changes the default. Tokens are not kept here but in the OS keychain or the\n' +
      'credentials file (see `fleetctl auth status`).',
    examples: ['fleetctl config list', 'fleetctl config use staging', 'fleetctl config set url https://fleet.example.com --profile prod'],
  });

  verb(
    config,
    {
      name: 'list',
      aliases: ['ls'],
      summary: 'List the profiles; * marks the current one',
      examples: ['fleetctl config list', 'fleetctl config list -o json'],
    },
    () => {},
    async (ctx) => {
      const rows = Object.entries(ctx.config.list())
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([name, p]) => view(ctx, name, p));
      await printWholeList(ctx, rows, COLUMNS, 'No profiles yet: `fleetctl login` creates one');
    },
  );

  verb(
    config,
    {
      name: 'use',
      summary: 'Make a profile the current one',
      examples: ['fleetctl config use staging'],
    },
    (cmd) => cmd.argument('<profile>', 'profile name'),
    async (ctx, [name]) => {
      requireProfile(ctx, name);
      ctx.config.use(name);
      ctx.io.err(`Current profile: ${name}.\n`);
    },
  );

  verb(
    config,
    {
      name: 'show',
      aliases: ['get'],
      summary: 'Show a profile (default: the current one)',
      examples: ['fleetctl config show', 'fleetctl config show staging --json'],
    },
    (cmd) => cmd.argument('[profile]', 'profile name (default: --profile, FLEETCTL_PROFILE or the current one)'),
    async (ctx, [name]) => {
      const n = name ?? ctx.profileName;
      await printObject(ctx.io, ctx.output(), view(ctx, n, requireProfile(ctx, n)), COLUMNS);
    },
  );

  verb(
    config,
    {
      name: 'remove',
      aliases: ['rm'],
      summary: 'Remove a profile and its stored token',
      description:
        'Remove a profile from the config and its token from the OS keychain or the credentials file. Nothing on the server changes.',
      examples: ['fleetctl config remove staging'],
    },
    (cmd) => cmd.argument('<profile>', 'profile name'),
    async (ctx, [name]) => {
      requireProfile(ctx, name);
      const { removed, where } = await removeStoredToken(ctx, name);
      const wasCurrent = ctx.config.currentName() === name;
      ctx.config.remove(name);
      ctx.io.err(`Removed profile ${name}${removed ? ` and its token (from ${where})` : ''}.\n`);
      if (wasCurrent) ctx.io.err('It was the current profile: pick another with `fleetctl config use NAME`.\n');
    },
  );

  verb(
    config,
    {
      name: 'set',
      summary: 'Set url, env or username of a profile (creating it when new)',
      description:
        'Set one value of the current profile, or of --profile NAME (created when it does not exist yet).\n' +
        `Keys: ${Object.keys(SETTABLE).join(', ')}. Changing url or username removes the profile's stored token (it belongs to the old\n` +
        'server or user): run `fleetctl login` afterwards.',
      examples: ['fleetctl config set env staging', 'fleetctl config set url https://fleet.example.com --profile prod'],
    },
    (cmd) => cmd.argument('<key>', `one of: ${Object.keys(SETTABLE).join(', ')}`).argument('<value>', 'new value'),
    async (ctx, [key, value]) => {
      const check = SETTABLE[key];
      if (!check) throw new UsageError(`unknown key "${key}": use one of ${Object.keys(SETTABLE).join(', ')}`);
      const name = checkName(ctx.profileName);
      const p: Profile = ctx.config.get(name) ?? { url: '', env: '', username: '' };
      const v = check(value);
      let next: Profile = { ...p, [key]: v };
      // A token belongs to one server and one user: it must not follow the profile elsewhere.
      const moved = (key === 'url' || key === 'username') && p[key] !== v;
      let dropped = false;
      if (moved && p.credentialStore) {
        dropped = (await removeStoredToken(ctx, name)).removed;
        next = { ...next, tokenExpiresAt: undefined };
      }
      ctx.config.set(name, next);
      if (!ctx.config.get(ctx.config.currentName())) ctx.config.use(name);
      ctx.io.err(`Profile ${name}: ${key} = ${v}.\n`);
      if (dropped)
        ctx.io.err(
          `Its token (for the previous ${key}) was removed: run \`fleetctl login${ctx.globals.profile ? ` --profile ${name}` : ''}\` to sign in.\n`,
        );
    },
  );
}
