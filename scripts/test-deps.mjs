#!/usr/bin/env node
// What `npm test` needs from the system, in one place (`pretest` and `.ci/run` both use it).
// Checks each tool; when some are missing: as root on Debian/Ubuntu it installs their packages
// with apt-get, otherwise it prints the exact `apt-get install` line and exits 1.
//   node scripts/test-deps.mjs           check, install as root
//   node scripts/test-deps.mjs --list    print the Debian package names (one line)
//   node scripts/test-deps.mjs --install-only   the system part only (.ci/run, before npm ci)
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** [what the tests use, how to find it, the Debian package, why]. */
const NEEDS = [
  ['python3', { cmd: 'python3' }, 'python3', 'builds the better-sqlite3 binding'],
  ['make', { cmd: 'make' }, 'make', 'builds the better-sqlite3 binding'],
  ['g++', { cmd: 'g++' }, 'g++', 'builds the better-sqlite3 binding'],
  ['openssl', { cmd: 'openssl' }, 'openssl', 'a self-signed certificate for the HTTPS tests'],
  ['dbus-run-session', { cmd: 'dbus-run-session' }, 'dbus-bin', 'a private D-Bus session for the keychain tests'],
  ['dbus-daemon', { cmd: 'dbus-daemon' }, 'dbus', 'a private D-Bus session for the keychain tests'],
  ['gnome-keyring-daemon', { cmd: 'gnome-keyring-daemon' }, 'gnome-keyring', 'a real Secret Service for the keychain tests'],
  ['secret-tool', { cmd: 'secret-tool' }, 'libsecret-tools', 'looks into the keychain in the keychain tests'],
  ['bash', { cmd: 'bash' }, 'bash', 'completion tests'],
  ['bash-completion', { file: '/usr/share/bash-completion/bash_completion' }, 'bash-completion', 'completion tests'],
  ['zsh', { cmd: 'zsh' }, 'zsh', 'completion tests'],
  ['fish', { cmd: 'fish' }, 'fish', 'completion tests'],
  ['man', { cmd: 'man' }, 'man-db', 'man page tests'],
  ['groff', { cmd: 'groff' }, 'groff-base', 'man page tests'],
  ['less', { cmd: 'less' }, 'less', 'the pager tests (a real less at a real terminal)'],
  ['PostgreSQL server', { glob: ['/usr/lib/postgresql', 'bin/initdb'] }, 'postgresql', 'the server suite on PostgreSQL (a throwaway cluster)'],
  ['pg_trgm', { glob: ['/usr/share/postgresql', 'extension/pg_trgm.control'] }, 'postgresql-contrib', 'search on PostgreSQL'],
];

const PACKAGES = [...new Set(NEEDS.map((n) => n[2]))];

function has(probe) {
  if (probe.file) return existsSync(probe.file);
  // [base, rest]: base/<any version>/rest exists (Debian keeps PostgreSQL under its major version).
  if (probe.glob) {
    const [base, rest] = probe.glob;
    return existsSync(base) && readdirSync(base).some((v) => existsSync(join(base, v, rest)));
  }
  return spawnSync('sh', ['-c', `command -v ${probe.cmd}`], { stdio: 'ignore' }).status === 0;
}

const missingTools = () => NEEDS.filter(([, probe]) => !has(probe));

if (process.argv.includes('--list')) {
  process.stdout.write(`${PACKAGES.join(' ')}\n`);
  process.exit(0);
}

let missing = missingTools();
const hasApt = spawnSync('sh', ['-c', 'command -v apt-get'], { stdio: 'ignore' }).status === 0;
if (missing.length > 0 && hasApt && process.getuid?.() === 0) {
  const pkgs = [...new Set(missing.map((m) => m[2]))];
  // One line before anything is installed, so nobody is surprised by apt-get running as root.
  process.stderr.write(`npm test: installing system packages the tests need, with apt-get as root: ${pkgs.join(' ')}\n`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  spawnSync('apt-get', ['update', '-qq'], { stdio: ['ignore', 'ignore', 'inherit'], env });
  spawnSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...pkgs], { stdio: ['ignore', 'ignore', 'inherit'], env });
  missing = missingTools();
}
if (missing.length > 0) {
  const pkgs = [...new Set(missing.map((m) => m[2]))];
  process.stderr.write(
    `npm test needs ${missing.map((m) => m[0]).join(', ')} (${[...new Set(missing.map((m) => m[3]))].join('; ')}); ` +
      `install them with: sudo apt-get install -y ${pkgs.join(' ')}\n`,
  );
  process.exit(1);
}

if (process.argv.includes('--install-only')) process.exit(0);

// The database binding: every server and end-to-end test needs it.
const binding = spawnSync(process.execPath, ['-e', "new (require('better-sqlite3'))(':memory:').close()"], { cwd: root, stdio: 'ignore' });
if (binding.status !== 0) {
  process.stderr.write(
    'npm test needs the better-sqlite3 binding, which is not built: with python3, make and g++ installed, run npm ci again\n',
  );
  process.exit(1);
}
