// Tokens in a 0600 JSON file inside the 0700 config directory: the fallback where no keychain
// is usable (CI, SSH, containers), or the choice of --insecure-storage.
import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CredentialStore, StoredCredential } from './credentials.js';

export class FileCredentialStore implements CredentialStore {
  readonly kind = 'file' as const;
  readonly path: string;

  constructor(readonly dir: string) {
    this.path = join(dir, 'credentials.json');
  }

  describe(): string {
    return `file ${this.path}`;
  }

  private read(): Record<string, StoredCredential> {
    try {
      return JSON.parse(readFileSync(this.path, 'utf8')) as Record<string, StoredCredential>;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return {};
      throw new Error(`cannot read credentials file ${this.path}: ${(e as Error).message}`);
    }
  }

  private write(all: Record<string, StoredCredential>): void {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    const tmp = `${this.path}.${process.pid}.tmp`;
    // Created 0600 before any secret is written; renamed into place so readers never see half a file.
    writeFileSync(tmp, `${JSON.stringify(all, null, 2)}\n`, { mode: 0o600 });
    chmodSync(tmp, 0o600);
    renameSync(tmp, this.path);
  }

  async get(profile: string): Promise<StoredCredential | undefined> {
    return this.read()[profile];
  }

  async set(profile: string, cred: StoredCredential): Promise<void> {
    this.write({ ...this.read(), [profile]: cred });
  }

  async delete(profile: string): Promise<boolean> {
    const all = this.read();
    if (!(profile in all)) return false;
    delete all[profile];
    this.write(all);
    return true;
  }
}
