#!/usr/bin/env node
// `npm run bench`: every figure of the performance table (README "Performance"), each against a
// baseline measured in the same run, so the ratios compare across machines and noisy runs:
//   CLI    whole-process wall times (median of several runs) and peak RSS (bench/rss-probe.mjs);
//   server autocannon against `fleetctl server --dev --dev-nodes 100000`, and against a bare
//          Fastify (bench/baselines/bare-fastify.mjs) returning the same page object.
// Prints a table (figure, value, baseline, ratio, goal, pass/fail) and writes
// bench/results/<time>.json. Usage: npm run bench [-- --nodes 100000 --duration 5 --runs 9]
// The PostgreSQL rows (issue 14: a throwaway cluster, the same fleet seeded into it, list,
// search and stats on one replica, then two replicas on one database against one) run when
// PostgreSQL's server binaries are installed (`--no-pg` skips them; `--pg-only` runs only those).
// Every filter and sort (issue 21): each `nodes list` filter, sort and order, and each `audit
// list` filter over 1,000,000 audit rows, at 20 connections asking for pages 1-5 at random,
// while a second process writes check-ins into the database as 100,000 agents would (bench/
// checkin-writer.mjs: the server's own check-in statements, 3,700 a second from the agents that
// are checking in, and --wakeups a second from nodes asleep for days, each of which moves the
// counts counter: the cached totals are counted again every second they do). `--no-lists` skips
// these rows; `--lists-only` runs only them.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, cpus } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { treeCpuSeconds } from './proc-cpu.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bin = join(root, 'bin', 'fleetctl.cjs');
const arg = (name, def) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const NODES = arg('--nodes', 100_000);
const { postgresBinDir } = await import('../scripts/pg-cluster.mjs');
const PG_ONLY = process.argv.includes('--pg-only');
const PG = PG_ONLY || (!process.argv.includes('--no-pg') && postgresBinDir() !== undefined);
if (!PG) console.log('PostgreSQL rows skipped (--no-pg, or no PostgreSQL server binaries: apt-get install postgresql)');
const DURATION = arg('--duration', 5); // seconds per autocannon run
const LISTS = !process.argv.includes('--no-lists');
const LISTS_ONLY = process.argv.includes('--lists-only');
const LIST_DURATION = arg('--list-duration', 3); // seconds per filter/sort row
const AUDIT_ROWS = arg('--audit-rows', 1_000_000);
const CHECKINS = arg('--checkins', 3700); // node check-ins written per second meanwhile
const WAKEUPS = arg('--wakeups', 1); // of them, nodes back after days asleep, per second
const RUNS = arg('--runs', 9); // whole-process runs per CLI figure
const PASSWORD = 'bench-password-1';
const tmp = mkdtempSync(join(tmpdir(), 'fleetctl-bench-'));
const started = Date.now();
const children = [];

/**
 * Statements the servers logged as slow (FLEETCTL_SLOW_QUERY_MS, below: over half the lists' goal),
 * with their plans: printed under a figure that misses its goal.
 */
const SLOW_QUERY_MS = 25;
const slowQueries = [];

function startProcess(args, label) {
  // The URL line: a server's banner is on stderr (its stdout is for a stdout sink's NDJSON), the
  // bare baseline's on stdout. Both read until it shows, then passed through, except the slow-query
  // log's JSON lines on stderr, which are kept (explainMisses).
  const child = spawn(process.execPath, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, FLEETCTL_SLOW_QUERY_MS: String(SLOW_QUERY_MS) },
  });
  children.push(child);
  let out = '';
  let partial = '';
  const passStderr = (d) => {
    const lines = (partial + d).split('\n');
    partial = lines.pop() ?? '';
    for (const l of lines) {
      if (l.startsWith('{') && l.includes('"slow_query_ms"')) {
        try {
          slowQueries.push({ at: Date.now(), ...JSON.parse(l) });
          continue;
        } catch {
          /* not ours: printed */
        }
      }
      process.stderr.write(`${l}\n`);
    }
  };
  const url = new Promise((resolve, reject) => {
    for (const [stream, pass] of [
      [child.stdout, (d) => process.stdout.write(d)],
      [child.stderr, passStderr],
    ]) {
      stream.on('data', (d) => {
        if (/(?:URL:\s+|listening on )http/.test(out)) return void pass(d);
        out += d;
        const m = /(?:URL:\s+|listening on )(http:\/\/\S+)/.exec(out);
        if (m) resolve(m[1]);
      });
    }
    child.on('exit', (c) => reject(new Error(`${label} exited ${c}`)));
  });
  return { child, url, output: () => out };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Median wall time (ms) of whole processes; a and b interleaved so drift hits both alike. */
function timePair(a, b, env, runs = RUNS) {
  const ta = [];
  const tb = [];
  const once = ([cmd, args]) => {
    const s = performance.now();
    const r = spawnSync(cmd, args, { env, stdio: ['ignore', 'ignore', 'inherit'] });
    if (r.status !== 0) throw new Error(`${[cmd, ...args].join(' ')} exited ${r.status}`);
    return performance.now() - s;
  };
  once(a);
  once(b); // warm the page cache
  for (let i = 0; i < runs; i++) {
    ta.push(once(a));
    tb.push(once(b));
  }
  return [median(ta), median(tb)];
}

/** Wall time (ms) and peak RSS (MiB) of one process. */
function timedRss(args, env) {
  const file = join(tmp, `rss-${Math.random()}`);
  const s = performance.now();
  const r = spawnSync(process.execPath, ['--import', join(root, 'bench', 'rss-probe.mjs'), ...args], {
    env: { ...env, BENCH_RSS_FILE: file },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  if (r.status !== 0) throw new Error(`${args.join(' ')} exited ${r.status}`);
  return { ms: performance.now() - s, mib: Number(readFileSync(file, 'utf8')) / 1024 };
}

async function load(url, connections, headers = {}) {
  await autocannon({ url, connections, duration: 1, headers }); // warm-up
  const r = await autocannon({ url, connections, duration: DURATION, headers });
  if (r.non2xx || (r.errors && r.errors !== r.timeouts)) throw new Error(`${url}: ${r.non2xx} non-2xx answers, ${r.errors} errors`);
  // Requests slower than autocannon's 10 s timeout never reach the histogram: count them as such.
  if (r.timeouts || r.requests.total === 0) return { rps: r.requests.average, p50: r.latency.p50, p99: Infinity, timeouts: r.timeouts };
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, timeouts: 0 };
}

/**
 * CPU time (ms) a server has used so far: its process and every descendant (with the default
 * --workers the primary serves nothing; its workers do). Linux /proc; 0 elsewhere.
 */
const cpuMs = (pid) => treeCpuSeconds(pid).cpu * 1000;

/**
 * Two targets loaded in alternating rounds; request counts and latencies are pooled per target.
 * Also the server CPU time per request (pids given): on a shared machine wall-clock throughput
 * swings with the neighbours' load, CPU per request much less.
 */
async function pairedLoad([urlA, headersA, pidA], [urlB, headersB, pidB], connections, rounds = 3) {
  const cpu = new Map([
    [urlA, 0],
    [urlB, 0],
  ]);
  const run = async (url, headers, pid) => {
    const before = cpuMs(pid);
    const r = await autocannon({ url, connections, duration: DURATION / rounds, headers });
    cpu.set(url, cpu.get(url) + cpuMs(pid) - before);
    return r;
  };
  await run(urlA, headersA, pidA);
  await run(urlB, headersB, pidB); // warm-up
  cpu.set(urlA, 0).set(urlB, 0);
  const a = [];
  const b = [];
  for (let i = 0; i < rounds; i++) {
    a.push(await run(urlA, headersA, pidA));
    b.push(await run(urlB, headersB, pidB));
  }
  const pool = (rs, url) => {
    for (const r of rs) if (r.non2xx || r.errors) throw new Error(`${r.url}: ${r.non2xx} non-2xx answers, ${r.errors} errors`);
    return {
      rps: rs.reduce((s, r) => s + r.requests.total, 0) / rs.reduce((s, r) => s + r.duration, 0),
      p50: median(rs.map((r) => r.latency.p50)),
      p99: Math.max(...rs.map((r) => r.latency.p99)),
      timeouts: 0,
      cpuMsPerRequest: cpu.get(url) / rs.reduce((s, r) => s + r.requests.total, 0),
    };
  };
  return [pool(a, urlA), pool(b, urlB)];
}

const rows = [];
/** pass: true, false, or null for a figure reported without a goal. */
const verdict = (pass) => (pass === null ? 'info' : pass ? 'pass' : 'FAIL');
function row(figure, value, baseline, ratio, goal, pass) {
  rows.push({ figure, value, baseline, ratio, goal, pass });
  console.log(`  ${verdict(pass)}  ${figure}: ${value}${baseline ? ` vs ${baseline}` : ''}${ratio ? ` = ${ratio}` : ''} (goal ${goal})`);
}
const f1 = (x) => x.toFixed(1);
const f2 = (x) => x.toFixed(2);

console.log(`fleetctl benchmark: ${NODES} nodes, ${cpus().length} CPUs, ${DURATION} s per load run, ${RUNS} runs per CLI figure`);
/** Logs in as the demo super-admin; returns the Authorization header. */
async function authHeaders(url) {
  const login = await fetch(`${url}/api/v1/login/prod`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'admin', password: PASSWORD }),
  });
  const { token } = await login.json();
  return { token, headers: { authorization: `Bearer ${token}` } };
}

const raw = {};
let seedSeconds = 0;
let counts = {};

/** Node list queries: every sort and order, every filter, some combinations and deep pages. */
function nodeListQueries() {
  const out = [];
  for (const sort of ['lastseen', 'firstseen', 'hostname', 'localname', 'uuid', 'ip', 'platform', 'version', 'osquery'])
    for (const order of ['asc', 'desc']) out.push({ label: `sort=${sort}&order=${order}`, query: `sort=${sort}&order=${order}` });
  for (const query of [
    'status=active',
    'status=inactive',
    'health=healthy',
    'risk=high',
    'config=stale',
    'platform=darwin',
    'platform=windows&sort=version&order=desc',
    'tag=pci',
    'tag=quarantine',
    'tag=servers',
    'tag=pci&sort=hostname',
    'q=web',
    'q=we',
    'q=web&sort=hostname',
    'tag=laptops&q=alice',
    'tag=servers&status=active&platform=linux&sort=ip',
    'status=inactive&q=db&sort=osquery',
  ])
    out.push({ label: query, query });
  out.push({ label: 'sort=hostname, pages 500-504', query: 'sort=hostname', first: 500 });
  out.push({ label: 'tag=pci, pages 100-104', query: 'tag=pci', first: 100 });
  return out;
}

/** Audit list queries over the million rows: every filter and combination, search, a deep page. */
const AUDIT_QUERIES = [
  { label: '(no filter)', query: '' },
  { label: 'username=analyst', query: 'username=analyst' },
  { label: 'service=tls', query: 'service=tls' },
  { label: 'env=staging', query: 'env=staging' },
  { label: 'username=admin&service=api&env=prod', query: 'username=admin&service=api&env=prod' },
  { label: 'q=pci', query: 'q=pci' },
  { label: 'q=denied&username=analyst', query: `q=denied&username=analyst` },
  { label: 'q=zq (short, rare)', query: 'q=zq' },
  { label: 'pages 2000-2004', query: '', first: 2000 },
];

/**
 * 1,000,000 audit rows written straight into the database in one statement (the API has no bulk
 * audit write): users, services, environments and lines like the demo's, ids in time order.
 */
async function seedAudit(target, n) {
  const users = ['admin', 'prod-admin', 'analyst', 'querier', 'carver', 'dev-user', 'ci-bot', 'mfa-user'];
  const user = (col) => `case ${col} % ${users.length} ${users.map((u, i) => `when ${i} then '${u}'`).join(' ')} end`;
  const services = ['api', 'admin', 'tls', 'cli'];
  const service = (col) => `case ${col} % 4 ${services.map((v, i) => `when ${i} then '${v}'`).join(' ')} end`;
  const line = (col, cat, hex) =>
    `case ${col} % 5 when 0 then ${cat(`'user '`, user(col), `' logged in from 10.0.'`, `${col} % 250`, `'.'`, `${col} % 199`)}` +
    ` when 1 then ${cat(`'node '`, hex, `' tagged pci in prod'`)} when 2 then ${cat(`'query q-'`, col, `' created by '`, user(`(${col} / 8)`))}` +
    ` when 3 then 'denied GET /api/v1/nodes/prod: token expired' else ${cat(`'setting inactive_hours changed to '`, `${col} % 100`)} end`;
  const now = new Date().toISOString();
  const cols = 'created_at, env_uuid, environment_id, line, log_type, severity, service, source_ip, username, count';
  const t0 = Date.now();
  if (/^postgres/.test(target)) {
    const pg = (await import('pg')).default;
    const client = new pg.Client({ connectionString: target });
    await client.connect();
    const cat = (...xs) => `(${xs.map((x) => `(${x})::text`).join(' || ')})`;
    await client.query(
      `insert into audit_logs (${cols}) select $1, '', (n % 3) + 1, ${line('n', cat, 'to_hex(n::bigint * 7919)')}, n % 6, n % 4, ${service('n')}, '10.1.' || (n % 250) || '.' || (n % 200), ${user('n')}, 1 from generate_series(1, $2::int) n`,
      [now, n],
    );
    await client.query('analyze audit_logs');
    await client.end();
  } else {
    const Database = (await import('better-sqlite3')).default;
    const db = new Database(target);
    db.pragma('busy_timeout = 10000');
    const cat = (...xs) => `(${xs.join(' || ')})`;
    db.prepare(
      `with recursive s(n) as (select 1 union all select n + 1 from s where n < ?) insert into audit_logs (${cols}) select ?, '', (n % 3) + 1, ${line('n', cat, 'hex(n * 7919)')}, n % 6, n % 4, ${service('n')}, '10.1.' || (n % 250) || '.' || (n % 200), ${user('n')}, 1 from s`,
    ).run(n, now);
    db.pragma('analysis_limit = 1000');
    db.pragma('optimize = 0x10002');
    db.close();
  }
  return (Date.now() - t0) / 1000;
}

/** The slow statements logged since `since` (ms), each text once with its slowest time and plan, for a missed figure. */
function explainMisses(since) {
  const seen = new Map();
  for (const q of slowQueries)
    if (q.at >= since && (!seen.has(q.sql) || seen.get(q.sql).slow_query_ms < q.slow_query_ms)) seen.set(q.sql, q);
  const top = [...seen.values()].sort((a, b) => b.slow_query_ms - a.slow_query_ms).slice(0, 3);
  for (const q of top)
    console.log(`      ${q.slow_query_ms} ms: ${q.sql.slice(0, 400)}\n        ${(q.plan ?? [q.plan_error]).join('\n        ')}`);
  if (top.length === 0) console.log(`      (no statement over ${SLOW_QUERY_MS} ms: the time is in waiting, not in one query)`);
}

/**
 * autocannon at 20 connections over pages first..first+4 of `path?query`, picked at random per
 * request: the list's steady state under check-ins. Before it, one request alone (`coldMs`, its
 * own figure): it counts the filter's total and reads its first pages for the first time, which
 * otherwise all 20 connections waited for at once, and a warm-up.
 */
async function pagedLoad(origin, path, query, first, headers) {
  const pathFor = () => `${path}?${query}${query ? '&' : ''}page=${first + Math.floor(Math.random() * 5)}`;
  const t0 = performance.now();
  const one = await fetch(`${origin}${pathFor()}`, { headers });
  await one.arrayBuffer();
  if (!one.ok) throw new Error(`${path}?${query}: HTTP ${one.status}`);
  const coldMs = performance.now() - t0;
  const opts = {
    url: origin,
    connections: 20,
    headers,
    requests: [{ method: 'GET', setupRequest: (req) => ({ ...req, path: pathFor() }) }],
  };
  await autocannon({ ...opts, duration: 0.5 }); // warm-up
  const r = await autocannon({ ...opts, duration: LIST_DURATION });
  if (r.non2xx || r.errors || r.requests.total === 0)
    throw new Error(`${path}?${query}: ${r.non2xx} non-2xx answers, ${r.errors} errors, ${r.timeouts} timeouts`);
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, coldMs };
}

/**
 * Every node list filter and sort, and every audit filter over AUDIT_ROWS rows, at 20
 * connections, while check-ins are written. `prefix` names the database in the rows.
 */
async function listRows(prefix, origin, headers, dbTarget) {
  console.log(`\n${prefix}audit rows: seeding ${AUDIT_ROWS.toLocaleString('en')}...`);
  const seeded = await seedAudit(dbTarget, AUDIT_ROWS);
  console.log(
    `${prefix}${AUDIT_ROWS.toLocaleString('en')} audit rows written in ${f1(seeded)} s; check-ins: ${CHECKINS} nodes a second from a second process`,
  );
  const writer = spawn(process.execPath, [join(root, 'bench', 'checkin-writer.mjs'), dbTarget, String(CHECKINS), String(WAKEUPS)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(writer);
  console.log(`${prefix}check-in writer: ${String(await new Promise((resolve) => writer.stdout.once('data', resolve))).trim()}`);
  const results = { nodes: [], audit: [] };
  try {
    for (const { label, query, first = 1 } of nodeListQueries()) {
      const since = Date.now();
      const r = await pagedLoad(origin, '/api/v1/nodes/prod', query, first, headers);
      results.nodes.push({ label, ...r });
      row(
        `${prefix}nodes list ${label}: p50 / p99`,
        `${r.p50} / ${r.p99} ms (${Math.round(r.rps)} req/s; the first answer alone ${Math.round(r.coldMs)} ms)`,
        '',
        '',
        'p99 <= 50 ms',
        r.p99 <= 50,
      );
      if (r.p99 > 50) explainMisses(since);
    }
    for (const { label, query, first = 1 } of AUDIT_QUERIES) {
      const since = Date.now();
      const r = await pagedLoad(origin, '/api/v1/audit-logs', query, first, headers);
      results.audit.push({ label, ...r });
      row(
        `${prefix}audit list ${label}, ${AUDIT_ROWS / 1e6}M rows: p50 / p99`,
        `${r.p50} / ${r.p99} ms (${Math.round(r.rps)} req/s; the first answer alone ${Math.round(r.coldMs)} ms)`,
        '',
        '',
        'p99 <= 50 ms',
        r.p99 <= 50,
      );
      if (r.p99 > 50) explainMisses(since);
    }
  } finally {
    writer.kill('SIGTERM');
  }
  return { auditSeedSeconds: seeded, ...results };
}

async function sqliteRows() {
  const dbFile = join(tmp, 'fleet.db');
  const server = startProcess(
    [
      bin,
      'server',
      '--dev',
      '--db',
      dbFile,
      '--dev-nodes',
      String(NODES),
      '--dev-password',
      PASSWORD,
      '--listen',
      '127.0.0.1:0',
      '--api-rate-limit',
      '100000000',
      '--login-rate-limit',
      '1000',
    ],
    'server',
  );
  const url = await server.url;
  seedSeconds = (Date.now() - started) / 1000;
  counts = Object.fromEntries([...server.output().matchAll(/(\w+) \((\d+) nodes\)/g)].map((m) => [m[1], Number(m[2])]));
  console.log(`server with ${NODES} demo nodes ready in ${f1(seedSeconds)} s (${JSON.stringify(counts)})\n`);

  const { token, headers } = await authHeaders(url);
  if (LISTS_ONLY) {
    raw.lists = await listRows('', url, headers, dbFile);
    server.child.kill('SIGTERM');
    return;
  }
  const env = {
    ...process.env,
    FLEETCTL_CONFIG_DIR: join(tmp, 'config'),
    FLEETCTL_URL: url,
    FLEETCTL_TOKEN: token,
    DBUS_SESSION_BUS_ADDRESS: 'disabled:',
    NO_COLOR: '1',
  };
  const node = process.execPath;

  console.log('CLI');
  const [version, nodeFloor] = timePair([node, [bin, '--version']], [node, ['-e', '0']], env);
  row(
    'fleetctl --version / node -e 0',
    `${f1(version)} ms`,
    `${f1(nodeFloor)} ms`,
    `${f2(version / nodeFloor)}x`,
    '<= 1.3x',
    version / nodeFloor <= 1.3,
  );

  const [onePage, fetchPage] = timePair(
    [node, [bin, 'nodes', 'list', '--json', '--env', 'prod']],
    [node, [join(root, 'bench/baselines/fetch-page.mjs'), 'prod']],
    env,
  );
  row(
    'nodes list --json (one page) / 5-line fetch script',
    `${f1(onePage)} ms`,
    `${f1(fetchPage)} ms`,
    `${f2(onePage / fetchPage)}x`,
    '<= 1.3x',
    onePage / fetchPage <= 1.3,
  );
  // Issue 31's goal for a command at a user's pace, in wall time beside Node's own start-up.
  row('nodes list --json (one page), wall time', `${f1(onePage)} ms`, `node -e 0 ${f1(nodeFloor)} ms`, '', '<= 100 ms', onePage <= 100);

  // Best of three interleaved runs each: single long runs swing with a shared machine's load.
  let streamProd;
  let rawProd;
  for (let i = 0; i < 3; i++) {
    const s = timedRss([bin, 'nodes', 'list', '--all', '-o', 'jsonl', '--env', 'prod'], env);
    const r = timedRss([join(root, 'bench/baselines/undici-pages.mjs'), 'prod'], env);
    if (!streamProd || s.ms < streamProd.ms) streamProd = { ...s, mib: Math.max(s.mib, streamProd?.mib ?? 0) };
    else streamProd.mib = Math.max(streamProd.mib, s.mib);
    if (!rawProd || r.ms < rawProd.ms) rawProd = r;
  }
  const streamDev = timedRss([bin, 'nodes', 'list', '--all', '-o', 'jsonl', '--env', 'dev'], env);
  const throughput = rawProd.ms / streamProd.ms;
  row(
    `nodes list --all -o jsonl, ${counts.prod} nodes: throughput / raw undici page loop`,
    `${f1(streamProd.ms / 1000)} s (${Math.round(counts.prod / (streamProd.ms / 1000))} nodes/s)`,
    `${f1(rawProd.ms / 1000)} s`,
    `${f2(throughput)}x`,
    '>= 0.9x',
    throughput >= 0.9,
  );
  row(`  same, CLI peak RSS`, `${f1(streamProd.mib)} MiB`, '', '', '<= 100 MiB', streamProd.mib <= 100);
  const flat = streamProd.mib / streamDev.mib;
  row(
    `  same, peak RSS ${counts.prod} nodes / ${counts.dev} nodes`,
    `${f1(streamProd.mib)} MiB`,
    `${f1(streamDev.mib)} MiB`,
    `${f2(flat)}x`,
    '<= 1.15x (flat)',
    flat <= 1.15,
  );

  console.log(`\nserver (${NODES} nodes, 20 connections unless said)`);
  const listUrl = `${url}/api/v1/nodes/prod?status=active`;
  const pageFile = join(tmp, 'page.json');
  writeFileSync(pageFile, await (await fetch(listUrl, { headers })).text());
  const bare = startProcess([join(root, 'bench/baselines/bare-fastify.mjs'), pageFile], 'bare fastify');
  const bareUrl = await bare.url;
  // Interleaved rounds, so a busy neighbour on a shared machine slows both sides alike.
  const [bareLoad, list] = await pairedLoad(
    [`${bareUrl}/api/v1/nodes/prod?status=active`, {}, bare.child.pid],
    [listUrl, headers, server.child.pid],
    20,
  );
  bare.child.kill('SIGTERM');
  const share = list.rps / bareLoad.rps;
  row(
    'GET /nodes/prod?status=active req/s / bare Fastify, same page',
    `${Math.round(list.rps)} req/s`,
    `${Math.round(bareLoad.rps)} req/s`,
    `${Math.round(share * 100)}%`,
    '>= 60%',
    share >= 0.6,
  );
  const cpuShare = bareLoad.cpuMsPerRequest / list.cpuMsPerRequest;
  row(
    '  same, server CPU per request (bare / fleetctl server)',
    `${f2(list.cpuMsPerRequest)} ms`,
    `${f2(bareLoad.cpuMsPerRequest)} ms`,
    `${Math.round(cpuShare * 100)}%`,
    '>= 60%',
    cpuShare >= 0.6,
  );
  row('  same, p99', `${list.p99} ms`, '', '', '<= 25 ms', list.p99 <= 25);

  const search = await load(`${url}/api/v1/nodes/prod?q=web`, 20, headers);
  row(
    'GET /nodes/prod?q=web p50 / p99',
    `${search.p50} / ${search.p99} ms (${search.rps.toFixed(1)} req/s${search.timeouts ? `, ${search.timeouts} requests timed out after 10 s` : ''})`,
    '',
    '',
    'p99 <= 50 ms',
    search.p99 <= 50,
  );

  // Issue 20: the security filters, derived from check-ins, on the nodes_env_health index.
  const risk = await load(`${url}/api/v1/nodes/prod?risk=high`, 20, headers);
  row(
    'GET /nodes/prod?risk=high p50 / p99',
    `${risk.p50} / ${risk.p99} ms (${risk.rps.toFixed(1)} req/s)`,
    '',
    '',
    'p99 <= 50 ms',
    risk.p99 <= 50,
  );
  const healthy = await load(`${url}/api/v1/nodes/prod?health=healthy`, 20, headers);
  row(
    'GET /nodes/prod?health=healthy p50 / p99',
    `${healthy.p50} / ${healthy.p99} ms (${healthy.rps.toFixed(1)} req/s)`,
    '',
    '',
    'p99 <= 50 ms',
    healthy.p99 <= 50,
  );

  const stats1 = await load(`${url}/api/v1/stats`, 1, headers);
  const stats20 = await load(`${url}/api/v1/stats`, 20, headers);
  row('GET /stats p99 at 20 connections', `${stats20.p99} ms`, '', '', '<= 30 ms', stats20.p99 <= 30);
  const scale = stats20.rps / stats1.rps;
  row(
    'GET /stats req/s at 20 / at 1 connection',
    `${Math.round(stats20.rps)} req/s`,
    `${Math.round(stats1.rps)} req/s`,
    `${f2(scale)}x`,
    '>= 0.9x (does not fall)',
    scale >= 0.9,
  );

  Object.assign(raw, {
    version,
    nodeFloor,
    onePage,
    fetchPage,
    streamProd,
    rawProd,
    streamDev,
    bare: bareLoad,
    list,
    search,
    risk,
    healthy,
    stats1,
    stats20,
  });
  if (LISTS) raw.lists = await listRows('', url, headers, dbFile);
  server.child.kill('SIGTERM');
}

/**
 * PostgreSQL (issue 14): the same fleet on a throwaway cluster. One replica: the list, search and
 * stats figures with the SQLite goals. Two replicas on the same database: the list at 20
 * connections each, summed, against one replica at 20 connections (same machine: the replicas,
 * PostgreSQL and the load generator share its cores).
 */
async function postgresRows() {
  const { startCluster } = await import('../scripts/pg-cluster.mjs');
  const cluster = await startCluster();
  try {
    const db = await cluster.createDatabase('bench');
    const t0 = Date.now();
    const common = ['--db', db, '--listen', '127.0.0.1:0', '--api-rate-limit', '100000000', '--login-rate-limit', '1000'];
    const a = startProcess(
      [bin, 'server', '--dev', '--dev-nodes', String(NODES), '--dev-password', PASSWORD, ...common],
      'postgres replica A',
    );
    const urlA = await a.url;
    const pgSeed = (Date.now() - t0) / 1000;
    console.log(`\nPostgreSQL (${NODES} nodes seeded in ${f1(pgSeed)} s; 20 connections unless said)`);
    const { headers } = await authHeaders(urlA);
    if (LISTS_ONLY) {
      raw.pgLists = await listRows('PostgreSQL: ', urlA, headers, db);
      a.child.kill('SIGTERM');
      await new Promise((r) => setTimeout(r, 1000));
      return;
    }
    const list = await load(`${urlA}/api/v1/nodes/prod?status=active`, 20, headers);
    row(
      'PostgreSQL: GET /nodes/prod?status=active req/s, p99',
      `${Math.round(list.rps)} req/s, p99 ${list.p99} ms`,
      '',
      '',
      'p99 <= 25 ms',
      list.p99 <= 25,
    );
    const search = await load(`${urlA}/api/v1/nodes/prod?q=web`, 20, headers);
    row(
      'PostgreSQL: GET /nodes/prod?q=web p50 / p99',
      `${search.p50} / ${search.p99} ms (${search.rps.toFixed(1)} req/s)`,
      '',
      '',
      'p99 <= 50 ms',
      search.p99 <= 50,
    );
    const risk = await load(`${urlA}/api/v1/nodes/prod?risk=high`, 20, headers);
    row(
      'PostgreSQL: GET /nodes/prod?risk=high p50 / p99',
      `${risk.p50} / ${risk.p99} ms (${risk.rps.toFixed(1)} req/s)`,
      '',
      '',
      'p99 <= 50 ms',
      risk.p99 <= 50,
    );
    const stats20 = await load(`${urlA}/api/v1/stats`, 20, headers);
    row(
      'PostgreSQL: GET /stats p99 at 20 connections',
      `${stats20.p99} ms (${Math.round(stats20.rps)} req/s)`,
      '',
      '',
      '<= 30 ms',
      stats20.p99 <= 30,
    );

    const b = startProcess([bin, 'server', ...common], 'postgres replica B');
    const urlB = await b.url;
    const listB = `${urlB}/api/v1/nodes/prod?status=active`;
    await load(listB, 20, headers); // warm B's caches
    const one = await load(`${urlA}/api/v1/nodes/prod?status=active`, 20, headers);
    const [ra, rb] = await Promise.all([load(`${urlA}/api/v1/nodes/prod?status=active`, 20, headers), load(listB, 20, headers)]);
    const both = ra.rps + rb.rps;
    // Reported, not judged: on one machine the replicas, PostgreSQL and the load generator share
    // the same cores, so a second replica adds no CPU; it shows the replicas share the work.
    row(
      'PostgreSQL: list req/s, two replicas (20 connections each) / one',
      `${Math.round(both)} req/s (p99 ${Math.max(ra.p99, rb.p99)} ms)`,
      `${Math.round(one.rps)} req/s`,
      `${f2(both / one.rps)}x`,
      'reported (one machine)',
      null,
    );
    Object.assign(raw, { pg: { seedSeconds: pgSeed, list, search, risk, stats20, one, twoReplicas: [ra, rb] } });
    b.child.kill('SIGTERM');
    if (LISTS) raw.pgLists = await listRows('PostgreSQL: ', urlA, headers, db);
    a.child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 1000));
  } finally {
    cluster.stop();
  }
}

try {
  if (!PG_ONLY) await sqliteRows();
  if (PG) await postgresRows();
  const seconds = (Date.now() - started) / 1000;
  const failed = rows.filter((r) => r.pass === false).length;
  const judged = rows.filter((r) => r.pass !== null).length;
  console.log(`\n${judged - failed}/${judged} figures at or past their goal; bench took ${f1(seconds)} s (seeding ${f1(seedSeconds)} s)`);
  console.log('\n| figure | value | baseline | ratio | goal | |\n|---|---|---|---|---|---|');
  for (const r of rows) console.log(`| ${r.figure.trim()} | ${r.value} | ${r.baseline} | ${r.ratio} | ${r.goal} | ${verdict(r.pass)} |`);
  mkdirSync(join(root, 'bench', 'results'), { recursive: true });
  const file = join(root, 'bench', 'results', `${new Date().toISOString().replaceAll(':', '-')}.json`);
  writeFileSync(file, `${JSON.stringify({ nodes: NODES, counts, cpus: cpus().length, seedSeconds, seconds, rows, raw }, null, 2)}\n`);
  console.log(`\nresults: ${file}`);
} finally {
  for (const c of children) c.kill('SIGTERM');
  rmSync(tmp, { recursive: true, force: true });
}
