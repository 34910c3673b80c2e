#!/usr/bin/env node
// `npm run bench:agents`: how many osquery agents `fleetctl server` carries, and what one agent
// request costs it, with agents that behave like a real fleet (issue 21):
//   - driven from separate processes (bench/agent-driver.mjs, --drivers; default one per core and
//     enough that none passes its open-files limit), each agent with its own TLS connection kept
//     open between requests (osquery's --tls_session_reuse), from several loopback addresses;
//   - osquery's intervals (--profile osquery, the default): config refresh 300 s, distributed
//     read 60 s, logger period 4 s (a log request only when results are buffered), a schedule of
//     one 60 s snapshot query and one 300 s differential query: about 2.2 agent requests per
//     agent per minute, as Fleet's osquery-perf with osquery-like intervals
//     (read in osquery-perf's code, and measured from nginx's log of its runs); enrolling with config_valid "0" and 2 KB host_details;
//     --profile fast (config 60 s, distributed 6 s, a 10 s query) sends about 8 times as many,
//     to load a server with fewer sockets;
//   - a gradual enrollment ramp (--ramp agents/s), so phases spread as a fleet's do;
//   - latency measured at the client from the moment each request is sent; the drivers' own
//     event-loop delay is reported beside it, and a saturated driver ends the ladder (its
//     figures would be the driver's, not the server's);
//   - the server's CPU time per agent request: utime + stime of the server process and its
//     workers (/proc) over the window, divided by the agent requests answered in it.
// Modes:
//   ladder (default 5k, 10k, 20k, 50k, 100k): ramp to each rung, settle, measure a window
//     (requests, p50/p99, errors, admin `nodes list` and `stats` latency meanwhile); stop at the
//     first rung over the goal, when the drivers saturate, or past what the open-files limit
//     lets the server's processes hold; print the table and the projection to 100,000 agents.
//   --sustain N --hold S: ramp to N and hold S seconds in 60-second windows.
//   --compare-workers 1,2: the ladder once per worker count (fresh server each), and the
//     highest rung each carries at the goal, with their ratio.
//   --readers (with --sustain N; issue 30): the steady windows take turns: nobody reading logs, a
//     follower of the environment's whole log attached (GET /api/v1/logs/prod long polling, as
//     `fleetctl logs --follow` does), and the report of the pack's `uptime` of every node read
//     whole every second (GET /api/v1/reports/prod/pack_bench_uptime, osquery's name for a pack's
//     query, pages of 1000, as `fleetctl schedule report --all`); the summary compares the
//     agents' p99 and the server's CPU per agent request in each with the windows without readers.
//   --agent-command 'CMD': the agents are an external program (Fleet's osquery-perf, say) behind
//     nginx; latency from nginx's log (bench/agent-external.mjs, which says what CMD is given).
//     --baseline: then the same command through the same nginx against node:https alone
//     (bench/agent-baseline.mjs), and fleetctl's CPU per request as a multiple of that floor.
// Every window also reports the server's event loop (its delay p99 and its longest pause, from
// the server's own Prometheus metrics, reset at each scrape) and, before the first agent, the idle
// server's CPU: the CPU per request is given whole and marginal (less the idle cost). In
// --sustain, windows run from the first enrollment, so what follows a mass enrollment is seen.
// Usage: npm run bench:agents -- [--workers N] [--ladder 5000,10000] [--window 60] [--settle 20]
//   [--ramp 250] [--drivers 2] [--profile osquery|fast] [--pg] [--sustain 20000 --hold 600]
//   [--compare-workers 1,2] [--keep-going] [--p99 100] [--max 250] [--cpu-goal 0.25] [--max-seconds 3600] [--idle 30] [--idle-settle 10]
//   [--agent-command CMD [--agent-paths fleet|ours] [--seed N] [--baseline [--baseline-hold 300] [--baseline-store]]] [--server-node-args '--cpu-prof ...'] [--readers]
import { spawn, fork, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, cpus } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { treeCpuSeconds } from './proc-cpu.mjs';
import { selfSignedCert } from './self-signed.mjs';
import { percentile, windowTotals } from './sample-stats.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bin = join(root, 'bin', 'fleetctl.cjs');
const arg = (name, def) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : def;
};
const flag = (name) => process.argv.includes(name);
const SUSTAIN = Number(arg('--sustain', 0));
const HOLD_S = Number(arg('--hold', 600));
const LADDER = SUSTAIN ? [SUSTAIN] : arg('--ladder', '5000,10000,20000,50000,100000').split(',').map(Number);
const WINDOW_S = Number(arg('--window', 60));
const SETTLE_S = Number(arg('--settle', 20));
const RAMP = Number(arg('--ramp', 250)); // agents enrolling per second
const WORKERS = arg('--workers', undefined);
const COMPARE = arg('--compare-workers', undefined)?.split(',');
const PG = flag('--pg');
const KEEP_GOING = flag('--keep-going');
const READERS = flag('--readers');
if (READERS && !SUSTAIN) throw new Error('--readers takes turns over the steady windows of --sustain N');
/** What each steady window has reading logs beside the agents (--readers). */
const READER_TURNS = ['none', 'follower', 'report'];
const MAX_S = Number(arg('--max-seconds', 3600));
const P99_GOAL_MS = Number(arg('--p99', 100));
const MAX_GOAL_MS = Number(arg('--max', 250));
/** Issue 31: server CPU per agent request over the steady windows, whole (idle cost included). */
const CPU_GOAL_MS = Number(arg('--cpu-goal', 0.25));
const IDLE_S = Number(arg('--idle', 30));
/** Seconds between start-up and the idle measurement: the start-up's own work is not idling. */
const IDLE_SETTLE_S = Number(arg('--idle-settle', 10));
const AGENT_COMMAND = arg('--agent-command', undefined);
const AGENT_PATHS = arg('--agent-paths', 'fleet');
/**
 * --baseline (with --agent-command and --sustain): after fleetctl, the same agents through the same
 * nginx against a bare node:https server answering constants (agent-baseline.mjs), so the CPU per
 * request is read against what Node.js alone costs on this machine, in the same run.
 */
const BASELINE = flag('--baseline');
const BASELINE_HOLD_S = Number(arg('--baseline-hold', HOLD_S));
// --baseline-store: the floor also keeps its promises (enrolled keys stored and checked, each log
// batch committed to SQLite on its event loop before the answer): what durability alone costs.
const BASELINE_STORE = flag('--baseline-store');
// {seed} of --agent-command: by default from the clock, so runs differ; the same --seed in two
// runs seeds osquery-perf's random source alike (its hosts' data and answers are drawn from it;
// its agents' goroutines share it, so later draws still follow their timing): an A/B comparison
// of two trees or flags is then less one of two fleets.
const SEED_ARG = arg('--seed', undefined);
if (BASELINE && !(AGENT_COMMAND && SUSTAIN)) throw new Error('--baseline runs the --agent-command of a --sustain run');
if (BASELINE_STORE && !BASELINE) throw new Error('--baseline-store is a kind of --baseline');
if (SEED_ARG !== undefined && !(AGENT_COMMAND && /^\d{1,9}$/.test(SEED_ARG)))
  throw new Error('--seed is a whole number (at most 9 digits) for the {seed} of an --agent-command');
const SEED = SEED_ARG === undefined ? undefined : Number(SEED_ARG);
if (!['fleet', 'ours'].includes(AGENT_PATHS)) throw new Error(`--agent-paths ${AGENT_PATHS}: fleet or ours`);
/** nginx's keep-alive to the agent door: shorter than the server's (--keep-alive-timeout, 75 s for agents). */
const PROXY_KEEPALIVE_S = 60;
/** Node options for the server's processes, e.g. '--cpu-prof --cpu-prof-dir=/tmp/prof' to see where its CPU goes. */
const SERVER_NODE_ARGS = arg('--server-node-args', '').split(' ').filter(Boolean);
const ADMIN_GOAL_MS = 200;
/** A driver whose event loop is this late measures itself, not the server: the ladder ends there. */
const DRIVER_DELAY_LIMIT_MS = 50;
const PROFILES = {
  osquery: {
    intervals: { config: 300_000, distributed: 60_000, log: 4_000 },
    // A pack, not the schedule: osquery runs both alike, and Fleet's osquery-perf reads only packs.
    schedule: {
      uptime: { query: 'SELECT * FROM uptime', interval: 60, snapshot: true },
      processes: { query: 'SELECT pid, name, path, uid FROM processes', interval: 300 },
    },
  },
  fast: {
    intervals: { config: 60_000, distributed: 6_000, log: 4_000 },
    schedule: { uptime: { query: 'SELECT * FROM uptime', interval: 10, snapshot: true } },
  },
};
const PROFILE = arg('--profile', 'osquery');
if (!PROFILES[PROFILE]) throw new Error(`--profile ${PROFILE}: osquery or fast`);
const { intervals: INTERVALS, schedule: SCHEDULE } = PROFILES[PROFILE];
const PASSWORD = 'bench-password-1';
const LOCAL_ADDRESSES = Array.from({ length: 8 }, (_, i) => `127.0.0.${10 + i}`);
const t0 = Date.now();
const tmp = mkdtempSync(join(tmpdir(), 'fleetctl-bench-agents-'));
const children = [];
const uptime = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const f1 = (x) => (Math.round(x * 10) / 10).toString();

/** Raises the open-files limit of a child where the machine allows it: a socket per agent. */
const canRaise = spawnSync('prlimit', ['--nofile=1048576:1048576', '--', 'true']).status === 0;
const withFileLimit = (cmd, args) => (canRaise ? ['prlimit', ['--nofile=1048576:1048576', '--', cmd, ...args]] : [cmd, args]);
/** Open files a process may hold (its sockets). */
const fileLimit = canRaise ? 1048576 : Number(spawnSync('sh', ['-c', 'ulimit -n'], { encoding: 'utf8' }).stdout.trim()) || 1024;
const DRIVERS = Number(arg('--drivers', Math.max(2, cpus().length, Math.ceil(Math.max(...LADDER) / (fileLimit * 0.9)))));

const { cert, key } = selfSignedCert(tmp);
let cluster;
if (PG) {
  const { startCluster } = await import('../scripts/pg-cluster.mjs');
  cluster = await startCluster();
}

/** A fresh `fleetctl server` with an agent listener on a fresh database. */
async function startFleetServer(workers, name) {
  const db = PG ? await cluster.createDatabase(name) : join(tmp, `${name}.db`);
  const args = [
    bin,
    'server',
    '--db',
    db,
    '--listen',
    '127.0.0.1:0',
    '--agent-listen',
    '127.0.0.1:0',
    '--agent-tls-cert',
    cert,
    '--agent-tls-key',
    key,
    '--create-env',
    'prod',
    '--admin-password-stdin',
    '--api-rate-limit',
    '100000000',
    '--login-rate-limit',
    '1000',
    ...(workers ? ['--workers', String(workers)] : []),
  ];
  const [cmd, cmdArgs] = withFileLimit(process.execPath, [...SERVER_NODE_ARGS, ...args]);
  // The banner is on stderr (stdout is for a stdout sink's NDJSON): read, then the rest passed through.
  const server = spawn(cmd, cmdArgs, { stdio: ['pipe', 'inherit', 'pipe'] });
  children.push(server);
  server.stdin.end(PASSWORD);
  let out = '';
  const urls = await new Promise((resolve, reject) => {
    server.stderr.on('data', (d) => {
      out += d;
      const api = /reference server listening on (https?:\/\/\S+)/.exec(out);
      const agents = /Agent API[^\n]*?(https:\/\/[^\s;]+)/.exec(out);
      if (api && agents) resolve({ api: api[1], agents: agents[1] });
    });
    server.on('exit', (c) => reject(new Error(`server exited ${c}: ${out}`)));
    setTimeout(() => reject(new Error(`server did not print its addresses: ${out}`)), 60_000);
  });
  // The banner's last line, "Workers: N ...", follows the addresses (with --workers and by default):
  // read on until it shows (a single process prints none), else count the server's process tree
  // (a primary and its workers, or one process).
  await new Promise((resolve) => {
    const done = () => /Workers: \d+/.test(out) && resolve();
    server.stderr.on('data', (d) => ((out += d), done()));
    done();
    setTimeout(resolve, 2000);
  });
  server.stderr.removeAllListeners('data');
  server.stderr.pipe(process.stderr);
  const tree = treeCpuSeconds(server.pid).processes;
  const processes = Number(/Workers: (\d+)/.exec(out)?.[1] ?? (tree > 1 ? tree - 1 : 1));
  return {
    server,
    urls,
    processes,
    async stop() {
      server.kill('SIGTERM');
      await Promise.race([new Promise((r) => server.once('exit', r)), sleep(30_000)]);
    },
  };
}

/** The driver processes, given the server's flags and secret: add(n) agents, sample() their figures. */
async function startDrivers(init) {
  const drivers = [];
  for (let d = 0; d < DRIVERS; d++) {
    const [dc, da] = withFileLimit(process.execPath, [join(root, 'bench', 'agent-driver.mjs')]);
    // prlimit execs node itself: the IPC channel is inherited through it.
    const child =
      dc === 'prlimit'
        ? spawn(dc, da, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
        : fork(join(root, 'bench', 'agent-driver.mjs'), { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    children.push(child);
    const waiters = new Map();
    child.on('message', (m) => {
      if (m.type === 'error') console.error(`driver ${d}: ${m.message}`);
      const w = waiters.get(m.id ?? m.type);
      if (w) {
        waiters.delete(m.id ?? m.type);
        w(m);
      }
    });
    const ask = (msg, answer) => new Promise((resolve) => (waiters.set(answer, resolve), child.send(msg)));
    drivers.push({ child, ask });
    await ask({ type: 'init', ...init, seed: `${init.seed}-${d}` }, 'ready');
  }
  let sampleId = 0;
  return {
    /** Spreads n more agents over the drivers. */
    add(n) {
      drivers.forEach((d, i) => {
        const share = Math.floor(n / drivers.length) + (i < n % drivers.length ? 1 : 0);
        if (share) d.child.send({ type: 'add', count: share });
      });
    },
    pids: () => drivers.map((d) => d.child.pid),
    /** Every driver's sample, merged: latencies per kind, errors, enrolled, driver health. */
    async sample() {
      const id = ++sampleId;
      const parts = await Promise.all(drivers.map((d) => d.ask({ type: 'sample', id }, id)));
      const lat = {};
      const errors = {};
      let lastError;
      for (const p of parts) {
        for (const [k, v] of Object.entries(p.latencies)) (lat[k] ??= []).push(...v);
        for (const [k, v] of Object.entries(p.errors)) errors[k] = (errors[k] ?? 0) + v;
        lastError ??= p.lastError;
      }
      const sum = (f) => parts.reduce((s, p) => s + f(p), 0);
      return {
        lat,
        errors,
        lastError,
        enrolled: sum((p) => p.enrolled),
        agents: sum((p) => p.agents),
        gaveUp: sum((p) => p.gaveUp),
        connections: sum((p) => p.connections),
        loopDelayP99: Math.max(...parts.map((p) => p.loopDelayP99)),
        lateMax: Math.max(...parts.map((p) => p.lateMax)),
        driverCpuMs: sum((p) => p.cpuMs),
        driverRssMiB: sum((p) => p.rssMiB),
      };
    },
    async stop() {
      await Promise.all(drivers.map((d) => Promise.race([d.ask({ type: 'stop' }, 'stopped'), sleep(5000)])));
      for (const d of drivers) d.child.kill('SIGKILL');
    },
  };
}

/** The server's event loop since the last scrape (prom-client resets its histogram at each), and its node_invalid answers. */
async function serverLoop(api, headers) {
  try {
    const r = await fetch(`${api}/metrics`, { headers });
    const text = await r.text();
    const value = (name) => Number(new RegExp(`^fleetctl_${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
    // Node's monitor records the whole interval between its samples (the server samples every
    // 50 ms): the delay is what exceeds the shortest interval seen.
    const min = value('nodejs_eventloop_lag_min_seconds');
    const delay = (name) => Math.max(0, (value(name) - min) * 1000);
    return {
      p99: delay('nodejs_eventloop_lag_p99_seconds'),
      max: delay('nodejs_eventloop_lag_max_seconds'),
      invalid: value('agent_node_invalid_total') || 0,
      // The checkpoints that hold writers (restart, truncate), and the agent door's write transactions by stage.
      checkpoints: histogramBuckets(text, 'sqlite_checkpoint_seconds', 'mode', ['passive']),
      writes: histogramBuckets(text, 'sqlite_write_seconds', 'stage'),
      // The agent door's requests as the server timed them, admission to answer, by endpoint.
      answers: histogramBuckets(text, 'http_request_duration_seconds', 'endpoint', [], (l) => l.door === 'agent'),
    };
  } catch {
    return { p99: NaN, max: NaN, invalid: 0, checkpoints: {}, writes: {}, answers: {} };
  }
}

/** A histogram of the server's by one label: per value, cumulative counts per bucket bound (`skip`: values left out; `keep`: which series). */
function histogramBuckets(text, name, label, skip = [], keep = () => true) {
  const out = {};
  for (const m of text.matchAll(new RegExp(`^fleetctl_${name}_bucket\\{([^}]*)\\} (\\S+)$`, 'gm'))) {
    const labels = Object.fromEntries([...m[1].matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    if (skip.includes(labels[label]) || !keep(labels)) continue;
    (out[labels[label]] ??= {})[labels.le] = Number(m[2]);
  }
  return out;
}

/** Per label value, how many were observed between two scrapes, and the bucket bound the slowest fell under. */
function slowestBetween(before, after) {
  return Object.entries(after)
    .map(([value, b]) => {
      const d = (le) => (b[le] ?? 0) - (before[value]?.[le] ?? 0);
      const n = d('+Inf');
      const bounds = Object.keys(b)
        .filter((le) => le !== '+Inf')
        .map(Number)
        .sort((x, y) => x - y);
      const under = bounds.find((le) => d(String(le)) === n);
      return n > 0 ? `${n} ${value} (slowest ${under === undefined ? 'over 10 s' : `under ${under * 1000} ms`})` : '';
    })
    .filter(Boolean)
    .join(', ');
}

const head =
  'phase   agents  req/s  req/agent/min  p50/p99/max ms  errors  list p99/max  stats p99/max  loop p99/max  server CPU  CPU ms/req (marginal)  load gen: delay p99/late, CPU  load';
const line = (m, verdict) => {
  const gen = m.external
    ? `CPU ${(m.genCpu * 100).toFixed(0)}%`
    : `${f1(m.driverDelayP99)}/${f1(m.driverLateMax)}, CPU ${(m.genCpu * 100).toFixed(0)}%`;
  console.log(
    `${(m.phase ?? '').padEnd(6)}  ${String(m.agents).padStart(6)}  ${m.rps.toFixed(0).padStart(5)}  ${m.perAgentMin.toFixed(2).padStart(13)}  ${`${f1(m.p50)}/${f1(m.p99)}/${f1(m.max)}`.padStart(14)}  ${String(m.errors).padStart(6)}  ${`${f1(m.listP99)}/${f1(m.listMax)}`.padStart(12)}  ${`${f1(m.statsP99)}/${f1(m.statsMax)}`.padStart(13)}  ${`${f1(m.loopP99)}/${f1(m.loopMax)}`.padStart(12)}  ${`${(m.serverCpu * 100).toFixed(0)}%`.padStart(10)}  ${`${m.cpuMsPerRequest.toFixed(3)} (${m.marginalCpuMsPerRequest.toFixed(3)})`.padStart(21)}  ${gen.padStart(29)}  ${m.load}  ${verdict}`,
  );
  // Where the slowest request's time went, when it was over the p99 goal (external agents: nginx
  // says how much of it the server took; the rest was the agent or nginx).
  if (m.slowest && m.max > P99_GOAL_MS)
    console.log(
      `        slowest: ${m.slowest.kind} ${f1(m.slowest.ms)} ms at ${m.slowest.at}, of which the server (nginx's upstream time) ${Number.isNaN(m.slowest.upstreamMs) ? 'none: never asked' : `${f1(m.slowest.upstreamMs)} ms${Number.isNaN(m.slowest.headerMs) ? '' : ` (connected after ${f1(m.slowest.connectMs)} ms, first byte of the answer after ${f1(m.slowest.headerMs)} ms)`}`}`,
    );
  // The checkpoints that held every writer in the window (a slow one is an agent write that waited).
  if (m.checkpoints) console.log(`        checkpoints holding writers: ${m.checkpoints}`);
  // Where the agent door's writes waited off the event loop: their turn at the writer thread, SQLite's lock, their statements, the commit.
  if (m.writes) console.log(`        writes by stage: ${m.writes}`);
  // Against nginx's upstream time above: a slow request the server answered fast waited before
  // its admission (the listen queue, the TLS handshake, nginx), not in the server's handling.
  if (m.answers && m.max > P99_GOAL_MS) console.log(`        agent requests as the server timed them: ${m.answers}`);
  // Which requests failed and how, under the row: "errors 19" alone does not say whether the
  // server shed, timed out or the driver gave up.
  if (m.errors)
    console.log(
      `        errors by request: ${Object.entries(m.errorKinds)
        .map(([k, n]) => `${k} ${n}`)
        .join(', ')}; last: ${m.lastError ?? '?'}`,
    );
};
const judge = (m) => {
  if (m.driverDelayP99 > DRIVER_DELAY_LIMIT_MS) return 'drivers saturated';
  if (m.enrolled < m.agents * 0.995) return 'not all enrolled';
  return m.p99 <= P99_GOAL_MS && m.max <= MAX_GOAL_MS && m.errors === 0 && m.listMax < ADMIN_GOAL_MS && m.statsMax < ADMIN_GOAL_MS
    ? 'ok'
    : 'over the goal';
};

/** Sets the bench's configuration: its queries as a pack, and a file sink for their results. */
async function configure(api, headers) {
  const json = { ...headers, 'content-type': 'application/json' };
  const packs = { bench: { queries: SCHEDULE } };
  const put = await fetch(`${api}/api/v1/environments/prod/config/packs`, { method: 'PUT', headers: json, body: JSON.stringify(packs) });
  if (!put.ok) throw new Error(`setting the pack: HTTP ${put.status} ${await put.text()}`);
  const env = await (await fetch(`${api}/api/v1/environments/prod`, { headers })).json();
  for (const source of ['result', 'status']) {
    const r = await fetch(`${api}/api/v1/log-sinks`, {
      method: 'POST',
      headers: json,
      body: JSON.stringify({
        name: `bench-${source}`,
        type: 'file',
        source,
        environment_id: env.id,
        config: { path: `bench-${source}.log` },
      }),
    });
    if (!r.ok) throw new Error(`adding a file sink: HTTP ${r.status} ${await r.text()}`);
  }
  return env;
}

/**
 * One server, one set of agents (the simulator's drivers, or --agent-command behind nginx): the
 * ladder (or the sustained hold). Returns the measured windows. `workers`: --workers of the
 * server (undefined: its default).
 */
async function run(workers, name) {
  const srv = await startFleetServer(workers, name);
  const { urls } = srv;
  const out = { workers: workers ?? 'default', processes: srv.processes, rungs: [], sustain: [] };
  let agents;
  try {
    const login = await fetch(`${urls.api}/api/v1/login/prod`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'admin', password: PASSWORD }),
    });
    const { token } = await login.json();
    const headers = { authorization: `Bearer ${token}` };
    // The event-loop figures come from /metrics of the API, which serves them once the setting says so.
    await fetch(`${urls.api}/api/v1/settings/api/service_metrics`, {
      method: 'PATCH',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ boolean: true }),
    });
    const enrollValue = async (target) =>
      (await (await fetch(`${urls.api}/api/v1/environments/prod/enroll/${target}`, { headers })).json()).data;
    const env = await configure(urls.api, headers);
    const secret = String(await enrollValue('secret')).trim();
    const agentUrl = new URL(urls.agents);

    // The idle server: what it costs doing nothing (timers, flushes, caches), before any agent.
    if (IDLE_S > 0) {
      await sleep(IDLE_SETTLE_S * 1000);
      await serverLoop(urls.api, headers);
      const c0 = treeCpuSeconds(srv.server.pid);
      const w0 = Date.now();
      await sleep(IDLE_S * 1000);
      const c1 = treeCpuSeconds(srv.server.pid);
      const loop = await serverLoop(urls.api, headers);
      out.idle = { cpu: (c1.cpu - c0.cpu) / ((Date.now() - w0) / 1000), loopP99: loop.p99, loopMax: loop.max, seconds: IDLE_S };
      console.log(
        `idle server (${srv.processes} process(es), ${IDLE_S} s after ${IDLE_SETTLE_S} s settling, no agent): ${(out.idle.cpu * 100).toFixed(2)}% of a core, event loop p99 ${f1(loop.p99)} ms, max ${f1(loop.max)} ms`,
      );
    }
    const idleCpu = out.idle?.cpu ?? 0;

    if (AGENT_COMMAND) {
      const { startProxy, externalAgents } = await import('./agent-external.mjs');
      const dir = join(tmp, `proxy-${name}`);
      const proxy = await startProxy({
        dir,
        upstream: { host: agentUrl.hostname, port: Number(agentUrl.port) },
        env,
        paths: AGENT_PATHS,
        cert,
        key,
        keepaliveS: PROXY_KEEPALIVE_S,
        withFileLimit,
        fileLimit,
        children,
      });
      agents = externalAgents({
        command: AGENT_COMMAND,
        proxy,
        env,
        paths: AGENT_PATHS,
        secret,
        ramp: RAMP,
        dir,
        seed: SEED ?? t0 % 1_000_000,
        withFileLimit,
        children,
      });
      console.log(
        `agents: ${AGENT_COMMAND.split(' ')[0]} through nginx at ${proxy.url} (${AGENT_PATHS === 'fleet' ? "Fleet's /api/osquery paths" : 'our paths'} -> ${urls.agents}); its output in ${dir}, nginx's access log ${proxy.accessLog}`,
      );
    } else {
      const { parseAgentFlags } = await import(join(root, 'dist', 'agent-sim.js'));
      const flags = parseAgentFlags(await enrollValue('flags'));
      agents = await startDrivers({
        flags,
        secret,
        seed: `bench-${t0}-${name}`,
        ca: readFileSync(cert, 'utf8'),
        connect: { host: agentUrl.hostname, port: Number(agentUrl.port) },
        intervals: INTERVALS,
        timeoutMs: 30_000,
        localAddresses: LOCAL_ADDRESSES,
      });
    }
    const genCpuSeconds = () => agents.pids().reduce((a, p) => a + treeCpuSeconds(p).cpu, 0);

    /** Admin reads beside the agents: a page of the list and the stats, one at a time, every 500 ms. */
    const adminProbe = () => {
      const lists = [];
      const stats = [];
      let on = true;
      const done = (async () => {
        for (let i = 0; on; i++) {
          const isList = i % 2 === 0;
          const s = performance.now();
          const r = await fetch(`${urls.api}${isList ? `/api/v1/nodes/prod?page_size=50&page=${1 + (i % 5)}` : '/api/v1/stats'}`, {
            headers,
          });
          await r.arrayBuffer();
          (isList ? lists : stats).push(r.ok ? performance.now() - s : Infinity);
          await sleep(500);
        }
      })();
      return { stop: async () => ((on = false), await done, { lists: lists.sort((a, b) => a - b), stats: stats.sort((a, b) => a - b) }) };
    };

    /** Adds agents at RAMP a second until `target` (an external command ramps itself), then waits for them to enroll. */
    let total = 0;
    let enrolledSoFar = 0;
    let gaveUpSoFar = 0;
    /** `poll`: sample the agents for their enrolled count (else the concurrent windows of --sustain update it). */
    const rampTo = async (target, poll) => {
      const start = Date.now();
      if (agents.external) {
        agents.add(target - total);
        total = target;
      }
      while (total < target) {
        const step = Math.min(target - total, Math.max(1, Math.round(RAMP / 5)));
        agents.add(step);
        total += step;
        await sleep(200);
      }
      const deadline = Date.now() + Math.max(60_000, (target / RAMP) * 2000);
      while (Date.now() < deadline && enrolledSoFar + gaveUpSoFar < target) {
        if (poll) ({ enrolled: enrolledSoFar, gaveUp: gaveUpSoFar } = await agents.sample());
        await sleep(1000);
      }
      return { seconds: (Date.now() - start) / 1000, enrolled: enrolledSoFar, gaveUp: gaveUpSoFar };
    };

    /** One measured window: agent latency and errors, server CPU per request and its event loop, admin reads. */
    let c0 = treeCpuSeconds(srv.server.pid);
    let g0 = genCpuSeconds();
    let w0 = Date.now();
    const scrape0 = await serverLoop(urls.api, headers);
    let invalid0 = scrape0.invalid;
    let checkpoints0 = scrape0.checkpoints;
    let writes0 = scrape0.writes;
    let answers0 = scrape0.answers;
    await agents.sample(); // discard what came before
    const measure = async (target, windowS) => {
      const load0 = uptime();
      const probe = adminProbe();
      await sleep(windowS * 1000);
      const s = await agents.sample();
      const c1 = treeCpuSeconds(srv.server.pid);
      const g1 = genCpuSeconds();
      const w1 = Date.now();
      const loop = await serverLoop(urls.api, headers);
      const secs = (w1 - w0) / 1000;
      const admin = await probe.stop();
      enrolledSoFar = s.enrolled;
      gaveUpSoFar = s.gaveUp;
      const { latencies: all, errors: errorCount, requests } = windowTotals(s);
      const cpuS = c1.cpu - c0.cpu;
      const kinds = Object.fromEntries(
        Object.entries(s.lat).map(([k, v]) => {
          const sorted = v.sort((a, b) => a - b);
          return [k, { requests: v.length, p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted.at(-1) ?? 0 }];
        }),
      );
      const m = {
        agents: target,
        enrolled: s.enrolled,
        connections: s.connections,
        seconds: secs,
        requests,
        rps: requests / secs,
        perAgentMin: ((requests / secs) * 60) / Math.max(1, s.enrolled),
        p50: percentile(all, 50),
        p99: percentile(all, 99),
        max: all.at(-1) ?? 0,
        errors: errorCount,
        errorKinds: s.errors,
        lastError: s.lastError,
        slowest: s.slowest,
        kinds,
        nodeInvalid: loop.invalid - invalid0,
        checkpoints: slowestBetween(checkpoints0, loop.checkpoints),
        writes: slowestBetween(writes0, loop.writes),
        answers: slowestBetween(answers0, loop.answers),
        listP99: percentile(admin.lists, 99),
        listMax: admin.lists.at(-1) ?? 0,
        statsP99: percentile(admin.stats, 99),
        statsMax: admin.stats.at(-1) ?? 0,
        loopP99: loop.p99,
        loopMax: loop.max,
        serverCpu: cpuS / secs,
        serverProcesses: c1.processes,
        cpuMsPerRequest: requests ? (cpuS * 1000) / requests : 0,
        marginalCpuMsPerRequest: requests ? (Math.max(0, cpuS - idleCpu * secs) * 1000) / requests : 0,
        external: !!agents.external,
        genCpu: (g1 - g0) / secs,
        driverDelayP99: s.loopDelayP99,
        driverLateMax: s.lateMax,
        driverCpuMsPerRequest: requests ? s.driverCpuMs / requests : 0,
        driverRssMiB: s.driverRssMiB,
        load: `${load0} -> ${uptime()}`,
      };
      c0 = c1;
      g0 = g1;
      w0 = w1;
      invalid0 = loop.invalid;
      checkpoints0 = loop.checkpoints;
      writes0 = loop.writes;
      answers0 = loop.answers;
      return m;
    };
    /**
     * Issue 30's readers (--readers): 'follower' long-polls the environment's whole log from its
     * head, as `fleetctl logs --follow`; 'report' reads the uptime report of every node, all pages,
     * starting a read every second (the next waits when one takes longer).
     */
    const logReader = (kind) => {
      const times = [];
      let lines = 0;
      let on = true;
      const get = async (path) => {
        const r = await fetch(`${urls.api}${path}`, { headers });
        if (!r.ok) throw new Error(`${path}: HTTP ${r.status}`);
        return r.json();
      };
      const done = (async () => {
        if (kind === 'none') return;
        if (kind === 'follower') {
          let cursor = (await get('/api/v1/logs/prod?limit=1')).follow_cursor;
          while (on) {
            const s = performance.now();
            const p = await get(`/api/v1/logs/prod?order=asc&limit=1000&wait=25&cursor=${cursor}`);
            times.push(performance.now() - s);
            lines += p.items.length;
            cursor = p.follow_cursor;
          }
          return;
        }
        while (on) {
          const s = performance.now();
          let cursor = '';
          do {
            const p = await get(`/api/v1/reports/prod/pack_bench_uptime?limit=1000${cursor ? `&cursor=${cursor}` : ''}`);
            lines += p.items.length;
            cursor = p.next_cursor ?? '';
          } while (cursor && on);
          const ms = performance.now() - s;
          times.push(ms);
          await sleep(Math.max(0, 1000 - ms));
        }
      })();
      return {
        stop: async () => {
          on = false;
          // A follower's last long poll ends with the next line (lines flow all the time).
          await done;
          const sorted = times.sort((a, b) => a - b);
          return { kind, requests: times.length, lines, p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted.at(-1) ?? 0 };
        },
      };
    };
    /** One steady window with `turn` reading logs beside the agents. */
    const readerWindow = async (target, turn) => {
      const reader = logReader(turn);
      const m = { ...(await measure(target, WINDOW_S)), phase: 'steady' };
      m.reader = await reader.stop();
      out.sustain.push(m);
      line(m, judge(m));
      const r = m.reader;
      console.log(
        `        readers: ${r.kind}${r.requests ? `: ${r.requests} reads of ${r.kind === 'report' ? 'the whole report' : 'the log'}, ${r.lines} ${r.kind === 'report' ? 'node reports' : 'lines'}, p50/p99/max ${f1(r.p50)}/${f1(r.p99)}/${f1(r.max)} ms` : ''}`,
      );
    };

    /** Windows back to back until `until()` says stop (the ramp's own windows of --sustain). */
    const windowsWhile = async (target, phase, until) => {
      while (!until()) {
        const m = { ...(await measure(target, WINDOW_S)), phase };
        out.sustain.push(m);
        line(m, judge(m));
      }
    };

    // Each agent's socket lives in the server process that accepted it: past this, accepts fail
    // (behind nginx the server holds only nginx's kept connections).
    const holdable = agents.external ? Infinity : Math.floor(srv.processes * fileLimit * 0.9);
    console.log(`\n--workers ${workers ?? '(default)'}: ${srv.processes} server process(es), load ${uptime()}`);
    console.log(head);
    for (const n of LADDER) {
      if ((Date.now() - t0) / 1000 > MAX_S) {
        console.log(`(time budget of ${MAX_S} s reached)`);
        break;
      }
      if (n > holdable) {
        console.log(`(${n} agents: past what ${srv.processes} server process(es) with ${fileLimit} open files each can hold; ladder ends)`);
        break;
      }
      if (SUSTAIN) {
        // From the first enrollment: the ramp's windows, then the steady ones.
        let ramped;
        const ramping = rampTo(n, false).then((r) => (ramped = r));
        await agents.sample();
        ({ c0, g0, w0 } = { c0: treeCpuSeconds(srv.server.pid), g0: genCpuSeconds(), w0: Date.now() });
        await windowsWhile(n, 'ramp', () => ramped !== undefined);
        await ramping;
        const windows = Math.max(1, Math.round(HOLD_S / WINDOW_S));
        let w = 0;
        if (READERS) for (; w < windows; w++) await readerWindow(n, READER_TURNS[w % READER_TURNS.length]);
        else await windowsWhile(n, 'steady', () => w++ >= windows);
        for (const m of out.sustain) m.ramp = ramped;
        break;
      }
      const ramp = await rampTo(n, true);
      await sleep(SETTLE_S * 1000);
      await agents.sample();
      ({ c0, g0, w0 } = { c0: treeCpuSeconds(srv.server.pid), g0: genCpuSeconds(), w0: Date.now() });
      await serverLoop(urls.api, headers);
      const m = { ...(await measure(n, WINDOW_S)), ramp };
      out.rungs.push(m);
      const verdict = judge(m);
      line(m, verdict);
      if (verdict !== 'ok' && !KEEP_GOING) break;
    }
  } finally {
    if (agents?.tails)
      for (const [n, tail] of agents.tails().entries()) console.log(`\nlast output of the agent command (copy ${n + 1}):\n${tail}`);
    await agents?.stop();
    await srv.stop();
  }
  return out;
}

/** The highest rung before the first miss. */
const carried = (r) => {
  let best;
  for (const m of r.rungs) {
    if (judge(m) !== 'ok') break;
    best = m;
  }
  return best;
};

// Stopped from outside (Ctrl-C, a timeout): the server, its workers and the drivers go too.
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    for (const c of children) c.kill('SIGKILL');
    cluster?.stop();
    rmSync(tmp, { recursive: true, force: true });
    process.exit(130);
  });
}

const results = {
  machine: { cpus: cpus().length, model: cpus()[0]?.model, fileLimit },
  options: {
    LADDER,
    WINDOW_S,
    SETTLE_S,
    RAMP,
    DRIVERS,
    PROFILE,
    PG,
    INTERVALS,
    SCHEDULE,
    SEED,
  },
  runs: [],
};
try {
  console.log(
    `fleetctl agent load benchmark: ${cpus().length} CPUs (${cpus()[0]?.model}), load ${uptime()}; ${PG ? 'PostgreSQL' : 'SQLite'}; open files per process ${fileLimit}`,
  );
  if (AGENT_COMMAND)
    console.log(
      `agents: the external command at nice ${(await import('./agent-external.mjs')).AGENT_NICE} (its own intervals${SEED === undefined ? '' : `, seed ${SEED}`}), ramp ${RAMP}/s; a pack of ${Object.entries(
        SCHEDULE,
      )
        .map(([n, q]) => `${n}/${q.interval}s`)
        .join(', ')}; latency is nginx's request time`,
    );
  else
    console.log(
      `agents (--profile ${PROFILE}): ${DRIVERS} driver processes, one TLS connection each, ramp ${RAMP}/s; intervals config ${INTERVALS.config / 1000} s, distributed ${INTERVALS.distributed / 1000} s, logger ${INTERVALS.log / 1000} s; a pack of ${Object.entries(
        SCHEDULE,
      )
        .map(([n, q]) => `${n}/${q.interval}s`)
        .join(', ')}; latency from the moment each request is sent`,
    );
  console.log(
    `window ${WINDOW_S} s${SUSTAIN ? ', from the first enrollment' : ` after ${SETTLE_S} s settling`}; goal: agent p99 <= ${P99_GOAL_MS} ms, max <= ${MAX_GOAL_MS} ms, no errors, steady server CPU <= ${CPU_GOAL_MS} ms per request, nodes list and stats < ${ADMIN_GOAL_MS} ms; file sinks for results and status logs`,
  );
  if (COMPARE) {
    for (const w of COMPARE) results.runs.push(await run(Number(w), `w${w}`));
    console.log('\nworkers   carried at the goal (agents, req/s)   CPU ms/req there');
    const base = carried(results.runs[0]);
    for (const r of results.runs) {
      const c = carried(r);
      console.log(
        `${String(r.workers).padStart(7)}   ${c ? `${c.agents} agents, ${c.rps.toFixed(0)} req/s` : 'none'}${c && base && r !== results.runs[0] ? ` = ${(c.rps / base.rps).toFixed(2)}x of --workers ${results.runs[0].workers}` : ''}   ${c ? c.cpuMsPerRequest.toFixed(3) : '-'}`,
      );
    }
  } else {
    const r = await run(WORKERS ? Number(WORKERS) : undefined, 'main');
    results.runs.push(r);
    if (SUSTAIN) {
      const all = r.sustain.filter((m) => m.phase === 'steady');
      const worst = (f) => Math.max(...all.map(f));
      const requests = all.reduce((a, m) => a + m.requests, 0);
      const cpuMs = all.reduce((a, m) => a + m.cpuMsPerRequest * m.requests, 0);
      const latencyOk = all.length > 0 && all.every((m) => judge(m) === 'ok');
      const cpuOk = cpuMs / Math.max(1, requests) <= CPU_GOAL_MS;
      const ok = latencyOk && cpuOk;
      const marginalMs = all.reduce((a, m) => a + m.marginalCpuMsPerRequest * m.requests, 0);
      const ramp = r.sustain.filter((m) => m.phase === 'ramp');
      if (ramp.length)
        console.log(
          `\nramp (${ramp.length} window(s)): worst p99 ${f1(Math.max(...ramp.map((m) => m.p99)))} ms, max ${f1(Math.max(...ramp.map((m) => m.max)))} ms, errors ${ramp.reduce((a, m) => a + m.errors, 0)}, event loop max ${f1(Math.max(...ramp.map((m) => m.loopMax)))} ms`,
        );
      console.log(
        `${ramp.length ? '' : '\n'}steady ${SUSTAIN} agents for ${all.length} x ${WINDOW_S} s: worst window p99 ${f1(worst((m) => m.p99))} ms, max ${f1(worst((m) => m.max))} ms, errors ${all.reduce((a, m) => a + m.errors, 0)}, node_invalid ${all.reduce((a, m) => a + m.nodeInvalid, 0)}, event loop p99 <= ${f1(worst((m) => m.loopP99))} ms, longest pause ${f1(worst((m) => m.loopMax))} ms, nodes list max ${f1(worst((m) => m.listMax))} ms, stats max ${f1(worst((m) => m.statsMax))} ms, server CPU ${(cpuMs / Math.max(1, requests)).toFixed(3)} ms per agent request (${(marginalMs / Math.max(1, requests)).toFixed(3)} marginal, over ${requests} requests): ${ok ? 'GOAL MET' : `goal missed (${[latencyOk ? '' : 'latency, errors or admin reads', cpuOk ? '' : `CPU over ${CPU_GOAL_MS} ms per request`].filter(Boolean).join('; ')})`}`,
      );
      results.sustainOk = ok;
      if (BASELINE) {
        const { runBaseline } = await import('./agent-baseline.mjs');
        const windows = Math.max(1, Math.round(BASELINE_HOLD_S / WINDOW_S));
        console.log(
          `\nbaseline: the same command, ${SUSTAIN} agents, through the same nginx, against node:https alone (bench/agent-baseline-server.mjs: bodies read and parsed, constant answers, no framework, ${BASELINE_STORE ? 'node keys stored and checked, each log batch committed to SQLite before its answer' : 'no database'}), ${windows} x ${WINDOW_S} s after its ramp; load ${uptime()}`,
        );
        const base = await runBaseline({
          agents: SUSTAIN,
          windows,
          windowS: WINDOW_S,
          command: AGENT_COMMAND,
          paths: AGENT_PATHS,
          packs: { bench: { queries: SCHEDULE } },
          cert,
          key,
          dir: join(tmp, 'baseline'),
          ramp: RAMP,
          seed: SEED ?? (t0 + 1) % 1_000_000,
          keepaliveS: PROXY_KEEPALIVE_S,
          withFileLimit,
          fileLimit,
          dbPath: BASELINE_STORE ? join(tmp, 'baseline-store.db') : undefined,
          log: (m) =>
            console.log(
              `baseline  ${String(Math.round(m.requests / m.seconds)).padStart(5)} req/s  p50/p99/max ${f1(m.p50)}/${f1(m.p99)}/${f1(m.max)} ms  errors ${m.errors}  CPU ${(m.cpu * 100).toFixed(1)}%  ${m.cpuMsPerRequest.toFixed(3)} ms/req  load ${uptime()}`,
            ),
        });
        const baseRequests = base.reduce((a, m) => a + m.requests, 0);
        const baseMs = base.reduce((a, m) => a + m.cpuMsPerRequest * m.requests, 0) / Math.max(1, baseRequests);
        const oursMs = cpuMs / Math.max(1, requests);
        results.baseline = { store: BASELINE_STORE, stored: base.stored, windows: base, cpuMsPerRequest: baseMs, ratio: oursMs / baseMs };
        if (base.stored) console.log(`baseline stored ${base.stored.nodes} node keys and ${base.stored.lines} log lines`);
        console.log(
          `baseline: ${baseMs.toFixed(3)} ms per agent request over ${baseRequests} requests, errors ${base.reduce((a, m) => a + m.errors, 0)}, worst window p99 ${f1(Math.max(...base.map((m) => m.p99)))} ms, max ${f1(Math.max(...base.map((m) => m.max)))} ms (${base.filter((m) => m.max <= MAX_GOAL_MS).length} of ${base.length} windows with max <= ${MAX_GOAL_MS} ms); fleetctl's ${oursMs.toFixed(3)} ms is ${(oursMs / baseMs).toFixed(2)}x of it`,
        );
      }
      if (READERS) {
        // Each kind of window against the windows without readers: the agents' p99 and CPU per request.
        const by = (kind) => all.filter((m) => m.reader?.kind === kind);
        const mean = (ms, f) => ms.reduce((a, m) => a + f(m), 0) / Math.max(1, ms.length);
        const base = by('none');
        for (const kind of ['follower', 'report']) {
          const ms = by(kind);
          if (!ms.length || !base.length) continue;
          const p99 = mean(ms, (m) => m.p99) / mean(base, (m) => m.p99);
          const cpu = mean(ms, (m) => m.cpuMsPerRequest) / mean(base, (m) => m.cpuMsPerRequest);
          console.log(
            `with ${kind === 'follower' ? 'a follower attached' : 'the report of every node read every second'} (${ms.length} windows against ${base.length} without): agent p99 ${f1(mean(ms, (m) => m.p99))} ms vs ${f1(mean(base, (m) => m.p99))} ms (x${p99.toFixed(2)}), server CPU ${mean(ms, (m) => m.cpuMsPerRequest).toFixed(3)} vs ${mean(base, (m) => m.cpuMsPerRequest).toFixed(3)} ms per agent request (x${cpu.toFixed(2)})`,
          );
        }
      }
    } else if (r.rungs.length) {
      const best = carried(r);
      const last = r.rungs.at(-1);
      console.log(
        `\nsustained: ${best ? best.agents : 0} agents with agent p99 <= ${P99_GOAL_MS} ms, no errors, admin reads < ${ADMIN_GOAL_MS} ms`,
      );
      console.log(
        `server CPU per agent request: ${last.cpuMsPerRequest.toFixed(3)} ms at ${last.agents} agents (${last.rps.toFixed(0)} req/s, ${last.perAgentMin.toFixed(2)} requests per agent per minute)`,
      );
      if (last.cpuMsPerRequest > 0) {
        const perCore = 1000 / last.cpuMsPerRequest;
        console.log(
          `projection: one core answers ~${perCore.toFixed(0)} agent requests/s = ~${Math.round((perCore * 60) / last.perAgentMin).toLocaleString('en')} agents at these intervals; 100,000 agents need ~${((((100_000 * last.perAgentMin) / 60) * last.cpuMsPerRequest) / 1000).toFixed(2)} cores of server CPU`,
        );
      }
      results.sustained = best?.agents ?? 0;
    }
  }
  console.log(`bench time ${((Date.now() - t0) / 1000).toFixed(0)} s, load ${uptime()}`);
  mkdirSync(join(root, 'bench', 'results'), { recursive: true });
  const file = join(root, 'bench', 'results', `agents-${new Date().toISOString().replaceAll(':', '-')}.json`);
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
  console.log(`results: ${file}`);
} finally {
  for (const c of children) c.kill('SIGKILL');
  cluster?.stop();
  rmSync(tmp, { recursive: true, force: true });
}
