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
import { installPeers } from './test-peers.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** [what the tests use, how to find it, the Debian package, why]. */
const NEEDS = [
  ['python3', { cmd: 'python3' }, 'python3', 'builds the better-sqlite3 binding'],
  ['make', { cmd: 'make' }, 'make', 'builds the better-sqlite3 binding'],
  ['g++', { cmd: 'g++' }, 'g++', 'builds the better-sqlite3 binding'],
  ['openssl', { cmd: 'openssl' }, 'openssl', 'a self-signed certificate for the HTTPS tests'],
  ['curl', { cmd: 'curl' }, 'curl', 'the enroll one-liner test (curl against the agent listener)'],
  [
    'oathtool',
    { cmd: 'oathtool' },
    'oathtool',
    'the MFA examples of --help and the man pages (a TOTP code as an authenticator app computes it)',
  ],
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
  ['fincore', { cmd: 'fincore' }, 'util-linux-extra', 'the SQLite page-cache warmer test (which pages of a file the kernel caches)'],
  [
    'PostgreSQL server',
    { glob: ['/usr/lib/postgresql', 'bin/initdb'] },
    'postgresql',
    'the server suite on PostgreSQL (a throwaway cluster)',
  ],
  ['pg_trgm', { glob: ['/usr/share/postgresql', 'extension/pg_trgm.control'] }, 'postgresql-contrib', 'search on PostgreSQL'],
  // The sink tests' real peers (issue 28) and what installs the ones below (PEERS).
  ['rsyslogd', { cmd: 'rsyslogd' }, 'rsyslog', 'the syslog sink tests (a real rsyslog; apt does not start its service here)'],
  ['rsyslog TLS', { glob: ['/usr/lib', 'rsyslog/lmnsd_ossl.so'] }, 'rsyslog-openssl', 'the syslog sink tests over TLS (RFC 5425)'],
  ['java', { cmd: 'java' }, 'openjdk-17-jre-headless', 'Kafka, OpenSearch and Elasticsearch for the sink tests'],
  ['mvn', { cmd: 'mvn' }, 'maven', 'fetches Kafka, OpenSearch and Elasticsearch from Maven Central'],
  ['unzip', { cmd: 'unzip' }, 'unzip', 'unpacks the OpenSearch and Elasticsearch zips'],
  ['python3 venv', { run: 'python3 -c "import ensurepip, venv"' }, 'python3-venv', 'moto (Kinesis, Firehose) in a venv of its own'],
  ['go', { cmd: 'go' }, 'golang-go', "builds versitygw (S3) and the GELF reader (needs Go >= 1.24: the machine's own Go)"],
];

/**
 * The sink tests' real peers from the language registries (scripts/test-peers.mjs installs them
 * into a cache outside the repository, once, and test/helpers/peers/ starts them). Measured cold
 * on the 2-core machine: kafka 22 s, opensearch 10 s, elasticsearch 15 s, moto 40 s, versitygw 3 min.
 */
const PEERS = [
  {
    name: 'kafka',
    version: '4.4.0',
    kind: 'maven-jars',
    artifact: 'org.apache.kafka:kafka_2.13:4.4.0',
    why: 'the kafka sink (KRaft, one node)',
  },
  {
    name: 'opensearch',
    version: '2.19.6',
    kind: 'maven-zip',
    artifact: 'org.opensearch.distribution.integ-test-zip:opensearch:2.19.6',
    why: 'the elastic sink against OpenSearch',
  },
  {
    name: 'elasticsearch',
    version: '8.19.2',
    kind: 'maven-zip',
    artifact: 'org.elasticsearch.distribution.integ-test-zip:elasticsearch:8.19.2',
    why: 'the elastic sink against Elasticsearch',
  },
  {
    name: 'moto',
    version: '5.2.5',
    kind: 'pip',
    requirement: 'moto[server]==5.2.5',
    module: 'moto.server',
    why: 'the kinesis and firehose sinks (an emulator: there is no real Kinesis here)',
  },
  {
    name: 'versitygw',
    version: '1.8.0',
    kind: 'go-install',
    module: 'github.com/versity/versitygw/cmd/versitygw@v1.8.0',
    bin: 'versitygw',
    why: 'the s3 sink (an S3 gateway that checks signatures)',
  },
  {
    name: 'gelf-reader',
    version: 'go-gelf 1550ee647df0',
    kind: 'go-build',
    source: 'test/tools/gelf-reader',
    bin: 'gelf-reader',
    why: "the graylog sink over UDP (Graylog's own go-gelf reader)",
  },
];

const PACKAGES = [...new Set(NEEDS.map((n) => n[2]))];

function has(probe) {
  if (probe.file) return existsSync(probe.file);
  if (probe.run) return spawnSync('sh', ['-c', probe.run], { stdio: 'ignore' }).status === 0;
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

// The peers from Maven, PyPI and Go: part of the system side, so --install-only installs them too.
try {
  installPeers(PEERS);
} catch (err) {
  process.stderr.write(`npm test: a sink test peer could not be installed: ${err.message}\n`);
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
