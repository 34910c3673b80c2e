// Which store holds a profile's token. FLEETCTL_TOKEN always wins (see context.ts); otherwise:
// - reading or removing: the store the profile recorded at login (Profile.credentialStore);
// - saving a login: the OS keychain, unless --insecure-storage asks for the file, or the
//   keychain cannot be used here (no D-Bus session, no Secret Service, module missing, no
//   answer within 3 s): then the 0600 file, and the caller warns (once per config directory).
import type { CredentialStore, StoredCredential } from './credentials.js';
import { KeychainUnavailableError } from './credentials.js';
import { FileCredentialStore } from './file-store.js';
import { KeychainCredentialStore } from './keychain-store.js';

export type RecordedStore = 'keychain' | 'file';

/** Both stores of one run, built once so the keychain worker and its verdict are shared. */
export class CredentialStores {
  readonly file: FileCredentialStore;
  private _keychain?: KeychainCredentialStore;

  constructor(
    readonly configDir: string,
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {
    this.file = new FileCredentialStore(configDir);
  }

  get keychain(): KeychainCredentialStore {
    return (this._keychain ??= new KeychainCredentialStore(this.env));
  }

  of(kind: RecordedStore): CredentialStore {
    return kind === 'file' ? this.file : this.keychain;
  }

  /** The store that holds (or would hold) the profile's token now. */
  forProfile(recorded: RecordedStore | undefined, insecureStorage?: boolean): CredentialStore {
    if (recorded) return this.of(recorded);
    if (insecureStorage || this.keychain.unavailableReason) return this.file;
    return this.keychain;
  }

  /**
   * Saves a new login. Returns the store used and, when the keychain was wanted but could not
   * be used, why (for the fallback warning). A copy left in the other store by an earlier
   * login is removed, so a profile's token lives in exactly one place.
   */
  async save(
    profile: string,
    cred: StoredCredential,
    o: { insecureStorage?: boolean; recorded?: RecordedStore },
  ): Promise<{ store: CredentialStore; fallbackReason?: string }> {
    let fallbackReason: string | undefined;
    if (!o.insecureStorage) {
      try {
        await this.keychain.set(profile, cred);
        await this.file.delete(profile).catch(() => false); // a damaged old file must not undo this login
        return { store: this.keychain };
      } catch (e) {
        if (!(e instanceof KeychainUnavailableError)) throw e;
        fallbackReason = e.message;
      }
    }
    await this.file.set(profile, cred);
    if (o.recorded === 'keychain' && !this.keychain.unavailableReason) await this.keychain.delete(profile).catch(() => false);
    return { store: this.file, fallbackReason };
  }

  /**
   * Removes the profile's token from the store it was saved in and any copy in the file.
   * Throws KeychainUnavailableError when the token is in a keychain that cannot be reached.
   */
  async remove(profile: string, recorded: RecordedStore | undefined): Promise<{ removed: boolean; where: string }> {
    let removed = await this.file.delete(profile);
    let where = `file ${this.file.path}`;
    if (recorded === 'keychain' && (await this.keychain.delete(profile))) {
      removed = true;
      where = this.keychain.describe();
    }
    return { removed, where };
  }
}
