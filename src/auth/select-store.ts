// Chooses the credential store for this run. FLEETCTL_TOKEN always wins (see context.ts);
// otherwise the profile's recorded store, or the default.
import type { CredentialStore } from './credentials.js';
import { FileCredentialStore } from './file-store.js';

export interface StoreChoice {
  configDir: string;
  /** The user asked for the file on purpose (--insecure-storage). */
  insecureStorage?: boolean;
  /** Where the profile's token was saved last time. */
  recorded?: 'keychain' | 'file';
  warn: (message: string) => void;
}

export async function selectCredentialStore(choice: StoreChoice): Promise<CredentialStore> {
  return new FileCredentialStore(choice.configDir);
}
