// `bench:agents --baseline` (issue 31): the same agent command, through the same nginx, against
// agent-baseline-server.mjs instead of fleetctl, over the same windows; its CPU per request is the
// floor fleetctl's figure is read against (a ratio measured in the same run, on the same machine).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startProxy, externalAgents } from './agent-external.mjs';
import { treeCpuSeconds } from './proc-cpu.mjs';
import { percentile, windowTotals } from './sample-stats.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
/** Paths as the agent door's environments have them by default; the proxy maps the agent's onto them. */
const ENV = {
  uuid: 'baseline',
  enroll_path: 'enroll',
  config_path: 'config',
  log_path: 'log',
  query_read_path: 'read',
  query_write_path: 'write',
  carver_init_path: 'init',
  carver_block_path: 'block',
};

/**
 * Runs the baseline: `agents` agents of `command` (its ramp, then `windows` windows of `windowS`
 * seconds). Resolves with each window's requests, errors, p99 and the server's CPU per request
 * (and, with dbPath, `stored`: the nodes and log lines the floor committed).
 */
export async function runBaseline({
  agents: n,
  windows,
  windowS,
  command,
  paths,
  packs,
  cert,
  key,
  dir,
  ramp,
  seed,
  keepaliveS,
  withFileLimit,
  fileLimit,
  dbPath,
  log,
}) {
  const children = [];
  const args = [join(here, 'agent-baseline-server.mjs'), cert, key, JSON.stringify(packs), ...(dbPath ? [dbPath] : [])];
  const server = spawn(process.execPath, args, {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(server);
  try {
    const [chunk] = await once(server.stdout, 'data');
    const port = Number(String(chunk).trim());
    const proxy = await startProxy({
      dir,
      upstream: { host: '127.0.0.1', port },
      env: ENV,
      paths,
      cert,
      key,
      keepaliveS,
      withFileLimit,
      fileLimit,
      children,
    });
    const agents = externalAgents({ command, proxy, env: ENV, paths, secret: 'baseline', ramp, dir, seed, withFileLimit, children });
    agents.add(n);
    // The ramp: until every agent enrolled (or twice the ramp's time), not measured.
    const deadline = Date.now() + Math.max(60_000, (n / ramp) * 2000);
    while (Date.now() < deadline && agents.sample().enrolled < n) await sleep(1000);
    agents.sample();
    const out = [];
    let c0 = treeCpuSeconds(server.pid).cpu;
    let w0 = Date.now();
    for (let w = 0; w < windows; w++) {
      await sleep(windowS * 1000);
      const s = agents.sample();
      const c1 = treeCpuSeconds(server.pid).cpu;
      const w1 = Date.now();
      const { latencies, errors, requests } = windowTotals(s);
      const m = {
        seconds: (w1 - w0) / 1000,
        requests,
        errors,
        p50: percentile(latencies, 50),
        p99: percentile(latencies, 99),
        // The floor's slowest request too: whether this machine, with no framework and no work of
        // ours, keeps every window under the goal's max (the tail fleetctl misses, issue 31).
        max: latencies.length ? latencies[latencies.length - 1] : 0,
        cpu: (c1 - c0) / ((w1 - w0) / 1000),
        cpuMsPerRequest: requests ? ((c1 - c0) * 1000) / requests : 0,
      };
      out.push(m);
      log(m);
      c0 = c1;
      w0 = w1;
    }
    await agents.stop();
    if (dbPath) {
      // What the floor stored, so a figure is never read from a floor that dropped the logs.
      const { default: Database } = await import('better-sqlite3');
      const db = new Database(dbPath, { readonly: true });
      out.stored = {
        nodes: db.prepare('select count(*) n from nodes').get().n,
        lines: db.prepare('select count(*) n from logs').get().n,
      };
      db.close();
    }
    return out;
  } finally {
    for (const c of children) c.kill('SIGTERM');
  }
}
