// `users passwd`: change your own password (4.3). The change ends the user's other sessions. The
// reference server keeps the token that made the call working; a server that ends that one too
// (contract.md reads "tokens issued before it") is detected, and the profile logged in again
// with the new password so the next command still works.
import type { Command } from 'commander';
import { verb } from '../define.js';
import { PASSWORD_MIN_LENGTH } from '../../api/constants.js';
import { ApiError, UsageError } from '../../errors.js';
import type { FleetApi } from '../../client/index.js';
import type { Context } from '../../context.js';
import { readStdinSecretLines } from '../../prompt.js';
import { checkNewPassword, promptNewPassword } from './secrets.js';
import { safeText } from '../../output/index.js';

async function keepLoggedIn(ctx: Context, api: FleetApi, password: string): Promise<void> {
  if (!api.traits.passwordChangeEndsSessions) {
    // osctrl: the change ends no session, so none of them needs a new login either.
    ctx.io.err('This server ends no session on a password change: your sessions, this one included, stay valid until they expire.\n');
    return;
  }
  try {
    await api.users.me();
    ctx.io.err('Your other sessions have ended; this one continues.\n');
    return;
  } catch (e) {
    if (!(e instanceof ApiError && e.status === 401)) throw e;
  }
  const profile = ctx.profile();
  if (ctx.env.FLEETCTL_TOKEN || !profile?.url || !profile.env || !profile.username) {
    ctx.io.err('Sessions started before the change have ended: log in again with the new password.\n');
    return;
  }
  const input = { url: profile.url, env: profile.env, username: profile.username, password };
  const { isMfaRequired, passwordLogin, saveLogin } = await import('../../auth/login-flow.js');
  try {
    await saveLogin(ctx, input, await passwordLogin(ctx, input));
    ctx.io.err(`Sessions started before the change have ended; profile ${ctx.profileName} is logged in again with the new password.\n`);
  } catch (e) {
    const why = isMfaRequired(e) ? 'your account needs a second factor' : (e as Error).message;
    ctx.io.err(`Sessions started before the change have ended (${why}): run \`fleetctl login\` to sign in again.\n`);
  }
}

export function registerPasswd(users: Command): void {
  verb<{ passwordStdin?: boolean }>(
    users,
    {
      name: 'passwd',
      summary: 'Change your own password',
      description:
        'Change the password of the user you are logged in as. At a terminal it asks for the current ' +
        'password, then the new one twice. With --password-stdin it reads two lines from stdin: the ' +
        `current password, then the new one (at least ${PASSWORD_MIN_LENGTH} characters, checked before anything is sent). The change ends your other\n` +
        'sessions; this profile stays logged in. (osctrl ends no session on a password change: the command says so.)',
      examples: ['fleetctl users passwd', 'printf \'%s\\n%s\\n\' "$OLD" "$NEW" | fleetctl users passwd --password-stdin'],
    },
    (cmd) => cmd.option('--password-stdin', 'read two lines from stdin: current password, then new password'),
    async (ctx, _args, o) => {
      const api = await ctx.api();
      let current: string;
      let next: string;
      if (o.passwordStdin) {
        [current, next] = (await readStdinSecretLines(ctx.io, ['the current password', 'the new password'])) as [string, string];
        checkNewPassword(next);
      } else {
        if (!ctx.io.canPrompt()) throw new UsageError('passwords are required: pass --password-stdin and pipe two lines (current, new)');
        const p = await ctx.prompter();
        current = await p.password('Current password:');
        next = await promptNewPassword(ctx);
      }
      const res = await api.users.changeOwnPassword({ current_password: current, new_password: next });
      ctx.io.err(`${safeText(res.message)}\n`);
      await keepLoggedIn(ctx, api, next);
    },
  );
}
