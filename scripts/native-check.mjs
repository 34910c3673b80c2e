#!/usr/bin/env node
// postinstall: make a failed build of the optional database binding (better-sqlite3) loud.
// npm drops an optional dependency whose build fails without a word, and `fleetctl server`,
// `npm run demo` and `npm test` need it. Two things happen here:
//   1. node-gyp downloads Node's headers unless told where they are (npm_config_nodedir). Where
//      this Node's own headers are installed beside it (Debian's nodejs: /usr/include/node,
//      official tarballs: <prefix>/include/node) and no nodedir is configured, the binding is
//      installed once more with nodedir set to them, so machines without access to
//      nodejs.org still build it.
//   2. If it still does not load: one line on stderr saying what failed and what to install.
// The install itself never fails because of this (the CLI works without the binding).
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Loads the binding in a fresh process (this one may have cached a failed resolution). */
function bindingLoads() {
  const r = spawnSync(process.execPath, ['-e', "new (require('better-sqlite3'))(':memory:').close()"], { cwd: root, stdio: 'ignore' });
  return r.status === 0;
}

/** The version the lockfile pins (a clone), else the range package.json asks for (a packed install). */
function wantedVersion() {
  try {
    const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8'));
    const v = lock.packages?.['node_modules/better-sqlite3']?.version;
    if (v) return v;
  } catch {
    /* no lockfile in a packed install */
  }
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  return pkg.optionalDependencies?.['better-sqlite3'] ?? 'latest';
}

function localHeadersPrefix() {
  const prefixes = [dirname(dirname(process.execPath)), process.config.variables?.node_prefix].filter(Boolean);
  return prefixes.find((p) => existsSync(join(p, 'include', 'node', 'common.gypi')));
}

if (!bindingLoads()) {
  const prefix = localHeadersPrefix();
  const retry = !process.env.FLEETCTL_NATIVE_RETRY && !process.env.npm_config_nodedir && process.env.npm_config_global !== 'true' && prefix;
  if (retry) {
    process.stderr.write(`osquery-fleetctl: building better-sqlite3 against the Node headers in ${prefix}/include/node\n`);
    spawnSync('npm', ['install', '--no-save', '--no-audit', '--no-fund', `better-sqlite3@${wantedVersion()}`], {
      cwd: root,
      stdio: ['ignore', 'ignore', 'inherit'],
      env: { ...process.env, npm_config_nodedir: prefix, FLEETCTL_NATIVE_RETRY: '1' },
    });
  }
  if (!bindingLoads()) {
    process.stderr.write(
      'osquery-fleetctl: WARNING: the database binding better-sqlite3 did not build, so `fleetctl server`, `npm run demo` and `npm test` will not work ' +
        '(the CLI itself does); install python3, make, g++ and the Node headers (Debian: apt-get install python3 make g++ libnode-dev), then run npm ci again' +
        '\n',
    );
  }
}
