import type { Command } from 'commander';
import { group, verb } from '../define.js';
import { CliError, ExitCode } from '../../errors.js';
import { tokenExpiry } from '../../auth/credentials.js';
import { printObject } from '../../output/index.js';

export function registerAuth(program: Command): void {
  const auth = group(program, {
    name: 'auth',
    summary: 'Show the login state of a profile',
    examples: ['fleetctl auth status', 'fleetctl auth status --json'],
  });

  verb(
    auth,
    {
      name: 'status',
      summary: 'Show profile, server, environment, user, token expiry and where the token is stored',
      description: 'Show the login state of the current profile (never the token itself). Exits 4 when not logged in.',
      examples: ['fleetctl auth status', 'fleetctl auth status --profile staging -o json'],
    },
    () => {},
    async (ctx) => {
      const p = ctx.profile();
      const fromEnv = Boolean(ctx.env.FLEETCTL_TOKEN);
      const cred = await ctx.credential();
      const store = await ctx.credentialStore();
      const exp = cred ? tokenExpiry(cred.token) : undefined;
      const now = Date.now();
      const status = {
        profile: ctx.profileName,
        url: ctx.url() ?? '',
        env: ctx.envName() ?? '',
        username: p?.username ?? '',
        logged_in: Boolean(cred) && (exp === undefined || exp > now),
        token_expires_at: exp ? new Date(exp).toISOString() : '',
        token_expired: exp !== undefined && exp <= now,
        token_source: fromEnv ? 'environment variable FLEETCTL_TOKEN' : cred ? store.describe() : '',
      };
      await printObject(ctx.io, ctx.output(), status);
      if (!status.logged_in) {
        throw new CliError(status.token_expired ? 'the token has expired' : 'not logged in', ExitCode.auth, 'run `fleetctl login` to sign in');
      }
    },
  );
}
