import type { Command } from 'commander';
import { choiceOption, verb } from '../define.js';
import { ApiError, CliError, ExitCode, UsageError, mapError } from '../../errors.js';
import { KeychainUnavailableError, tokenExpiry } from '../../auth/credentials.js';
import { readStdinSecret, readStdinSecretLines } from '../../prompt.js';
import type { MfaAnswer } from '../../auth/login-flow.js';
import { isValidProfileName, normalizeServerUrl } from '../../config/profiles.js';
import { MfaMethods } from '../../api/constants.js';
import type { MfaMethod } from '../../api/index.js';
import type { Context } from '../../context.js';

interface LoginOpts {
  username?: string;
  passwordStdin?: boolean;
  expHours?: number;
  totpCode?: string;
  recoveryCode?: string;
  mfaCodeStdin?: boolean;
  mfaMethod?: MfaMethod;
}

async function ask(
  ctx: Context,
  current: string | undefined,
  what: string,
  flag: string,
  def?: string,
  validate?: (v: string) => true | string,
): Promise<string> {
  if (current) return current;
  if (!ctx.io.canPrompt()) throw new UsageError(`${what} is required: pass ${flag}`);
  const p = await ctx.prompter();
  return (
    await p.input(`${what}:`, { default: def, validate: (v) => (!v.trim() ? `${what} is required` : (validate?.(v.trim()) ?? true)) })
  ).trim();
}

const validUrl = (v: string) => (normalizeServerUrl(v) ? true : 'enter an http:// or https:// URL');

/** TOTP codes are digits; anything else given to --mfa-code-stdin is taken as a recovery code. */
function guessMethod(code: string): MfaMethod {
  return /^\d{6,8}$/.test(code) ? 'totp' : 'recovery';
}

/** The up-front second-factor code from flags (stdin is read with the password). */
function mfaFromFlags(o: LoginOpts): MfaAnswer | undefined {
  const given = [o.totpCode !== undefined, o.recoveryCode !== undefined, Boolean(o.mfaCodeStdin)].filter(Boolean).length;
  if (given > 1) throw new UsageError('pass only one of --totp-code, --recovery-code and --mfa-code-stdin');
  if (o.mfaMethod && !o.mfaCodeStdin) throw new UsageError('--mfa-method goes with --mfa-code-stdin');
  if (o.totpCode !== undefined) {
    const code = o.totpCode.replace(/\s+/g, '');
    if (!/^\d{6,8}$/.test(code)) throw new UsageError('--totp-code must be the digits your authenticator app shows');
    return { method: 'totp', code };
  }
  if (o.recoveryCode !== undefined) {
    if (!o.recoveryCode.trim()) throw new UsageError('--recovery-code is empty');
    return { method: 'recovery', code: o.recoveryCode.trim() };
  }
  return undefined;
}

export function registerLogin(program: Command): void {
  verb<LoginOpts>(
    program,
    {
      name: 'login',
      summary: 'Log in to a Fleet server and save the profile',
      description:
        'Log in with a username and password (and a second factor when the account has one).\n' +
        'The URL, environment and username come from flags, the environment (FLEETCTL_URL, FLEETCTL_ENV),\n' +
        'the profile, or prompts at a terminal. The password comes from a prompt or --password-stdin;\n' +
        'it is never accepted as an argument.\n\n' +
        'Second factor: at a terminal you choose TOTP or a recovery code and type it (3 tries). In scripts\n' +
        'pass --totp-code or --recovery-code, or --mfa-code-stdin with --password-stdin (two lines on\n' +
        'stdin: the password, then the code). Without them and without a terminal, login exits 4.\n\n' +
        'The token is saved in the OS keychain (service "fleetctl", one entry per profile); where no\n' +
        'keychain is usable, or with --insecure-storage, in a 0600 file in the config directory.',
      examples: [
        'fleetctl login',
        'fleetctl login --url http://127.0.0.1:8080 --env prod --username admin',
        'printf %s "$FLEET_PASSWORD" | fleetctl login --url https://fleet.example.com --env staging --username ci-bot --password-stdin',
        'printf %s "$FLEET_PASSWORD" | fleetctl login --username mfa-user --password-stdin --totp-code "$(oathtool --totp -b "$SECRET")"',
        'printf \'%s\\n%s\\n\' "$FLEET_PASSWORD" "$RECOVERY_CODE" | fleetctl login --username mfa-user --password-stdin --mfa-code-stdin',
        'fleetctl login --profile staging --url https://staging.example.com --env staging',
      ],
    },
    (cmd) =>
      cmd
        .option('-u, --username <name>', 'user to log in as')
        .option('--password-stdin', 'read the password from standard input')
        .option('--exp-hours <n>', 'token lifetime in hours (1-720; server default 3)', (v) => {
          if (!/^\d+$/.test(v)) throw new UsageError(`--exp-hours must be an integer, got "${v}"`);
          return Number(v);
        })
        .option('--totp-code <code>', 'TOTP code for an account with a second factor (no prompt)')
        .option('--recovery-code <code>', 'recovery code for an account with a second factor (no prompt)')
        .option('--mfa-code-stdin', 'read the second-factor code from stdin (the line after the password with --password-stdin)')
        .addOption(
          choiceOption(
            '--mfa-method <method>',
            'method of the --mfa-code-stdin code (default: totp for digits, else recovery)',
            MfaMethods,
          ),
        ),
    async (ctx, _args, opts) => {
      if (!isValidProfileName(ctx.profileName)) {
        throw new UsageError(`invalid profile name "${ctx.profileName}": use letters, digits, ".", "_" and "-"`);
      }
      if (ctx.env.FLEETCTL_TOKEN) ctx.io.err('note: FLEETCTL_TOKEN is set: commands use it instead of the token this login saves.\n');
      let mfa = mfaFromFlags(opts);
      if (opts.mfaCodeStdin && !opts.passwordStdin) {
        throw new UsageError('--mfa-code-stdin reads the code after the password: use it with --password-stdin (two lines on stdin)');
      }
      const profile = ctx.profile();
      const rawUrl = await ask(ctx, ctx.url(), 'Server URL', '--url (or FLEETCTL_URL)', 'http://127.0.0.1:8080', validUrl);
      const url = normalizeServerUrl(rawUrl);
      if (!url) throw new UsageError(`invalid server URL "${rawUrl}": use http://host:port or https://host`);
      // The client refuses plain HTTP to another machine (without --insecure): say so before the
      // password is asked, not after.
      await ctx.anonymousApi(url);
      const env = await ask(ctx, ctx.envName(), 'Environment', '--env (or FLEETCTL_ENV)');
      const username = await ask(ctx, opts.username ?? profile?.username, 'Username', '--username');
      let password: string;
      if (opts.passwordStdin && opts.mfaCodeStdin) {
        const [pw, code] = (await readStdinSecretLines(ctx.io, ['the password', 'the second-factor code'])) as [string, string];
        password = pw;
        mfa = { method: opts.mfaMethod ?? guessMethod(code.trim()), code: code.trim() };
      } else if (opts.passwordStdin) {
        password = await readStdinSecret(ctx.io, 'the password');
      } else {
        if (!ctx.io.canPrompt()) throw new UsageError('a password is required: pass --password-stdin and pipe it in');
        password = await (await ctx.prompter()).password('Password:');
      }
      // The login flow (client, flavours, schemas) loads only when a login runs.
      const { learnFlavor, obtainToken, saveLogin } = await import('../../auth/login-flow.js');
      const flavor = await learnFlavor(ctx, url);
      if (flavor === 'osctrl' && mfa) {
        ctx.io.err(`note: the second-factor code is not used: osctrl servers have no second factor.\n`);
        mfa = undefined;
      }
      const input = { url, env, username, password, expHours: opts.expHours, flavor };
      const tokens = await obtainToken(ctx, input, { mfa, interactive: ctx.io.canPrompt() });
      const saved = await saveLogin(ctx, input, tokens);
      const { rememberEnvironments } = await import('../completion/dynamic.js');
      await rememberEnvironments(ctx, saved.profile);
      ctx.io.err(
        `Logged in to ${input.url} as ${username} (environment ${env}, profile ${saved.profile}).\nToken stored in ${saved.storedIn}${saved.expiresAt ? `; it expires ${saved.expiresAt}` : ''}.\n`,
      );
    },
  );

  verb(
    program,
    {
      name: 'logout',
      summary: 'End the session on the server and remove the stored token',
      description:
        'End the session of the current profile (or --profile) on the server (POST /api/v1/logout), then remove its\n' +
        'token from the keychain or the file. The profile keeps its URL, environment and username. When the server\n' +
        'cannot be reached or refuses, the local copy is removed anyway and the command says that the token stays\n' +
        "valid on the server until it expires (exit 7 when unreachable, else the error's exit code).",
      examples: ['fleetctl logout', 'fleetctl logout --profile staging'],
    },
    () => {},
    async (ctx) => {
      // Revoke first (the token is needed for that), then forget it locally whatever happened.
      let revokeError: unknown;
      let alreadyEnded = false;
      let cred: Awaited<ReturnType<Context['credential']>>;
      try {
        cred = await ctx.credential({ stored: true });
      } catch (e) {
        revokeError = e; // e.g. the keychain cannot be reached: removing says so in its own words
      }
      if (cred) {
        try {
          await (await ctx.api({ check: true, stored: true })).auth.logout();
        } catch (e) {
          if (e instanceof ApiError && e.status === 401) alreadyEnded = true;
          else revokeError = e;
        }
      }
      const { removed, where } = await removeStoredToken(ctx, ctx.profileName);
      const p = ctx.profile();
      if (p) ctx.config.set(ctx.profileName, { ...p, tokenExpiresAt: undefined });
      if (!removed) ctx.io.err(`Profile ${ctx.profileName} had no stored token.\n`);
      else if (!revokeError) {
        const server = alreadyEnded ? 'the session had already ended on the server' : 'session ended on the server';
        ctx.io.err(`Logged out of profile ${ctx.profileName} (${server}; token removed from ${where}).\n`);
      }
      if (ctx.env.FLEETCTL_TOKEN) ctx.io.err('note: FLEETCTL_TOKEN is set in the environment and still authenticates commands.\n');
      if (revokeError) {
        const m = mapError(revokeError);
        const exp = cred ? tokenExpiry(cred.token) : undefined;
        const until = exp ? `until it expires at ${new Date(exp).toISOString()}` : 'until it expires';
        throw new CliError(
          `token removed from ${where}, but the session could not be ended on the server (${m.message}): the token stays valid on the server ${until}`,
          m.exitCode,
          'to end it sooner, change your password when the server is back (`fleetctl users passwd`): that ends your other sessions',
        );
      }
    },
  );
}

/** Removes a profile's token wherever it is kept; an unreachable keychain is an error, not a silent leftover. */
export async function removeStoredToken(ctx: Context, name: string): Promise<{ removed: boolean; where: string }> {
  try {
    return await ctx.credentialStores.remove(name, ctx.config.get(name)?.credentialStore);
  } catch (e) {
    if (!(e instanceof KeychainUnavailableError)) throw e;
    throw new CliError(
      `cannot remove the token of profile "${name}" from the OS keychain: ${e.message}`,
      ExitCode.error,
      'try again where the keychain can be reached (e.g. in your desktop session)',
    );
  }
}
