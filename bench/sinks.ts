// `npm run bench:sinks`: how many log lines per second each sink type delivers to its real peer
// from one server process pinned to one core, and the server's CPU per 1,000 lines (issue 28).
// For each type: its peer is started (test/helpers/peers/), a `fleetctl server` is started on a
// fresh SQLite database pinned to CPU 0 (`taskset -c 0`; the peer and this driver get the other
// core), a sink is created pointing at a closed port, and --lines result lines are posted through
// the agent door by 20 enrolled hosts (1,000 lines a request) while the sink cannot deliver: they
// wait in the spool. Then the sink's config is changed to the peer (the runner retries at once)
// and the clock and the server's CPU time (/proc utime + stime) run until the sink's state says
// every line is delivered; the peer is asked how many it holds. The server's figures are
// lines per second and CPU ms per 1,000 lines (the spool read and cursor writes included).
//   npm run bench:sinks -- [--types syslog,kafka,...] [--lines 100000] [--in-flight 1,4]
// --in-flight: a run per value of the sinks' `in_flight` (batches out at once) against the same
// peer, for ratios in one run; a value a type refuses (an ordered type: only 1) is skipped.
// --cpu-prof DIR: each server writes a V8 CPU profile there when it stops (node --cpu-prof).
// Besides lines/s over the whole drain, each row gives when the first batch was acknowledged
// (the sink's start: connecting, a producer id, a peer's first request) and the rate after it.
//   npm run bench:sinks -- --outage [--agents 1000] [--outage-seconds 60] [--search elasticsearch|opensearch]
// --outage: 1,000 simulated agents log (osquery's 4 s logger period) into a kafka and an elastic
// (Elasticsearch; --search opensearch for OpenSearch) sink; Kafka is stopped for 60 s and started
// again, then Elasticsearch; after both drained, every line the server acknowledged to an agent is
// looked for at each peer: lost and duplicated lines are counted.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent as HttpsAgent, request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { peerSetups, type PeerSetup, type RunningPeer } from './sinks-peers.js';

const root = join(import.meta.dirname, '..');
const bin = join(root, 'bin', 'fleetctl.cjs');
const arg = (name: string, def?: string) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : def;
};
const LINES = Number(arg('--lines', '100000'));
const IN_FLIGHT = arg('--in-flight')?.split(',').map(Number);
const PASSWORD = 'bench-password-1';
const HOSTS = 20;
const PER_REQUEST = 1000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const load = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
const tmp = mkdtempSync(join(tmpdir(), 'fleetctl-bench-sinks-'));
execFileSync(
  'openssl',
  [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    join(tmp, 'agent.key'),
    '-out',
    join(tmp, 'agent.crt'),
    '-days',
    '2',
    '-subj',
    '/CN=127.0.0.1',
    '-addext',
    'subjectAltName=IP:127.0.0.1',
  ],
  { stdio: 'ignore' },
);
const CA = readFileSync(join(tmp, 'agent.crt'));

export interface BenchServer {
  proc: ChildProcess;
  api(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
  agentPost(path: string, body: unknown): Promise<{ status: number; body: any }>;
  flags: { enroll: string; logger: string };
  secret: string;
  /** Where the agent listener is (the simulator connects there). */
  agentAddress: { host: string; port: number };
  cpuMs(): number;
  stop(): Promise<void>;
}

export async function startBenchServer(dir: string, extra: string[] = []): Promise<BenchServer> {
  const args = [
    bin,
    'server',
    '--listen',
    '127.0.0.1:0',
    '--agent-listen',
    '127.0.0.1:0',
    '--agent-tls-cert',
    join(tmp, 'agent.crt'),
    '--agent-tls-key',
    join(tmp, 'agent.key'),
    '--create-env',
    'prod',
    '--admin-password-stdin',
    '--api-rate-limit',
    '1000000',
    '--login-rate-limit',
    '1000',
    '--db',
    join(dir, 'fleet.db'),
    '--sink-dir',
    dir,
    ...extra,
  ];
  // One core: the server process on CPU 0, the peer and this driver on the rest.
  const prof = arg('--cpu-prof');
  const proc = spawn('taskset', ['-c', '0', process.execPath, ...(prof ? ['--cpu-prof', '--cpu-prof-dir', prof] : []), ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, MALLOC_ARENA_MAX: '2' },
  });
  proc.stdin.end(PASSWORD);
  // The banner is on stderr (stdout belongs to stdout sinks); both are read.
  let out = '';
  const urls = await new Promise<{ api: string; agents: string }>((resolve, reject) => {
    const read = (d: Buffer) => {
      out += d.toString();
      const api = /reference server listening on (https?:\/\/\S+)/.exec(out);
      const agents = /Agent API[^\n]*?(https:\/\/[^\s;]+)/.exec(out);
      if (api && agents) resolve({ api: api[1], agents: agents[1] });
    };
    proc.stdout.on('data', read);
    proc.stderr.on('data', read);
    proc.on('exit', (c) => reject(new Error(`server exited ${c}: ${out}`)));
  });
  const login = await fetch(`${urls.api}/api/v1/login/prod`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'admin', password: PASSWORD }),
  });
  const { token } = (await login.json()) as { token: string };
  const api = async (method: string, path: string, body?: unknown) => {
    const r = await fetch(urls.api + path, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: r.status, body: (await r.json().catch(() => undefined)) as any };
  };
  const flagsText = String((await api('GET', '/api/v1/environments/prod/enroll/flags')).body.data);
  const flag = (n: string) => new RegExp(`^--${n}=(.*)$`, 'm').exec(flagsText)?.[1] ?? '';
  const secret = String((await api('GET', '/api/v1/environments/prod/enroll/secret')).body.data).trim();
  const agentUrl = new URL(urls.agents);
  const agent = new HttpsAgent({ keepAlive: true, maxSockets: 8, ca: CA });
  const agentPost = (path: string, body: unknown) =>
    new Promise<{ status: number; body: any }>((resolve, reject) => {
      const data = Buffer.from(JSON.stringify(body));
      const req = request(
        {
          host: agentUrl.hostname,
          port: Number(agentUrl.port),
          path,
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', 'content-length': data.length },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8') || 'null') }));
        },
      );
      req.on('error', reject);
      req.end(data);
    });
  // taskset execs node: the PID is the server's.
  const cpuMs = () => {
    const f = readFileSync(`/proc/${proc.pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1000) / 100;
  };
  return {
    proc,
    api,
    agentPost,
    flags: { enroll: flag('enroll_tls_endpoint'), logger: flag('logger_tls_endpoint') },
    secret,
    agentAddress: { host: agentUrl.hostname, port: Number(agentUrl.port) },
    cpuMs,
    async stop() {
      agent.destroy();
      if (proc.exitCode !== null) return;
      proc.kill('SIGTERM');
      await new Promise((r) => proc.once('exit', r));
    },
  };
}

/** A result line as osquery writes it. */
function resultLine(host: string, uuid: string, run: string, seq: number): Record<string, unknown> {
  const t = Math.floor(Date.now() / 1000);
  return {
    name: 'pack_bench_processes',
    hostIdentifier: uuid,
    calendarTime: new Date(t * 1000).toUTCString(),
    unixTime: t,
    epoch: 0,
    counter: seq,
    numerics: false,
    decorations: { host_uuid: uuid, hostname: host },
    columns: {
      pid: String(1000 + (seq % 30000)),
      name: 'osqueryd',
      path: '/opt/osquery/bin/osqueryd',
      cmdline: '/opt/osquery/bin/osqueryd --flagfile=/etc/osquery/osquery.flags',
      run,
      seq: String(seq),
    },
    action: 'added',
  };
}

async function fill(s: BenchServer, run: string, lines: number): Promise<void> {
  const keys: { key: string; uuid: string; host: string }[] = [];
  for (let h = 0; h < HOSTS; h++) {
    const uuid = `bench-${run}-${h}`;
    const r = await s.agentPost(s.flags.enroll, {
      enroll_secret: s.secret,
      host_identifier: uuid,
      host_details: { system_info: { hostname: `host-${h}`, uuid } },
    });
    if (r.status !== 200 || !r.body?.node_key) throw new Error(`enroll: ${r.status} ${JSON.stringify(r.body)}`);
    keys.push({ key: r.body.node_key, uuid, host: `host-${h}` });
  }
  let next = 0;
  const worker = async () => {
    while (next < lines) {
      const from = next;
      next += PER_REQUEST;
      const k = keys[(from / PER_REQUEST) % HOSTS];
      const data = Array.from({ length: Math.min(PER_REQUEST, lines - from) }, (_, i) => resultLine(k.host, k.uuid, run, from + i));
      for (;;) {
        const r = await s.agentPost(s.flags.logger, { node_key: k.key, log_type: 'result', data });
        if (r.status === 200) break;
        if (r.status !== 503) throw new Error(`log: ${r.status} ${JSON.stringify(r.body)}`);
        await sleep(500);
      }
    }
  };
  await Promise.all(Array.from({ length: 4 }, worker));
}

async function sinkState(s: BenchServer, id: number): Promise<any> {
  const r = await s.api('GET', '/api/v1/log-sinks?environment_id=0');
  return (r.body as any[]).find((x) => x.id === id)?.state;
}

async function benchType(setup: PeerSetup): Promise<string[]> {
  const peer = await setup.start();
  try {
    const rows: string[] = [];
    for (const n of IN_FLIGHT ?? [undefined]) rows.push(await benchRun(setup, peer, n));
    return rows;
  } finally {
    await peer.stop();
  }
}

async function benchRun(setup: PeerSetup, peer: RunningPeer, inFlight: number | undefined): Promise<string> {
  const dir = mkdtempSync(join(tmp, `${setup.type}-`));
  const s = await startBenchServer(dir);
  const extra = inFlight === undefined ? {} : { in_flight: inFlight };
  const label = `${setup.type}${inFlight === undefined ? '' : ` (in_flight ${inFlight})`}`;
  try {
    const created = await s.api('POST', '/api/v1/log-sinks', {
      name: `bench-${setup.type}`,
      type: setup.type,
      source: 'result',
      environment_id: 0,
      config: { ...peer.closedConfig, ...extra },
    });
    if (created.status === 400 && inFlight !== undefined)
      return `| ${label} | ${setup.peer} | skipped: ${JSON.stringify(created.body?.message ?? created.body)} |`;
    if (created.status !== 200) throw new Error(`create sink: ${created.status} ${JSON.stringify(created.body)}`);
    const id = created.body.id as number;
    const run = `${setup.type}-${Date.now()}`;
    await fill(s, run, LINES);
    for (;;) {
      const st = await sinkState(s, id);
      if (Number(st?.backlog_entries) >= LINES) break;
      await sleep(200);
    }
    const load0 = load();
    const cpu0 = s.cpuMs();
    const t0 = performance.now();
    const patched = await s.api('PATCH', `/api/v1/log-sinks/${id}`, { config: { ...peer.config, ...extra } });
    if (patched.status !== 200) throw new Error(`patch sink: ${patched.status} ${JSON.stringify(patched.body)}`);
    let st: any;
    let firstMs = 0;
    let firstLines = 0;
    for (;;) {
      st = await sinkState(s, id);
      if (!firstMs && Number(st?.delivered) > 0) {
        firstMs = performance.now() - t0;
        firstLines = Number(st.delivered);
      }
      if (Number(st?.delivered) + Number(st?.rejected ?? 0) >= LINES) break;
      if (performance.now() - t0 > 600_000) throw new Error(`not drained in 10 minutes: ${JSON.stringify(st)}`);
      await sleep(50);
    }
    const seconds = (performance.now() - t0) / 1000;
    const cpu = s.cpuMs() - cpu0;
    const atPeer = await peer.count(run);
    return `| ${label} | ${setup.peer} | ${LINES.toLocaleString('en')} | ${Math.round(LINES / seconds).toLocaleString('en')} | ${Math.round(firstMs)} | ${firstLines < LINES && seconds > firstMs / 1000 ? Math.round((LINES - firstLines) / (seconds - firstMs / 1000)).toLocaleString('en') : '-'} | ${((cpu / LINES) * 1000).toFixed(1)} | ${atPeer.toLocaleString('en')}${st.rejected ? ` (${st.rejected} rejected)` : ''} | ${load0} -> ${load()} |`;
  } finally {
    await s.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  if (process.argv.includes('--outage')) {
    const { outageRun } = await import('./sinks-outage.js');
    await outageRun({ startBenchServer, tmp });
    return;
  }
  const types = arg('--types')?.split(',');
  const setups = peerSetups().filter((p) => !types || types.includes(p.type) || types.includes(p.name));
  console.log(
    `bench:sinks: ${LINES.toLocaleString('en')} result lines per type, server pinned to CPU 0 (taskset), ${HOSTS} hosts posting ${PER_REQUEST} lines a request; load ${load()}`,
  );
  console.log(
    '| type | peer | lines | lines/s | first acknowledgement (ms) | lines/s after it | server CPU ms / 1,000 lines | at the peer | load (1/5/15 min) before -> after |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const setup of setups) {
    try {
      for (const row of await benchType(setup)) console.log(row);
    } catch (e) {
      console.log(`| ${setup.type} | ${setup.peer} | failed: ${(e as Error).message.split('\n')[0]} |`);
    }
  }
}

try {
  await main();
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
