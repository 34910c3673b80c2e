// Where tokens live. One interface, several stores: the OS keychain, a 0600 file, and the
// FLEETCTL_TOKEN environment variable (which always wins).
export interface StoredCredential {
  token: string;
  csrfToken: string;
}

export type StoreKind = 'keychain' | 'file' | 'env';

export interface CredentialStore {
  readonly kind: StoreKind;
  /** Human description of where tokens are kept, e.g. the file path. Never the token. */
  describe(): string;
  get(profile: string): Promise<StoredCredential | undefined>;
  set(profile: string, cred: StoredCredential): Promise<void>;
  /** True when something was removed. */
  delete(profile: string): Promise<boolean>;
}

/**
 * The OS keychain cannot be used in this session (no D-Bus session, no Secret Service, the
 * native module is missing, or it did not answer in time). Never carries a secret.
 */
export class KeychainUnavailableError extends Error {
  override name = 'KeychainUnavailableError';
}

function claims(token: string): Record<string, unknown> | undefined {
  const payload = token.split('.')[1];
  if (!payload) return undefined;
  try {
    const v = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as unknown;
    return v && typeof v === 'object' ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** Expiry (ms since epoch) read from a JWT's `exp` claim, without verifying it. */
export function tokenExpiry(token: string): number | undefined {
  const exp = claims(token)?.exp;
  return typeof exp === 'number' ? exp * 1000 : undefined;
}

/** The user a JWT was issued to (`sub`), without verifying it. */
export function tokenSubject(token: string): string | undefined {
  // osctrl's tokens name the user in `username`, not `sub`.
  const c = claims(token);
  const sub = c?.sub ?? c?.username;
  return typeof sub === 'string' && sub ? sub : undefined;
}

/** A stored credential as text (keychain entries hold one string) and back. */
export function encodeCredential(cred: StoredCredential): string {
  return JSON.stringify({ token: cred.token, csrfToken: cred.csrfToken });
}

export function decodeCredential(text: string): StoredCredential | undefined {
  try {
    const v = JSON.parse(text) as Partial<StoredCredential>;
    if (typeof v.token === 'string' && v.token) return { token: v.token, csrfToken: typeof v.csrfToken === 'string' ? v.csrfToken : '' };
  } catch {
    /* not ours, or damaged: treated as absent */
  }
  return undefined;
}
