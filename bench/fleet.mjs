#!/usr/bin/env node
// Benchmark: the reference server on a large demo fleet, and the CLI's memory while streaming
// it. Every figure is printed as a ratio to a baseline measured in the same run, so numbers
// compare across machines:
//   - API latency: median of each call / median of GET /api/v1/environments/map/name (an
//     authenticated call with a trivial query);
//   - CLI memory: peak RSS of `nodes list --all -o json` over N nodes / peak RSS of the same
//     command over N/5 nodes (1.0 = flat in fleet size), and / `fleetctl --version`.
// Usage: npm run build && node bench/fleet.mjs [--nodes 100000] [--runs 15]
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bin = process.env.FLEETCTL_TEST_ENTRY ? join(root, process.env.FLEETCTL_TEST_ENTRY) : join(root, 'bin', 'fleetctl.js');
const arg = (name, def) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const NODES = arg('--nodes', 100_000);
const RUNS = arg('--runs', 15);
const PASSWORD = 'bench-password-1';
const tmp = mkdtempSync(join(tmpdir(), 'fleetctl-bench-'));

console.log(`fleetctl benchmark: ${NODES} nodes, ${RUNS} runs per call (medians)`);
const t0 = Date.now();
const server = spawn(process.execPath, [bin, 'server', '--dev', '--dev-nodes', String(NODES), '--dev-password', PASSWORD, '--listen', '127.0.0.1:0', '--api-rate-limit', '1000000', '--login-rate-limit', '1000'], { stdio: ['ignore', 'pipe', 'inherit'] });
let out = '';
const url = await new Promise((resolve, reject) => {
  server.stdout.on('data', (d) => {
    out += d;
    const m = /URL:\s+(http:\/\/\S+)/.exec(out);
    if (m) resolve(m[1]);
  });
  server.on('exit', (c) => reject(new Error(`server exited ${c}`)));
});
console.log(`server with demo fleet ready in ${((Date.now() - t0) / 1000).toFixed(1)} s at ${url}`);

try {
  const login = await fetch(`${url}/api/v1/login/prod`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'admin', password: PASSWORD }) });
  const { token } = await login.json();
  const headers = { authorization: `Bearer ${token}` };

  async function median(path) {
    const times = [];
    for (let i = 0; i < RUNS + 2; i++) {
      const s = performance.now();
      const r = await fetch(url + path, { headers });
      await r.arrayBuffer();
      if (r.status !== 200) throw new Error(`${path}: HTTP ${r.status}`);
      if (i >= 2) times.push(performance.now() - s); // two warm-up calls
    }
    times.sort((a, b) => a - b);
    return times[Math.floor(times.length / 2)];
  }

  const baseline = await median('/api/v1/environments/map/name');
  console.log(`\nAPI latency (baseline: environment map, ${baseline.toFixed(2)} ms)`);
  const cases = [
    ['nodes list, page 1 (default sort lastseen desc)', '/api/v1/nodes/prod'],
    ['nodes list, status=active', '/api/v1/nodes/prod?status=active'],
    ['nodes list, platform=darwin', '/api/v1/nodes/prod?platform=darwin'],
    ['nodes list, search q=web', '/api/v1/nodes/prod?q=web'],
    ['nodes list, sort=hostname page 50', '/api/v1/nodes/prod?sort=hostname&page=50'],
    ['nodes list, page_size=500', '/api/v1/nodes/prod?page_size=500'],
    ['stats (all environments)', '/api/v1/stats'],
  ];
  for (const [name, path] of cases) {
    const m = await median(path);
    console.log(`  ${name.padEnd(48)} ${m.toFixed(2).padStart(8)} ms  ${(m / baseline).toFixed(1).padStart(6)}x baseline`);
  }

  const counts = Object.fromEntries([...out.matchAll(/(\w+) \((\d+) nodes\)/g)].map((m) => [m[1], Number(m[2])]));
  const configDir = join(tmp, 'config');
  const env = { ...process.env, FLEETCTL_CONFIG_DIR: configDir, FLEETCTL_URL: url, FLEETCTL_TOKEN: token, DBUS_SESSION_BUS_ADDRESS: 'disabled:' };
  function peakRss(args) {
    const file = join(tmp, `rss-${Math.random()}`);
    const s = performance.now();
    const r = spawnSync(process.execPath, ['--import', join(root, 'bench', 'rss-probe.mjs'), bin, ...args], { env: { ...env, BENCH_RSS_FILE: file }, stdio: ['ignore', 'ignore', 'inherit'] });
    if (r.status !== 0) throw new Error(`fleetctl ${args.join(' ')} exited ${r.status}`);
    return { kib: Number(readFileSync(file, 'utf8')), ms: performance.now() - s };
  }
  const idle = peakRss(['--version']);
  const small = peakRss(['nodes', 'list', '--all', '-o', 'json', '--env', 'dev']);
  const large = peakRss(['nodes', 'list', '--all', '-o', 'json', '--env', 'prod']);
  const mb = (k) => `${(k / 1024).toFixed(1)} MiB`;
  console.log(`\nCLI memory, nodes list --all -o json (baseline: fleetctl --version, ${mb(idle.kib)})`);
  console.log(`  dev  (${counts.dev} nodes)  peak RSS ${mb(small.kib).padStart(10)}  ${(small.kib / idle.kib).toFixed(2)}x baseline  ${(small.ms / 1000).toFixed(1)} s`);
  console.log(`  prod (${counts.prod} nodes) peak RSS ${mb(large.kib).padStart(10)}  ${(large.kib / idle.kib).toFixed(2)}x baseline  ${(large.ms / 1000).toFixed(1)} s`);
  console.log(`  memory ratio prod/dev: ${(large.kib / small.kib).toFixed(2)} for ${(counts.prod / counts.dev).toFixed(1)}x the nodes (1.0 = flat)`);
} finally {
  server.kill('SIGTERM');
  rmSync(tmp, { recursive: true, force: true });
}
