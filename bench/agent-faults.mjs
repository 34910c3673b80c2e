#!/usr/bin/env node
// The figures of issue 18 ("Done when"), measured against a real `fleetctl server` process with
// the agent simulator (`fleetctl dev agents`' engine) in this process. Loopback only; each
// scenario is bounded in time. Prints one block per scenario with the machine's load.
//
//   pg-restart  PostgreSQL (a throwaway cluster) stopped for --outage seconds (default 20) under
//               --agents simulated agents (default 1,000) with file sinks: agents re-enrolled,
//               acknowledged log lines missing from the sink files, whether the server stayed up.
//   flood       one agent floods gzip log bodies (16 MB of lines in ~16 KB) into a slow HTTP sink
//               for --seconds (default 60) beside --agents others (default 500): the server's peak
//               RSS, and the other agents' check-in p99 over the flood.
//   overload    --peak agents (default 15,000) enrolling at once, then all but --after (default
//               5,000) stop: the remaining agents' check-in p99 per 10 s window after the drop, and
//               how long until it is back under 100 ms.
//   kill9-backlog, sink-down, replicas, disk-full: the log spool's figures (issue 28), in bench/spool-faults.mjs.
//
// Usage: npm run build && node bench/agent-faults.mjs pg-restart|flood|overload [options]
// Run it alone on the machine: its figures are latencies and memory under load.
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { gzipSync } from 'node:zlib';
import { request } from 'node:https';
import { tmpdir, loadavg, cpus } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { selfSignedCert } from './self-signed.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bin = join(root, 'bin', 'fleetctl.cjs');
const scenario = process.argv[2];
const arg = (name, def) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : def;
};
const PASSWORD = 'bench-password-1';
const { Simulator, parseAgentFlags, percentile } = await import(join(root, 'dist', 'agent-sim.js'));
const tmp = mkdtempSync(join(tmpdir(), 'fleetctl-bench-faults-'));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
const uptime = () => execFileSync('uptime', { encoding: 'utf8' }).trim();

const { cert, key } = selfSignedCert(tmp);

async function startServer(extra) {
  const server = spawn(
    process.execPath,
    [
      bin,
      'server',
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
      '1000000',
      '--login-rate-limit',
      '1000',
      '--sink-dir',
      tmp,
      '--metrics-listen',
      '127.0.0.1:0',
      ...extra,
    ],
    // As the README recommends for a server on glibc: two malloc arenas instead of eight per core,
    // so memory freed by the worker and zlib threads goes back instead of staying in their arenas.
    { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, MALLOC_ARENA_MAX: process.env.MALLOC_ARENA_MAX ?? '2' } },
  );
  server.stdin.end(PASSWORD);
  let out = '';
  let err = '';
  server.stderr.on('data', (d) => (err += d));
  server.stdout.resume();
  const urls = await new Promise((resolve, reject) => {
    // The banner is on stderr (stdout is for a stdout sink's NDJSON).
    server.stderr.on('data', (d) => {
      out += d;
      const api = /reference server listening on (https?:\/\/\S+)/.exec(out);
      const agents = /Agent API[^\n]*?(https:\/\/[^\s;]+)/.exec(out);
      const metrics = /Prometheus metrics at (\S+)/.exec(out);
      if (api && agents && metrics) resolve({ api: api[1], agents: agents[1], metrics: metrics[1] });
    });
    server.on('exit', (c) => reject(new Error(`server exited ${c}: ${out} ${err}`)));
  });
  let exited = false;
  server.on('exit', () => (exited = true));
  const login = await fetch(`${urls.api}/api/v1/login/prod`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'admin', password: PASSWORD }),
  });
  const { token } = await login.json();
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const api = async (method, path, body) => {
    const r = await fetch(urls.api + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: r.status, body: await r.json().catch(() => undefined) };
  };
  const flags = parseAgentFlags((await api('GET', '/api/v1/environments/prod/enroll/flags')).body.data);
  const secret = String((await api('GET', '/api/v1/environments/prod/enroll/secret')).body.data).trim();
  const agentUrl = new URL(urls.agents);
  return {
    proc: server,
    urls,
    api,
    flags,
    secret,
    stderr: () => err,
    exited: () => exited,
    connect: { host: agentUrl.hostname, port: Number(agentUrl.port) },
    metric: async (re) => Number(re.exec(await (await fetch(urls.metrics)).text())?.[1] ?? NaN),
    async stop() {
      if (exited) return;
      server.kill('SIGTERM');
      await new Promise((r) => server.once('exit', r));
    },
  };
}

// --per-agent: each agent keeps a TLS connection of its own (as osquery does) instead of sharing 64.
const PER_AGENT = process.argv.includes('--per-agent');
function simulator(s, o) {
  return new Simulator({
    flags: s.flags,
    secret: s.secret,
    ca: readFileSync(cert),
    connect: s.connect,
    connections: 64,
    maxInFlight: 512,
    spread: true,
    timeoutMs: 60_000,
    perAgentConnections: PER_AGENT,
    ...o,
  });
}

const until = async (what, check, maxMs) => {
  const end = Date.now() + maxMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out after ${maxMs / 1000} s waiting for ${what}`);
    await sleep(250);
  }
};

const rss = (pid) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) * 1024;

async function pgRestart() {
  const AGENTS = Number(arg('--agents', '1000'));
  const OUTAGE_S = Number(arg('--outage', '20'));
  const { startCluster } = await import(join(root, 'scripts', 'pg-cluster.mjs'));
  const cluster = await startCluster({ maxConnections: 100 });
  const s = await startServer(['--db', await cluster.createDatabase('bench'), '--db-pool', '10', '--shutdown-grace', '2']);
  try {
    for (const [name, source] of [
      ['status-file', 'status'],
      ['result-file', 'result'],
    ]) {
      const r = await s.api('POST', '/api/v1/log-sinks', {
        name,
        type: 'file',
        source,
        environment_id: 0,
        config: { path: `${source}.jsonl` },
      });
      if (r.status !== 200) throw new Error(`sink: ${JSON.stringify(r.body)}`);
    }
    const acked = new Map();
    let ackedSince = new Set();
    const sim = simulator(s, {
      seed: 'pg-restart',
      intervals: { config: 10_000, log: 4_000, distributed: 10_000 },
      onLogs: (uuid, _type, data) => {
        ackedSince.add(uuid);
        for (const e of data) {
          const k = JSON.stringify(e);
          acked.set(k, (acked.get(k) ?? 0) + 1);
        }
      },
    });
    console.log(`pg-restart: ${AGENTS} agents, file sinks (status, result), PostgreSQL stopped ${OUTAGE_S} s; ${uptime()}`);
    sim.add(AGENTS);
    await until('every agent enrolled and acknowledged', () => sim.enrolled === AGENTS && ackedSince.size === AGENTS, 300_000);
    const keys = sim.agents.map((a) => a.nodeKey);
    // Liveness of the process all along: the admin port answers something (healthz is 503 while the database is away).
    let probes = 0;
    let down = 0;
    let probing = true;
    const probe = (async () => {
      while (probing) {
        probes++;
        await fetch(`${s.urls.api}/healthz`).then(
          (r) => r.arrayBuffer(),
          () => down++,
        );
        await sleep(500);
      }
    })();
    sim.stats.summary(true);
    const t0 = Date.now();
    cluster.pause();
    await sleep(OUTAGE_S * 1000);
    cluster.resume();
    const outage = (Date.now() - t0) / 1000;
    ackedSince = new Set();
    const r0 = Date.now();
    await until('every agent acknowledged again', () => ackedSince.size === AGENTS, 300_000);
    const recovered = (Date.now() - r0) / 1000;
    const during = sim.stats.summary(true);
    await sleep(5000);
    await sim.stop(10_000);
    probing = false;
    await probe;
    const count = (file) => {
      const have = new Map();
      if (!existsSync(file)) return have;
      const text = readFileSync(file, 'utf8');
      for (const line of text.slice(0, text.lastIndexOf('\n') + 1).split('\n')) {
        if (!line) continue;
        const k = JSON.stringify(JSON.parse(line).entry);
        have.set(k, (have.get(k) ?? 0) + 1);
      }
      return have;
    };
    let missing = 0;
    let total = 0;
    await until(
      'the sinks to catch up',
      () => {
        const have = new Map([...count(join(tmp, 'status.jsonl'))]);
        for (const [k, v] of count(join(tmp, 'result.jsonl'))) have.set(k, (have.get(k) ?? 0) + v);
        missing = 0;
        total = 0;
        for (const [k, c] of acked) {
          total += c;
          missing += Math.max(0, c - (have.get(k) ?? 0));
        }
        return missing === 0;
      },
      60_000,
    ).catch(() => undefined);
    const enrolls = (during.enroll?.requests ?? 0) + (sim.stats.summary().enroll?.requests ?? 0);
    const reenrolled = sim.agents.filter((a, i) => a.nodeKey !== keys[i]).length;
    const invalid = await s.metric(/fleetctl_agent_node_invalid_total (\d+)/);
    console.log(
      `  outage ${outage.toFixed(1)} s; check-ins during and after it: ${during.checkin?.requests ?? 0} (${during.checkin?.errors ?? 0} answered 5xx or failed)`,
    );
    console.log(
      `  agents re-enrolled: ${reenrolled} of ${AGENTS} (node keys changed; enroll requests after the outage began: ${enrolls}); node_invalid answers (server metric): ${invalid}`,
    );
    console.log(`  acknowledged log lines: ${total}; missing from the sink files: ${missing}`);
    console.log(
      `  server up throughout: ${!s.exited() && down === 0 ? 'yes' : 'NO'} (${probes} liveness probes, ${down} unanswered; process ${s.exited() ? 'exited' : 'running'})`,
    );
    console.log(`  every agent acknowledged again ${recovered.toFixed(1)} s after PostgreSQL started; ${uptime()}`);
  } finally {
    await s.stop();
    cluster.stop();
  }
}

async function flood() {
  const AGENTS = Number(arg('--agents', '500'));
  const SECONDS = Number(arg('--seconds', '60'));
  // A slow HTTP sink: every batch is answered after 200 ms.
  let received = 0;
  const sink = createServer((req, res) => {
    req.on('data', (c) => (received += c.length));
    req.on('end', () => setTimeout(() => res.end('ok'), 200));
  });
  await new Promise((r) => sink.listen(0, '127.0.0.1', r));
  const s = await startServer(['--db', join(tmp, 'fleet.db')]);
  try {
    const r = await s.api('POST', '/api/v1/log-sinks', {
      name: 'slow-http',
      type: 'http',
      source: 'result',
      environment_id: 0,
      config: { url: `http://127.0.0.1:${sink.address().port}/` },
    });
    if (r.status !== 200) throw new Error(JSON.stringify(r.body));
    const sim = simulator(s, { seed: 'flood', intervals: { config: 30_000, log: 4_000, distributed: 10_000 } });
    console.log(`flood: 1 agent flooding ${SECONDS} s into a slow HTTP sink (200 ms a batch), ${AGENTS} other agents; ${uptime()}`);
    sim.add(AGENTS + 1);
    await until('every agent enrolled', () => sim.enrolled === AGENTS + 1, 300_000);
    const flooder = sim.agents[AGENTS];
    const entry = { name: 'pack_flood', columns: { blob: 'x'.repeat(100_000) } };
    const body = gzipSync(
      JSON.stringify({ node_key: flooder.nodeKey, log_type: 'result', data: Array.from({ length: 160 }, () => entry) }),
    );
    const base = rss(s.proc.pid);
    let peak = base;
    const sampler = setInterval(() => (peak = Math.max(peak, rss(s.proc.pid))), 200);
    sim.stats.summary(true);
    const statuses = {};
    const end = Date.now() + SECONDS * 1000;
    const send = () =>
      new Promise((resolve) => {
        const req = request(
          {
            host: s.connect.host,
            port: s.connect.port,
            path: s.flags.logger,
            method: 'POST',
            ca: readFileSync(cert),
            headers: { 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': body.length },
          },
          (res) => {
            statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
            res.resume();
            res.on('end', resolve);
          },
        );
        req.on('error', () => {
          statuses.error = (statuses.error ?? 0) + 1;
          resolve();
        });
        req.end(body);
      });
    // Four connections flooding back to back (the agent's requests, as fast as the server answers).
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (Date.now() < end) await send();
      }),
    );
    clearInterval(sampler);
    const c = sim.stats.summary(true).checkin;
    await sim.stop(5000);
    const sent = Object.values(statuses).reduce((a, b) => a + b, 0);
    console.log(
      `  flood requests: ${sent} (${JSON.stringify(statuses)}), ${(body.length / 1024).toFixed(1)} KB gzip each, ${(sent * 16).toLocaleString('en')} MB of log lines offered; the sink received ${(received / 1048576).toFixed(0)} MB`,
    );
    console.log(
      `  server RSS: ${(base / 1048576).toFixed(0)} MiB before, peak ${(peak / 1048576).toFixed(0)} MiB during the flood (goal < 512 MiB)`,
    );
    console.log(
      `  other agents' check-ins during the flood: ${c?.requests ?? 0} requests, ${c?.errors ?? 0} errors, p50 ${c?.p50_ms} ms, p99 ${c?.p99_ms} ms (goal < 200 ms); ${uptime()}`,
    );
  } finally {
    await s.stop();
    sink.close();
  }
}

async function overload() {
  const PEAK = Number(arg('--peak', '15000'));
  const AFTER = Number(arg('--after', '5000'));
  const HOLD_S = Number(arg('--hold', '60'));
  const s = await startServer(['--db', join(tmp, 'fleet.db'), ...(arg('--server-args', '') ? arg('--server-args', '').split(' ') : [])]);
  try {
    // osquery's intervals (distributed 60 s, logger 4 s, config 300 s); a fast ramp: every agent enrolls at once.
    const intervals = { config: 300_000, log: 4_000, distributed: 60_000 };
    const stay = simulator(s, { seed: 'stay', intervals });
    const leave = simulator(s, { seed: 'leave', intervals });
    console.log(
      `overload: ${PEAK} agents enrolling at once (${cpus().length} CPUs), held ${HOLD_S} s, then ${PEAK - AFTER} leave; ${uptime()}`,
    );
    // The admin door beside the flood: a nodes page every 250 ms (its own budget, issue 18).
    const adminMs = [];
    let probing = true;
    const probe = (async () => {
      while (probing) {
        const a = performance.now();
        await s.api('GET', '/api/v1/nodes/prod?page_size=50').catch(() => undefined);
        adminMs.push(performance.now() - a);
        await sleep(250);
      }
    })();
    const adminP99 = () => {
      const v = adminMs.splice(0).sort((a, b) => a - b);
      return v.length ? percentile(v, 99).toFixed(0) : '-';
    };
    const t0 = Date.now();
    stay.add(AFTER);
    leave.add(PEAK - AFTER);
    const peakEnd = Date.now() + HOLD_S * 1000;
    while (Date.now() < peakEnd) {
      await sleep(10_000);
      const a = stay.stats.summary(true).checkin;
      const b = leave.stats.summary(true).checkin;
      const shed = await s.metric(/fleetctl_http_shed_total\{door="agent"\} (\d+)/);
      console.log(
        `  t=${((Date.now() - t0) / 1000).toFixed(0)} s at peak: enrolled ${stay.enrolled + leave.enrolled}/${PEAK}, check-in p99 ${Math.max(a?.p99_ms ?? 0, b?.p99_ms ?? 0)} ms, errors ${(a?.errors ?? 0) + (b?.errors ?? 0)}, shed so far ${Number.isNaN(shed) ? 0 : shed}, admin nodes-page p99 ${adminP99()} ms, load ${load()}`,
      );
    }
    await leave.stop(2000);
    const d0 = Date.now();
    let backAt;
    for (let w = 0; w < 18; w++) {
      await sleep(10_000);
      const a = stay.stats.summary(true).checkin;
      const t = (Date.now() - d0) / 1000;
      console.log(
        `  +${t.toFixed(0)} s after the drop: ${AFTER} agents (enrolled ${stay.enrolled}), check-ins ${a?.requests ?? 0}, errors ${a?.errors ?? 0}, p50 ${a?.p50_ms} ms, p99 ${a?.p99_ms} ms, admin p99 ${adminP99()} ms, load ${load()}`,
      );
      if (backAt === undefined && a && a.requests > 0 && a.p99_ms < 100 && a.errors === 0) backAt = t;
      if (backAt !== undefined && t >= backAt + 20) break;
    }
    console.log(
      `  p99 back under 100 ms: ${backAt === undefined ? 'NOT within 3 minutes' : `within ${backAt.toFixed(0)} s of the drop (the first 10 s window under 100 ms with no errors)`} (goal: within 2 minutes); gave up enrolling: ${stay.gaveUp + leave.gaveUp}; ${uptime()}`,
    );
    probing = false;
    await probe;
    await stay.stop(2000);
  } finally {
    await s.stop();
  }
}

const { spoolScenarios } = await import('./spool-faults.mjs');
const spool = spoolScenarios({ startServer, arg, tmp, cert, until, uptime, root, sleep });

try {
  if (scenario === 'pg-restart') await pgRestart();
  else if (scenario === 'flood') await flood();
  else if (scenario === 'overload') await overload();
  else if (spool[scenario]) await spool[scenario]();
  else {
    console.error(
      'usage: node bench/agent-faults.mjs pg-restart|flood|overload|kill9-backlog|sink-down|replicas|disk-full [--agents N] [--outage S] [--seconds S] [--peak N] [--after N] [--lines N] [--rate N] [--minutes M] [--pg] [--dir D]',
    );
    process.exitCode = 2;
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
