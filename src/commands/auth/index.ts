import { Option, type Command } from 'commander';
import { group, verb } from '../define.js';
import { registerLogin } from '../login/index.js';
import { UnexpectedAnswerError } from '../../client/validate.js';
import { ApiError, CliError, ExitCode, NetworkError, mapError } from '../../errors.js';
import { tokenExpiry, tokenSubject } from '../../auth/credentials.js';
import { printObject, printText, type Column } from '../../output/index.js';
import type { Context } from '../../context.js';

export interface AuthStatus {
  profile: string;
  url: string;
  env: string;
  username: string;
  /** fleet (this API) or osctrl: learned at login, or --server-flavor / FLEETCTL_SERVER_FLAVOR. */
  server_flavor: string;
  logged_in: boolean;
  token_expires_at: string;
  token_expired: boolean;
  /** The server accepted the token just now (GET /api/v1/users/me). */
  verified: boolean;
  /** Issue 27: the release the server runs (GET /api/v1/version); '' when it does not say (osctrl) or was not asked. */
  server_version: string;
  /** keychain | file | env (FLEETCTL_TOKEN), or '' when there is no token. */
  credential_store: string;
  /** Where the token is kept, in words (the file path, the keychain service). Never the token. */
  token_location: string;
}

const STATUS_COLUMNS: Column<AuthStatus>[] = [
  { key: 'profile' },
  { key: 'url', header: 'URL' },
  { key: 'env', header: 'ENV' },
  { key: 'username', header: 'USER' },
  { key: 'server_flavor', header: 'SERVER' },
  { key: 'logged_in', header: 'LOGGED IN', kind: 'bool' },
  { key: 'verified', header: 'VERIFIED', kind: 'bool' },
  { key: 'server_version', header: 'SERVER VERSION' },
  { key: 'token_expires_at', header: 'TOKEN EXPIRES', kind: 'time' },
  { key: 'token_location', header: 'TOKEN STORED IN' },
];

async function status(ctx: Context): Promise<{ status: AuthStatus; token?: string }> {
  const p = ctx.profile();
  const source = await ctx.tokenSource();
  const cred = await ctx.credential();
  const exp = cred ? tokenExpiry(cred.token) : undefined;
  const now = Date.now();
  const location = source.kind === 'file' ? `file ${ctx.credentialStores.file.path}` : source.describe();
  return {
    token: cred?.token,
    status: {
      profile: ctx.profileName,
      url: ctx.url() ?? '',
      env: ctx.envName() ?? '',
      // The token's own user wins: FLEETCTL_TOKEN may belong to someone other than the profile's user.
      username: (cred && tokenSubject(cred.token)) ?? (source.kind === 'env' ? '' : (p?.username ?? '')),
      server_flavor: ctx.serverFlavor(),
      logged_in: Boolean(cred) && (exp === undefined || exp > now),
      token_expires_at: exp ? new Date(exp).toISOString() : '',
      token_expired: exp !== undefined && exp <= now,
      verified: false,
      server_version: '',
      credential_store: cred ? source.kind : '',
      token_location: cred ? location : '',
    },
  };
}

const loginHint = (ctx: Context) => `run \`fleetctl login${ctx.globals.profile ? ` --profile ${ctx.profileName}` : ''}\` to sign in`;

export function registerAuth(program: Command): void {
  const auth = group(program, {
    name: 'auth',
    summary: 'Log in and out, show the login state of a profile, or print its token',
    examples: [
      'fleetctl auth login --url https://fleet.example.com --env prod',
      'fleetctl auth status',
      'export FLEETCTL_TOKEN="$(fleetctl auth token)"',
    ],
  });
  // `auth login` / `auth logout` as gh spells them: the same verbs as the top-level ones.
  registerLogin(auth);

  verb(
    auth,
    {
      name: 'status',
      summary: 'Show profile, server, environment, user, token expiry and where the token is stored',
      description:
        'Show the login state of the current profile (or --profile): server URL, environment, user, when the\n' +
        'token expires and where it is kept (OS keychain, file, or FLEETCTL_TOKEN). Never the token itself.\n' +
        'The token is checked with the server (verified: true|false), and the exit code says whether it could be:\n' +
        '0 verified, 4 not logged in, expired or refused by the server (session ended, invalid token), 7 server\n' +
        'unreachable (the local state is still printed), another code for another server error.',
      examples: ['fleetctl auth status', 'fleetctl auth status --profile staging -o json', 'fleetctl auth status >/dev/null && echo ok'],
    },
    // --check was how scripts asked for the exit code that is now the default; still accepted.
    (cmd) => cmd.addOption(new Option('--check').hideHelp()),
    async (ctx) => {
      const { status: s } = await status(ctx);
      // The local view (a token exists and has not expired) is not the truth: the server may have
      // ended the session (logout, password change) or never issued the token. Ask it.
      let unverified: unknown;
      if (s.logged_in) {
        try {
          const api = await ctx.api({ check: true });
          await api.users.me();
          s.verified = true;
          // Issue 27: which release the server runs (a server without the endpoint just leaves it blank).
          if (api.flavor === 'fleet')
            s.server_version = await api.server.version().then(
              (v) => v.version,
              () => '',
            );
        } catch (e) {
          // A 200 whose body is not the shape we expect still means the server accepted the token.
          if (e instanceof UnexpectedAnswerError) s.verified = true;
          else {
            if (e instanceof ApiError && e.status === 401) s.logged_in = false;
            unverified = e;
          }
        }
      }
      await printObject(ctx.io, ctx.output(), s, STATUS_COLUMNS);
      if (unverified instanceof ApiError && unverified.status === 401) {
        const whose = s.credential_store === 'env' ? 'the token in FLEETCTL_TOKEN' : `the token of profile "${s.profile}"`;
        throw new CliError(
          `the server does not accept ${whose}: ${unverified.message} (${unverified.code})`,
          ExitCode.auth,
          loginHint(ctx),
        );
      }
      if (unverified) {
        const m = mapError(unverified);
        const what = unverified instanceof NetworkError ? `server unreachable (${m.message})` : m.message;
        // Not verified is not "logged in" for a script: the token may be dead on the server.
        throw new CliError(`not verified: ${what}`, unverified instanceof NetworkError ? ExitCode.unavailable : m.exitCode, m.hint);
      }
      if (!s.logged_in)
        throw new CliError(
          s.token_expired ? `the token of profile "${s.profile}" has expired` : `not logged in (profile "${s.profile}")`,
          ExitCode.auth,
          loginHint(ctx),
        );
    },
  );

  verb(
    auth,
    {
      name: 'token',
      summary: 'Print the token of the profile (for scripts)',
      description:
        'Print the token of the current profile (or --profile) on stdout, for scripts and for FLEETCTL_TOKEN\n' +
        'elsewhere. Treat it as a password. Exits 4 when not logged in or when the token has expired.',
      examples: ['fleetctl auth token', 'curl -H "Authorization: Bearer $(fleetctl auth token)" "$URL/api/v1/stats"'],
    },
    () => {},
    async (ctx) => {
      const { status: s, token } = await status(ctx);
      if (!token) throw new CliError(`not logged in (profile "${s.profile}")`, ExitCode.auth, loginHint(ctx));
      if (s.token_expired) throw new CliError(`the token of profile "${s.profile}" has expired`, ExitCode.auth, loginHint(ctx));
      printText(ctx.io, token);
    },
  );
}
