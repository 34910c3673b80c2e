// Logging in: password step, then (when the server asks) the second factor; the result is saved
// as the profile plus a credential in the chosen store.
import type { Context } from '../context.js';
import type { TokenResponse } from '../api/index.js';
import { ApiError, CliError, ExitCode } from '../errors.js';
import { tokenExpiry } from './credentials.js';

export interface LoginInput {
  url: string;
  env: string;
  username: string;
  password: string;
  expHours?: number;
}

export interface LoginResult {
  profile: string;
  storedIn: string;
  expiresAt?: string;
}

/** The password step. MFA challenges are surfaced as ApiError 401 `mfa_required`. */
export async function passwordLogin(ctx: Context, input: LoginInput): Promise<TokenResponse> {
  const api = ctx.anonymousApi(input.url);
  return api.auth.login(input.env, { username: input.username, password: input.password, exp_hours: input.expHours });
}

export function isMfaRequired(e: unknown): e is ApiError {
  return e instanceof ApiError && e.status === 401 && e.code === 'mfa_required';
}

/** Saves the profile and its credential; nothing is saved unless both can be. */
export async function saveLogin(ctx: Context, input: LoginInput, tokens: TokenResponse): Promise<LoginResult> {
  const store = await ctx.credentialStore();
  const exp = tokenExpiry(tokens.token);
  const expiresAt = exp ? new Date(exp).toISOString() : undefined;
  const name = ctx.profileName;
  await store.set(name, { token: tokens.token, csrfToken: tokens.csrf_token });
  ctx.config.set(name, { url: input.url, env: input.env, username: input.username, tokenExpiresAt: expiresAt, credentialStore: store.kind === 'keychain' ? 'keychain' : 'file' });
  if (!ctx.config.list()[ctx.config.currentName()]) ctx.config.use(name);
  return { profile: name, storedIn: store.describe(), expiresAt };
}

export function mfaNotPossible(): CliError {
  return new CliError(
    'this account needs a second factor: pass --totp-code CODE or --recovery-code CODE (or --mfa-code-stdin), or log in at a terminal',
    ExitCode.auth,
  );
}
