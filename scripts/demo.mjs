#!/usr/bin/env node
// `npm run demo`: start the reference server with a demo fleet, log in, list the active nodes
// of prod, and say what to try next. On a terminal the server keeps running until Ctrl-C; when
// piped (CI), the demo stops the server and exits.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bin = join(root, 'bin', 'fleetctl.js');
const configDir = mkdtempSync(join(tmpdir(), 'fleetctl-demo-'));
// Letters and digits only: a password starting with "-" would be read as an option (1 run in 64
// with base64url), and it also goes into a shell command line in the hints below.
const ALNUM = 'abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789';
const password = Array.from(randomBytes(14), (b) => ALNUM[b % ALNUM.length]).join('');
const env = { ...process.env, FLEETCTL_CONFIG_DIR: configDir };
const interactive = Boolean(process.stdout.isTTY && process.stdin.isTTY);
const say = (s) => process.stderr.write(`${s}\n`);

say('==> Starting the reference server with a demo fleet (fleetctl server --dev)');
const server = spawn(process.execPath, [bin, 'server', '--dev', `--dev-password=${password}`, '--listen', process.env.DEMO_LISTEN ?? '127.0.0.1:0'], {
  env,
  stdio: ['ignore', 'pipe', 'inherit'],
});
let banner = '';
let ready = false;
const url = await new Promise((resolve) => {
  server.stdout.on('data', (d) => {
    banner += d;
    const m = /URL:\s+(http:\/\/\S+)/.exec(banner);
    if (m && banner.includes('Press Ctrl-C')) {
      ready = true;
      resolve(m[1]);
    }
  });
  // The server has already said why on stderr (e.g. the database binding did not build): one
  // more line, no stack trace.
  server.on('exit', (code) => {
    if (ready) return;
    say(`demo failed: the server exited (${code}) before it was ready`);
    rmSync(configDir, { recursive: true, force: true });
    process.exit(1);
  });
});
process.stderr.write(banner.replace(/Press Ctrl-C to stop\.\n?/, ''));

function fleetctl(args, input) {
  say(`\n$ fleetctl ${args.join(' ')}`);
  const r = spawnSync(process.execPath, [bin, ...args], { env, input, stdio: [input ? 'pipe' : 'inherit', 'inherit', 'inherit'] });
  if (r.status !== 0) throw new Error(`fleetctl ${args[0]} failed with exit ${r.status}`);
}

let failed = false;
try {
  fleetctl(['login', '--url', url, '--env', 'prod', '--username', 'admin', '--password-stdin', '--insecure-storage'], password);
  fleetctl(['nodes', 'list', '--status', 'active']);
  fleetctl(['stats']);
} catch (e) {
  say(`demo failed: ${e.message}`);
  failed = true;
}

// The hints run this clone's binary by its full path: `fleetctl` may not be on PATH yet (npm link),
// the other terminal may be anywhere, and the registry's package named fleetctl is another product.
const cli = bin;
const next = `
==> What to try next (in another terminal, while this demo runs; after \`npm link\`, plain \`fleetctl\`):
  export FLEETCTL_CONFIG_DIR=${configDir}
  ${cli} nodes list --status inactive --platform darwin
  ${cli} nodes list --all -o json | jq length
  ${cli} nodes show prod-web-0013
  ${cli} tags list
  ${cli} audit list --limit 10
  ${cli} --help
  Log in as other demo users (password ${password}): ${cli} login --username analyst --password-stdin
`;

function stop(code) {
  server.kill('SIGTERM');
  server.on('exit', () => {
    rmSync(configDir, { recursive: true, force: true });
    process.exit(code);
  });
}

if (failed || !interactive) {
  if (!failed) say('\n==> Demo done (not a terminal: stopping the server). Run `npm run demo` in a terminal to keep it running.');
  stop(failed ? 1 : 0);
} else {
  say(next);
  say('Press Ctrl-C to stop the server and end the demo.');
  process.on('SIGINT', () => stop(0));
}
