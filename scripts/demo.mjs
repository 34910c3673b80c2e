#!/usr/bin/env node
// `npm run demo`: the product working, on the embedded default. Starts the reference server with
// a demo fleet and five simulated osquery agents (`fleetctl server --dev --dev-agents 5`), logs
// in, lists the active nodes of prod, runs a live query the agents answer, carves a file from one
// of them and downloads it, and says what to try next. On a terminal the server keeps running
// until Ctrl-C; piped (CI), the demo stops it and exits 0, or 1 if any step failed.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bin = join(root, 'bin', 'fleetctl.cjs');
const configDir = mkdtempSync(join(tmpdir(), 'fleetctl-demo-'));
const downloads = mkdtempSync(join(tmpdir(), 'fleetctl-demo-carves-'));
// Letters and digits only: a password starting with "-" would be read as an option (1 run in 64
// with base64url), and it also goes into a shell command line in the hints below.
const ALNUM = 'abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789';
const password = Array.from(randomBytes(14), (b) => ALNUM[b % ALNUM.length]).join('');
const AGENTS = 5;
const env = { ...process.env, FLEETCTL_CONFIG_DIR: configDir };
const interactive = Boolean(process.stdout.isTTY && process.stdin.isTTY);
const say = (s) => process.stderr.write(`${s}\n`);
const cleanup = () => {
  rmSync(configDir, { recursive: true, force: true });
  rmSync(downloads, { recursive: true, force: true });
};

say(
  `==> Starting the reference server with a demo fleet and ${AGENTS} simulated osquery agents (fleetctl server --dev --dev-agents ${AGENTS})`,
);
const server = spawn(
  process.execPath,
  [
    bin,
    'server',
    '--dev',
    `--dev-password=${password}`,
    '--dev-agents',
    String(AGENTS),
    '--listen',
    process.env.DEMO_LISTEN ?? '127.0.0.1:0',
  ],
  {
    env,
    // The banner is on stderr (stdout is for a stdout sink's NDJSON).
    stdio: ['ignore', 'inherit', 'pipe'],
  },
);
let banner = '';
let ready = false;
const url = await new Promise((resolve) => {
  server.stderr.on('data', (d) => {
    // After the banner, what the server says goes straight through.
    if (ready) return void process.stderr.write(d);
    banner += d;
    const m = /URL:\s+(http:\/\/\S+)/.exec(banner);
    // Ready once the agents have enrolled and are tagged (the server's last start-up line).
    if (m && /Simulated agents: .*\n.*\n/.test(banner)) {
      ready = true;
      resolve(m[1]);
    }
  });
  // What the server said is why (e.g. the database binding did not build): shown, then one more
  // line, no stack trace.
  server.on('exit', (code) => {
    if (ready) return;
    process.stderr.write(banner);
    say(`demo failed: the server exited (${code}) before it was ready`);
    cleanup();
    process.exit(1);
  });
});
process.stderr.write(banner.replace(/Press Ctrl-C to stop\.\n?/, ''));

/** Runs fleetctl, showing the command; `ok` are the exit codes that mean the step worked. */
function fleetctl(args, o = {}) {
  say(`\n$ fleetctl ${args.join(' ')}`);
  const r = spawnSync(process.execPath, [bin, ...args], {
    env,
    cwd: o.cwd,
    input: o.input,
    encoding: 'utf8',
    stdio: [o.input ? 'pipe' : 'inherit', o.capture ? 'pipe' : 'inherit', 'inherit'],
  });
  if (!(o.ok ?? [0]).includes(r.status)) throw new Error(`fleetctl ${args.slice(0, 2).join(' ')} failed with exit ${r.status}`);
  if (o.capture) process.stdout.write(r.stdout);
  return r.stdout;
}

let failed = false;
try {
  fleetctl(['login', '--url', url, '--env', 'prod', '--username', 'admin', '--password-stdin', '--insecure-storage'], { input: password });
  fleetctl(['nodes', 'list', '--status', 'active', '--limit', '10']);
  say(`\n==> A live query, answered by the ${AGENTS} simulated agents (the rest of the demo fleet are records with no agent behind them)`);
  fleetctl(['query', 'run', 'SELECT name, version, platform FROM os_version', '--target', 'tag:live-agents']);
  say('\n==> A carve: /etc/hosts from one agent, then the archive downloaded and checked');
  const host = fleetctl(['nodes', 'list', '--tag', 'live-agents', '--limit', '1', '--fields', 'hostname', '--no-headers'], {
    capture: true,
  }).trim();
  const carve = fleetctl(['carves', 'run', '/etc/hosts', '--target', host], { capture: true }).trim();
  fleetctl(['carves', 'show', carve]);
  fleetctl(['carves', 'download', carve], { cwd: downloads });
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
  ${cli} query run "SELECT pid, name FROM processes" --target tag:live-agents
  ${cli} query run "SELECT * FROM uptime" --target status:active --exit     # every online node; offline ones are not waited for
  ${cli} nodes list --risk high
  ${cli} nodes list --status inactive --platform darwin
  ${cli} nodes list --all -o json | jq length
  ${cli} audit list --follow
  ${cli} logs --follow                     # what the agents send (status lines; results of scheduled queries: fleetctl schedule add)
  ${cli} --help
  Log in as other demo users (password ${password}): ${cli} login --username analyst --password-stdin
`;

function stop(code) {
  server.kill('SIGTERM');
  server.on('exit', () => {
    cleanup();
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
