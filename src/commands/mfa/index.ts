import { Option, type Command } from 'commander';
import { group, verb } from '../define.js';
import { ApiError, CliError, ExitCode, UsageError } from '../../errors.js';
import { printObject, printText, safeText } from '../../output/index.js';
import { readStdinSecret } from '../../prompt.js';
import { confirmDestructive } from '../confirm.js';
import { readPassword } from '../users/secrets.js';
import type { Context } from '../../context.js';
import type { FleetApi } from '../../client/index.js';
import type { TotpBeginResponse, WebauthnCredential } from '../../api/index.js';
import { printWholeList } from '../paged-list.js';

const CODE_RE = /^\d{6}$/;
const PROMPT_ATTEMPTS = 3;

function checkCode(code: string): string {
  const c = code.replace(/\s+/g, '');
  if (!CODE_RE.test(c)) throw new UsageError(`"${code}" is not a 6-digit code`);
  return c;
}

async function showEnrolment(ctx: Context, t: TotpBeginResponse): Promise<void> {
  if (ctx.io.stderr.isTTY) {
    const QRCode = (await import('qrcode')).default;
    ctx.io.err(
      `Scan this QR code with your authenticator app:\n\n${await QRCode.toString(t.otpauth_uri, { type: 'terminal', small: true })}\n`,
    );
  }
  ctx.io.err(`URI:    ${t.otpauth_uri}\nSecret: ${t.secret}   (to type in by hand)\n`);
}

/** Recovery codes go to stdout exactly once; the warning to keep them goes to stderr. */
async function showRecoveryCodes(
  ctx: Context,
  codes: string[],
  lead = 'Two-factor authentication (TOTP) is on: logins now ask for a code.',
): Promise<void> {
  ctx.io.err(
    `\n${lead}\n` +
      `Store these ${codes.length} recovery codes somewhere safe. Each one logs you in once without your\n` +
      `authenticator app, and they will NOT be shown again.\n\n`,
  );
  if (ctx.wantsData()) await printObject(ctx.io, ctx.output(), { recovery_codes: codes });
  else printText(ctx.io, codes.join('\n'));
}

/** At a terminal: ask for the code until the server accepts one (a few tries). */
async function confirmInteractively(ctx: Context, api: FleetApi): Promise<string[]> {
  const p = await ctx.prompter();
  for (let attempt = 1; ; attempt++) {
    const code = await p.input('6-digit code from the app:', {
      validate: (v) => (CODE_RE.test(v.replace(/\s+/g, '')) ? true : 'enter the 6 digits the app shows'),
    });
    try {
      return (await api.mfa.totpConfirm(code.replace(/\s+/g, ''))).recovery_codes;
    } catch (e) {
      if (!(e instanceof ApiError && e.code === 'mfa_invalid') || attempt >= PROMPT_ATTEMPTS) throw e;
      ctx.io.err('That code was not accepted (check the time on your device); try the next one.\n');
    }
  }
}

const WEBAUTHN_COLUMNS = [
  { key: 'id', header: 'ID' },
  { key: 'name', header: 'NAME' },
  { key: 'created_at', header: 'CREATED', kind: 'time' as const },
  { key: 'last_used_at', header: 'LAST USED', kind: 'time' as const },
];

export function registerMfa(program: Command): void {
  const mfa = group(program, {
    name: 'mfa',
    summary: 'Your second factors: TOTP (authenticator app) and WebAuthn keys',
    examples: ['fleetctl mfa status', 'fleetctl mfa totp setup', 'fleetctl mfa recovery-codes regenerate', 'fleetctl mfa webauthn list'],
  });

  verb(
    mfa,
    {
      name: 'status',
      summary: 'Show which second factors your account has',
      examples: ['fleetctl mfa status', 'fleetctl mfa status -o json'],
    },
    () => {},
    async (ctx) => {
      const api = await ctx.api();
      const me = await api.users.me();
      const { totp, webauthn, recovery_codes } = me.mfa;
      await printObject(ctx.io, ctx.output(), {
        username: me.username,
        totp,
        webauthn,
        ...(recovery_codes === undefined ? {} : { recovery_codes }),
      });
    },
  );

  registerTotp(mfa);

  registerRecoveryCodes(mfa);

  registerWebauthn(mfa);
}

function registerTotp(mfa: Command): void {
  const totp = group(mfa, {
    name: 'totp',
    summary: 'Set up or turn off a TOTP authenticator app',
    examples: ['fleetctl mfa totp setup', 'fleetctl mfa totp disable'],
  });

  verb<{ codeStdin?: boolean }>(
    totp,
    {
      name: 'setup',
      aliases: ['enable'],
      summary: 'Enrol an authenticator app and get recovery codes',
      description:
        'Start TOTP enrolment: shows a QR code (at a terminal), the otpauth URI and the secret on stderr, ' +
        'then asks for a code from the app to confirm it. Once confirmed, prints 10 single-use recovery ' +
        'codes on stdout, once.\n\n' +
        'Scripts: with --code-stdin the code is read from stdin (until EOF) after the secret is shown.\n\n' +
        'Without a terminal and without --code-stdin, the enrolment is only started: the secret and URI ' +
        'are printed on stdout, and `fleetctl mfa totp confirm --code CODE` finishes it.',
      examples: [
        'fleetctl mfa totp setup',
        'secret=$(fleetctl mfa totp setup --jq .secret) && fleetctl mfa totp confirm --code "$(oathtool --totp -b "$secret")"',
      ],
    },
    (cmd) => cmd.option('--code-stdin', 'read the confirmation code from stdin after the secret is shown'),
    async (ctx, _args, o) => {
      const api = await ctx.api();
      api.need('mfa');
      const interactive = !o.codeStdin && ctx.io.canPrompt();
      const begun = await api.mfa.totpBegin().catch((e: unknown) => {
        if (e instanceof ApiError && e.status === 409)
          throw new CliError(
            `${e.message} (${e.code}, HTTP 409)`,
            ExitCode.conflict,
            'TOTP is already on: `fleetctl mfa totp disable` first to enrol another authenticator',
          );
        throw e;
      });
      if (!interactive && !o.codeStdin) {
        await printObject(ctx.io, ctx.output(), begun);
        ctx.io.err('TOTP is not on yet: add the secret to your authenticator, then run `fleetctl mfa totp confirm --code CODE`.\n');
        return;
      }
      await showEnrolment(ctx, begun);
      const codes = interactive
        ? await confirmInteractively(ctx, api)
        : (await api.mfa.totpConfirm(checkCode(await readStdinSecret(ctx.io, 'the code')))).recovery_codes;
      await showRecoveryCodes(ctx, codes);
    },
  );

  verb<{ code?: string; codeStdin?: boolean }>(
    totp,
    {
      name: 'confirm',
      summary: 'Finish a started enrolment with a code from the app',
      description:
        'Finish the enrolment started by `fleetctl mfa totp setup` (when it could not ask for the code): ' +
        'sends a code from the app and prints the 10 recovery codes on stdout, once.',
      examples: ['fleetctl mfa totp confirm', 'oathtool --totp -b "$secret" | fleetctl mfa totp confirm --code-stdin'],
    },
    (cmd) =>
      cmd
        .option('--code <code>', 'the 6-digit code the app shows (valid for 30 seconds, used once)')
        .addOption(new Option('--code-stdin', 'read the code from stdin').conflicts('code')),
    async (ctx, _args, o) => {
      const api = await ctx.api();
      api.need('mfa');
      let code: string;
      if (o.code !== undefined) code = checkCode(o.code);
      else if (o.codeStdin) code = checkCode(await readStdinSecret(ctx.io, 'the code'));
      else if (ctx.io.canPrompt()) return showRecoveryCodes(ctx, await confirmInteractively(ctx, api));
      else throw new UsageError('a code is required: pass --code CODE or --code-stdin');
      const confirmed = await api.mfa.totpConfirm(code).catch((e: unknown) => {
        if (e instanceof ApiError && e.status === 400)
          throw new CliError(`${e.message} (${e.code}, HTTP 400)`, ExitCode.error, 'start with `fleetctl mfa totp setup`');
        throw e;
      });
      await showRecoveryCodes(ctx, confirmed.recovery_codes);
    },
  );

  verb<{ passwordStdin?: boolean }>(
    totp,
    {
      name: 'disable',
      aliases: ['off'],
      summary: 'Turn TOTP off (and void the recovery codes)',
      description: 'Turn TOTP off for your account and void its recovery codes. Needs your password (prompt, or --password-stdin).',
      examples: ['fleetctl mfa totp disable', 'printf %s "$PW" | fleetctl mfa totp disable --password-stdin'],
    },
    (cmd) => cmd.option('--password-stdin', 'read your password from standard input'),
    async (ctx, _args, o) => {
      const api = await ctx.api();
      api.need('mfa');
      const password = await readPassword(ctx, o.passwordStdin, 'Your password:');
      const res = await api.mfa.totpDisable(password);
      ctx.io.err(`${safeText(res.message)}\n`);
    },
  );
}

function registerRecoveryCodes(mfa: Command): void {
  const recovery = group(mfa, {
    name: 'recovery-codes',
    summary: 'Replace your TOTP recovery codes',
    examples: [
      'fleetctl mfa recovery-codes regenerate',
      'printf %s "$PW" | fleetctl mfa recovery-codes regenerate --yes --password-stdin > codes.txt',
    ],
  });

  verb<{ yes?: boolean; passwordStdin?: boolean }>(
    recovery,
    {
      name: 'regenerate',
      summary: 'Void your recovery codes and print ten new ones (once)',
      description:
        'Replace your recovery codes with ten new ones: the old codes, used or not, stop working at once. ' +
        'Needs TOTP to be on and your password (prompt, or --password-stdin); asks for confirmation at a ' +
        'terminal (--yes otherwise). The new codes go to stdout, once. `fleetctl mfa status` shows how many are left.',
      examples: [
        'fleetctl mfa recovery-codes regenerate',
        'printf %s "$PW" | fleetctl mfa recovery-codes regenerate --yes --password-stdin > codes.txt',
      ],
    },
    (cmd) => cmd.option('-y, --yes', 'do not ask for confirmation').option('--password-stdin', 'read your password from standard input'),
    async (ctx, _args, o) => {
      const api = await ctx.api();
      await confirmDestructive(ctx, o.yes, 'Replace your recovery codes? The current ones stop working.');
      const password = await readPassword(ctx, o.passwordStdin, 'Your password:');
      const res = await api.mfa.recoveryCodesRegenerate(password);
      await showRecoveryCodes(ctx, res.recovery_codes, 'New recovery codes: the previous ones no longer work.');
    },
  );
}

function registerWebauthn(mfa: Command): void {
  const webauthn = group(mfa, {
    name: 'webauthn',
    summary: 'List or remove your WebAuthn keys (registered in a browser)',
    examples: ['fleetctl mfa webauthn list', 'fleetctl mfa webauthn show cred-1a2b'],
  });

  verb(
    webauthn,
    {
      name: 'list',
      aliases: ['ls'],
      summary: 'List your WebAuthn credentials',
      examples: ['fleetctl mfa webauthn list', 'fleetctl mfa webauthn list -o json'],
    },
    () => {},
    async (ctx) => {
      const api = await ctx.api();
      api.need('mfa');
      await printWholeList<WebauthnCredential>(
        ctx,
        await api.mfa.webauthnList(),
        WEBAUTHN_COLUMNS,
        'No WebAuthn keys (they are registered in a browser)',
      );
    },
  );

  verb(
    webauthn,
    {
      name: 'show',
      aliases: ['get'],
      summary: 'Show one of your WebAuthn credentials',
      examples: ['fleetctl mfa webauthn show cred-1a2b', 'fleetctl mfa webauthn show cred-1a2b -o json'],
    },
    (cmd) => cmd.argument('<id>', 'credential ID (see `fleetctl mfa webauthn list`)'),
    async (ctx, [id]) => {
      const api = await ctx.api();
      const cred = (await api.mfa.webauthnList()).find((c) => c.id === id);
      if (!cred) throw new CliError(`no WebAuthn credential "${id}"`, ExitCode.notFound, 'run `fleetctl mfa webauthn list` to see yours');
      await printObject(ctx.io, ctx.output(), cred, ctx.wantsData() ? [] : WEBAUTHN_COLUMNS);
    },
  );

  verb<{ yes?: boolean; passwordStdin?: boolean }>(
    webauthn,
    {
      name: 'remove',
      aliases: ['rm', 'delete'],
      summary: 'Remove one of your WebAuthn credentials',
      description:
        'Remove a WebAuthn credential (see `fleetctl mfa webauthn list` for IDs). Asks for confirmation at a ' +
        'terminal (--yes otherwise) and needs your password (prompt, or --password-stdin).',
      examples: [
        'fleetctl mfa webauthn remove cred-1a2b',
        'printf %s "$PW" | fleetctl mfa webauthn remove cred-3c4d --yes --password-stdin',
      ],
    },
    (cmd) =>
      cmd
        .argument('<id>', 'credential ID')
        .option('-y, --yes', 'do not ask for confirmation')
        .option('--password-stdin', 'read your password from standard input'),
    async (ctx, [id], o) => {
      const api = await ctx.api();
      api.need('mfa');
      await confirmDestructive(ctx, o.yes, `Remove WebAuthn credential ${id}?`);
      const password = await readPassword(ctx, o.passwordStdin, 'Your password:');
      const res = await api.mfa.webauthnRemove(id, password);
      if (ctx.wantsData()) await printObject(ctx.io, ctx.output(), { id, removed: true, message: res.message });
      else ctx.io.err(`${safeText(res.message)}\n`);
    },
  );
}
