// FLEETCTL_TOKEN: a token handed in by the environment (CI). It wins over any stored token and
// is never written or removed by fleetctl.
import type { CredentialStore, StoredCredential } from './credentials.js';

export class EnvCredentialStore implements CredentialStore {
  readonly kind = 'env' as const;

  constructor(private readonly token: string) {}

  describe(): string {
    return 'environment variable FLEETCTL_TOKEN';
  }

  async get(): Promise<StoredCredential> {
    // Bearer clients may omit X-CSRF-Token (contract.md 2), so no csrf token is needed here.
    return { token: this.token, csrfToken: '' };
  }

  async set(): Promise<void> {
    throw new Error('FLEETCTL_TOKEN is read-only: unset it to save a login');
  }

  async delete(): Promise<boolean> {
    return false;
  }
}
