// Logging in: password step, then (when the server asks) the second factor; the result is saved
// as the profile plus a credential in the chosen store.
import type { Context } from '../context.js';
import { MfaMethods } from '../api/constants.js';
import type { MfaMethod, TokenResponse } from '../api/index.js';
import { ApiError, CliError, ExitCode, InterruptedError } from '../errors.js';
import { tokenExpiry, type StoredCredential } from './credentials.js';
import { sessionEnded } from './session-end.js';
import { detectFlavor, type ServerFlavor } from '../client/index.js';

export interface LoginInput {
  url: string;
  env: string;
  username: string;
  password: string;
  expHours?: number;
  /** The server's flavour (learned before the password step; see learnFlavor). */
  flavor?: ServerFlavor;
}

export interface LoginResult {
  profile: string;
  storedIn: string;
  expiresAt?: string;
}

/** A second-factor code given up front (--totp-code, --recovery-code, --mfa-code-stdin). */
export interface MfaAnswer {
  method: MfaMethod;
  code: string;
}

export interface ObtainOptions {
  /** Used once, without prompting; a wrong code ends the login. */
  mfa?: MfaAnswer;
  /** Prompts allowed: method choice, code retries, the password again after an expired challenge. */
  interactive: boolean;
}

/** Wrong codes allowed at a prompt before giving up (the server burns a challenge at 5). */
export const MAX_CODE_TRIES = 3;
/** Password steps in one login (a challenge that expires sends the user back to the password). */
const MAX_PASSWORD_ROUNDS = 3;

/** --server-flavor / FLEETCTL_SERVER_FLAVOR, else one anonymous probe of the server (src/client/flavors). */
export async function learnFlavor(ctx: Context, url: string): Promise<ServerFlavor> {
  return ctx.flavorOverride() ?? detectFlavor((await ctx.anonymousApi(url, 'fleet')).http);
}

/**
 * The password step. MFA challenges are surfaced as ApiError 401 `mfa_required`. Any other 401
 * is a refused login: its hint is about the credentials, not "run fleetctl login" (the user is
 * running it).
 */
export async function passwordLogin(ctx: Context, input: LoginInput): Promise<TokenResponse> {
  const api = await ctx.anonymousApi(input.url, input.flavor);
  try {
    return await api.auth.login(input.env, { username: input.username, password: input.password, exp_hours: input.expHours });
  } catch (e) {
    if (e instanceof ApiError && e.status === 401 && e.code !== 'mfa_required') {
      e.hint = `check the username and password for ${input.url}; nothing was saved`;
    }
    throw e;
  }
}

export function isMfaRequired(e: unknown): e is ApiError {
  return e instanceof ApiError && e.status === 401 && e.code === 'mfa_required';
}

const isApiError = (e: unknown, status: number, code: string): e is ApiError =>
  e instanceof ApiError && e.status === status && e.code === code;

export function methodLabel(m: MfaMethod): string {
  return m === 'totp' ? 'TOTP code' : 'recovery code';
}

/** The challenge and offered methods of a 401 `mfa_required` answer. */
function challengeOf(e: ApiError): { challenge: string; methods: MfaMethod[] } {
  const challenge = typeof e.body.challenge === 'string' ? e.body.challenge : '';
  if (!challenge) throw new CliError('the server asked for a second factor but sent no challenge', ExitCode.error);
  const offered = Array.isArray(e.body.methods)
    ? e.body.methods.filter((m): m is MfaMethod => (MfaMethods as readonly unknown[]).includes(m))
    : [];
  return { challenge, methods: offered.length ? offered : [...MfaMethods] };
}

/**
 * Password step, then the second factor when the server asks for one: the code given up front,
 * or (at a terminal) the method and code from prompts, with up to MAX_CODE_TRIES tries; a
 * challenge that expires meanwhile starts over from the password.
 */
export async function obtainToken(ctx: Context, input: LoginInput, o: ObtainOptions): Promise<TokenResponse> {
  const attempt = { ...input };
  for (let round = 1; ; round++) {
    let challenge: { challenge: string; methods: MfaMethod[] };
    try {
      return await passwordLogin(ctx, attempt);
    } catch (e) {
      if (!isMfaRequired(e)) throw e;
      challenge = challengeOf(e);
    }
    if (o.mfa) return noteCodesLeft(ctx, await answerOnce(ctx, attempt.url, challenge.challenge, o.mfa));
    if (!o.interactive) throw mfaNotPossible();
    const tokens = await answerAtPrompt(ctx, attempt.url, challenge.challenge, challenge.methods);
    if (tokens) return noteCodesLeft(ctx, tokens);
    if (round >= MAX_PASSWORD_ROUNDS) {
      throw new CliError('the login challenge expired again; nothing was saved', ExitCode.auth, 'run `fleetctl login` to try again');
    }
    ctx.io.err('The login challenge has expired (it lasts 5 minutes): enter your password again.\n');
    attempt.password = await (await ctx.prompter()).password('Password:');
  }
}

const FEW_CODES_LEFT = 3;

/** After a recovery-code login: how many codes are left, and what to do when few are. */
function noteCodesLeft(ctx: Context, tokens: TokenResponse): TokenResponse {
  const left = tokens.recovery_codes_left;
  if (typeof left === 'number') {
    ctx.io.err(`${left} recovery ${left === 1 ? 'code' : 'codes'} left.\n`);
    if (left <= FEW_CODES_LEFT) ctx.io.err('hint: get ten new ones with `fleetctl mfa recovery-codes regenerate`\n');
  }
  return tokens;
}

async function answerOnce(ctx: Context, url: string, challenge: string, a: MfaAnswer): Promise<TokenResponse> {
  try {
    return await (await ctx.anonymousApi(url)).auth.mfaLogin({ challenge, code: a.code, method: a.method });
  } catch (e) {
    if (isApiError(e, 403, 'mfa_invalid')) {
      throw new CliError(
        `the ${methodLabel(a.method)} was not accepted (mfa_invalid); nothing was saved`,
        ExitCode.auth,
        a.method === 'totp'
          ? 'a TOTP code changes every 30 s and is accepted only once: use the current one'
          : 'each recovery code works once: use another one',
      );
    }
    if (isApiError(e, 400, 'challenge_invalid')) {
      throw new CliError(
        'the login challenge expired before the code was sent (challenge_invalid); nothing was saved',
        ExitCode.auth,
        'run the login again',
      );
    }
    throw e;
  }
}

/** Tokens, or undefined when the challenge expired (start again from the password). */
async function answerAtPrompt(ctx: Context, url: string, challenge: string, methods: MfaMethod[]): Promise<TokenResponse | undefined> {
  const p = await ctx.prompter();
  ctx.io.err('This account has a second factor.\n');
  const method =
    methods.length > 1
      ? await p.select<MfaMethod>(
          'Second factor:',
          methods.map((m) => ({ value: m, name: m === 'totp' ? 'TOTP code from an authenticator app' : 'Recovery code' })),
        )
      : methods[0];
  const label = methodLabel(method);
  const api = await ctx.anonymousApi(url);
  for (let tries = 1; ; tries++) {
    const code =
      method === 'totp'
        ? (
            await p.input('TOTP code:', {
              validate: (v) => (/^\d{6}$/.test(v.replace(/\s+/g, '')) ? true : 'enter the 6 digits your app shows'),
            })
          ).replace(/\s+/g, '')
        : (await p.password('Recovery code:', { validate: (v) => (v.trim() ? true : 'enter one of your recovery codes') })).trim();
    try {
      return await api.auth.mfaLogin({ challenge, code, method });
    } catch (e) {
      if (isApiError(e, 400, 'challenge_invalid')) return undefined;
      if (!isApiError(e, 403, 'mfa_invalid')) throw e;
      const left = MAX_CODE_TRIES - tries;
      if (left <= 0) {
        throw new CliError(
          `the ${label} was not accepted ${MAX_CODE_TRIES} times; nothing was saved`,
          ExitCode.auth,
          'run `fleetctl login` to try again',
        );
      }
      ctx.io.err(`That ${label} was not accepted. ${left} ${left === 1 ? 'try' : 'tries'} left.\n`);
    }
  }
}

/**
 * Runs `fn` with Ctrl-C held back, so a save is never cut in half; an interrupt that arrived
 * meanwhile is honoured (exit 130) once the save is whole.
 */
async function uninterrupted<T>(fn: () => Promise<T>): Promise<T> {
  let interrupted = false;
  const hold = () => {
    interrupted = true;
  };
  process.on('SIGINT', hold);
  try {
    return await fn();
  } finally {
    process.off('SIGINT', hold);
    if (interrupted) throw new InterruptedError(); // eslint-disable-line no-unsafe-finally
  }
}

/**
 * Saves the profile and its credential; nothing is saved unless both can be. The token goes to
 * the OS keychain (or the 0600 file with --insecure-storage, or where no keychain is usable,
 * with a warning shown once per config directory).
 */
export async function saveLogin(ctx: Context, input: LoginInput, tokens: TokenResponse): Promise<LoginResult> {
  const name = ctx.profileName;
  const exp = tokenExpiry(tokens.token);
  const expiresAt = exp ? new Date(exp).toISOString() : undefined;
  const previous = ctx.profile();
  const stores = ctx.credentialStores;
  return uninterrupted(async () => {
    const { store, fallbackReason } = await stores.save(
      name,
      { token: tokens.token, csrfToken: tokens.csrf_token },
      { insecureStorage: ctx.globals.insecureStorage, recorded: previous?.credentialStore },
    );
    try {
      ctx.config.set(name, {
        url: input.url,
        env: input.env,
        username: input.username,
        tokenExpiresAt: expiresAt,
        credentialStore: store.kind === 'keychain' ? 'keychain' : 'file',
        serverFlavor: input.flavor ?? ctx.serverFlavor(),
      });
      if (!ctx.config.get(ctx.config.currentName())) ctx.config.use(name);
      if (fallbackReason && !ctx.config.noticeShown(FILE_FALLBACK_NOTICE)) {
        ctx.warnOnce('store', fileFallbackWarning(fallbackReason, stores.file.path));
        ctx.config.markNoticeShown(FILE_FALLBACK_NOTICE);
      }
    } catch (e) {
      await store.delete(name).catch(() => false);
      throw e;
    }
    return { profile: name, storedIn: store.kind === 'file' ? `file ${stores.file.path}` : store.describe(), expiresAt };
  });
}

export const FILE_FALLBACK_NOTICE = 'file-credential-fallback';

export function fileFallbackWarning(reason: string, path: string): string {
  return (
    `the OS keychain cannot be used here (${reason}); tokens are stored in the file ${path} instead ` +
    '(readable only by you, mode 0600). This warning is shown once; pass --insecure-storage to choose the file on purpose.'
  );
}

export function mfaNotPossible(): CliError {
  return new CliError(
    'this account needs a second factor: pass --totp-code CODE or --recovery-code CODE (or --mfa-code-stdin), or log in at a terminal',
    ExitCode.auth,
  );
}

/**
 * After 401 `token_expired`: at a terminal, offers to log in again to the same profile (password
 * and, when needed, second factor) and returns the new credential; otherwise throws the error
 * that says how to log in again.
 */
export async function renewSession(ctx: Context, e: ApiError): Promise<StoredCredential> {
  const p = ctx.profile();
  if (ctx.env.FLEETCTL_TOKEN || !ctx.io.canPrompt() || !p?.url || !p.env || !p.username) throw sessionEnded(ctx, e);
  ctx.io.err(`Your session for profile "${ctx.profileName}" (${p.username} at ${p.url}) has ended: ${e.message}.\n`);
  const prompter = await ctx.prompter();
  if (!(await prompter.confirm('Log in again now?', true))) throw sessionEnded(ctx, e);
  const input: LoginInput = {
    url: p.url,
    env: p.env,
    username: p.username,
    password: await prompter.password(`Password for ${p.username}:`),
  };
  const tokens = await obtainToken(ctx, input, { interactive: true });
  await saveLogin(ctx, input, tokens);
  ctx.io.err(`Logged in again as ${p.username}; retrying.\n`);
  return { token: tokens.token, csrfToken: tokens.csrf_token };
}
