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
    let text: string;
    try {
      text = readFileSync(this.path, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return {};
      throw new Error(`cannot read credentials file ${this.path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
    try {
      const all = JSON.parse(text) as unknown;
      if (all && typeof all === 'object' && !Array.isArray(all)) return all as Record<string, StoredCredential>;
    } catch {
      // JSON.parse quotes the text it choked on, which here would be a token: never shown.
    }
    throw new Error(`credentials file ${this.path} is damaged (not a JSON object): remove it and log in again`);
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
    const all = this.read();
    return Object.hasOwn(all, profile) ? all[profile] : undefined;
  }

  async set(profile: string, cred: StoredCredential): Promise<void> {
    this.write({ ...this.read(), [profile]: cred });
  }

  async delete(profile: string): Promise<boolean> {
    const all = this.read();
    if (!Object.hasOwn(all, profile)) return false;
    delete all[profile];
    this.write(all);
    return true;
  }
}
