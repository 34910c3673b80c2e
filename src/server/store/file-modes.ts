// The database holds the JWT signing secret, password hashes, TOTP seeds, enroll secrets and node
// keys: it and its -wal/-shm companions are private to the server's user (0600, directory 0700).
// A file that other users could read may already have leaked the signing secret; chmod alone does
// not un-leak it, so such a file is refused until --fix-permissions tightens it AND rotates the
// secret (which ends every session).
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { ServerSetupError } from '../setup-error.js';

const enforced = process.platform !== 'win32';
const octal = (mode: number) => (mode & 0o777).toString(8).padStart(4, '0');

/** A secret-holding file other users can reach: the server refuses to start on it. */
export class UnsafeFileError extends ServerSetupError {}

/** The database and the files SQLite keeps beside it (WAL mode). */
export const databaseFiles = (path: string) => [path, `${path}-wal`, `${path}-shm`];

/**
 * Creates the database's directory (0700, only the levels this call creates) and the file itself
 * (0600) when missing, so SQLite never creates it with its default 0644; SQLite gives -wal and
 * -shm the database file's mode. Returns the files that were open to other users (empty when all
 * is well); with `fix` they are chmod 0600 first, else an UnsafeFileError says how to fix it.
 */
export function prepareDatabaseFile(path: string, fix: boolean, fixHint: string): string[] {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  if (!existsSync(path)) {
    closeSync(openSync(path, 'a', 0o600));
    if (enforced) chmodSync(path, 0o600);
    return [];
  }
  if (!enforced) return [];
  const open = databaseFiles(path).filter((f) => existsSync(f) && (statSync(f).mode & 0o077) !== 0);
  if (open.length === 0) return [];
  if (!fix) {
    const mode = octal(statSync(open[0]).mode);
    throw new UnsafeFileError(
      `refusing to start: database ${open[0]} is open to other users (mode ${mode}) and holds the JWT signing secret, which may have leaked; ` +
        `run ${fixHint} once to make it 0600 and rotate the secret (this ends every session)`,
    );
  }
  for (const f of open) chmodSync(f, 0o600);
  return open;
}

/**
 * Another secret file (the TLS private key): refused when every user can read it. Group-read is
 * allowed: Debian's ssl-cert group convention (/etc/ssl/private, 0640 root:ssl-cert) relies on it.
 * The server does not chmod files it does not own, and cannot rotate a key: the operator does both.
 */
export function checkPrivateKeyFile(path: string, what: string): void {
  if (!enforced || !existsSync(path)) return; // a missing file is reported when it is read
  const mode = statSync(path).mode;
  if ((mode & 0o007) !== 0) {
    throw new UnsafeFileError(
      `refusing to start: ${what} ${path} is open to every user (mode ${octal(mode)}); run chmod 600 ${path} (and replace the key if others may have read it)`,
    );
  }
}
