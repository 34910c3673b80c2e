import type { Command } from 'commander';
import { verb } from '../define.js';
import { UsageError } from '../../errors.js';
import { readStdinSecret } from '../../prompt.js';
import { isMfaRequired, mfaNotPossible, passwordLogin, saveLogin } from '../../auth/login-flow.js';
import type { Context } from '../../context.js';

interface LoginOpts {
  username?: string;
  passwordStdin?: boolean;
  expHours?: number;
}

async function ask(ctx: Context, current: string | undefined, what: string, flag: string, def?: string): Promise<string> {
  if (current) return current;
  if (!ctx.io.canPrompt()) throw new UsageError(`${what} is required: pass ${flag}`);
  const p = await ctx.prompter();
  return p.input(`${what}:`, { default: def, validate: (v) => (v.trim() ? true : `${what} is required`) });
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
        'it is never accepted as an argument.',
      examples: [
        'fleetctl login',
        'fleetctl login --url http://127.0.0.1:8080 --env prod --username admin',
        'printf %s "$FLEET_PASSWORD" | fleetctl login --url https://fleet.example.com --env prod --username ci-bot --password-stdin',
      ],
    },
    (cmd) =>
      cmd
        .option('-u, --username <name>', 'user to log in as')
        .option('--password-stdin', 'read the password from standard input')
        .option('--exp-hours <n>', 'token lifetime in hours (1-720; server default 3)', (v) => {
          if (!/^\d+$/.test(v)) throw new UsageError(`--exp-hours must be an integer, got "${v}"`);
          return Number(v);
        }),
    async (ctx, _args, opts) => {
      const profile = ctx.profile();
      const url = await ask(ctx, ctx.url(), 'Server URL', '--url (or FLEETCTL_URL)', 'http://127.0.0.1:8080');
      const env = await ask(ctx, ctx.envName(), 'Environment', '--env (or FLEETCTL_ENV)');
      const username = await ask(ctx, opts.username ?? profile?.username, 'Username', '--username');
      let password: string;
      if (opts.passwordStdin) password = await readStdinSecret(ctx.io, 'the password');
      else {
        if (!ctx.io.canPrompt()) throw new UsageError('a password is required: pass --password-stdin and pipe it in');
        password = await (await ctx.prompter()).password('Password:');
      }
      const input = { url: url.replace(/\/+$/, ''), env, username, password, expHours: opts.expHours };
      let tokens;
      try {
        tokens = await passwordLogin(ctx, input);
      } catch (e) {
        if (isMfaRequired(e)) throw mfaNotPossible();
        throw e;
      }
      const saved = await saveLogin(ctx, input, tokens);
      ctx.io.err(`Logged in to ${input.url} as ${username} (environment ${env}, profile ${saved.profile}).\nToken stored in ${saved.storedIn}${saved.expiresAt ? `; it expires ${saved.expiresAt}` : ''}.\n`);
    },
  );

  verb(
    program,
    {
      name: 'logout',
      summary: 'Remove the stored token of the profile',
      description: 'Remove the stored token of the current profile (or --profile). The profile keeps its URL, environment and username.',
      examples: ['fleetctl logout', 'fleetctl logout --profile staging'],
    },
    () => {},
    async (ctx) => {
      const store = await ctx.credentialStore();
      const removed = await store.delete(ctx.profileName);
      const p = ctx.profile();
      if (p) ctx.config.set(ctx.profileName, { ...p, tokenExpiresAt: undefined });
      ctx.io.err(removed ? `Logged out of profile ${ctx.profileName} (token removed from ${store.describe()}).\n` : `Profile ${ctx.profileName} had no stored token.\n`);
      if (ctx.env.FLEETCTL_TOKEN) ctx.io.err('note: FLEETCTL_TOKEN is set in the environment and still authenticates commands.\n');
    },
  );
}
