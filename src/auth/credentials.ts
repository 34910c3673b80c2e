// Where tokens live. One interface, several stores: the OS keychain, a 0600 file, and the
// FLEETCTL_TOKEN environment variable (which always wins).
export interface StoredCredential {
  token: string;
  csrfToken: string;
}

export interface CredentialStore {
  readonly kind: 'keychain' | 'file' | 'env';
  /** Human description of where tokens are kept, e.g. the file path. Never the token. */
  describe(): string;
  get(profile: string): Promise<StoredCredential | undefined>;
  set(profile: string, cred: StoredCredential): Promise<void>;
  /** True when something was removed. */
  delete(profile: string): Promise<boolean>;
}

/** Expiry (ms since epoch) read from a JWT's `exp` claim, without verifying it. */
export function tokenExpiry(token: string): number | undefined {
  const payload = token.split('.')[1];
  if (!payload) return undefined;
  try {
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { exp?: unknown };
    return typeof claims.exp === 'number' ? claims.exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}
