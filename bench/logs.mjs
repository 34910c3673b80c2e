#!/usr/bin/env node
// `npm run bench:logs` (issue 30): what reading agents' logs costs at fleet size, whole commands
// of the built CLI against `fleetctl server`, each the median of several runs, beside a baseline
// command measured in the same run (`fleetctl nodes list --limit 1`: process start, login state,
// one request):
//   - `fleetctl schedule report prod uptime --all -o json`: a snapshot query's report across
//     20,000 nodes (and as a TSV table);
//   - `fleetctl logs --since 1h --query q07` (the newest 100 lines) and `--all` (every line of the
//     hour) over 10,000,000 stored lines.
// The store is seeded in SQL (a recursive CTE on SQLite, generate_series on PostgreSQL: minutes,
// not the hours 10 million agent requests would take), with the shape the agent door writes:
// lines over the last 10 days across the nodes, 20 scheduled queries and status lines, the
// stream heads, and retention settings large enough that the pruner keeps all of it.
// Usage: npm run bench:logs [-- --lines 10000000 --nodes 20000 --runs 5 --pg]
//   [--keep DIR [--end TIME]] [--reuse DIR]
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, cpus } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bin = join(root, 'bin', 'fleetctl.cjs');
const arg = (name, def) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const LINES = arg('--lines', 10_000_000);
const NODES = arg('--nodes', 20_000);
const RUNS = arg('--runs', 5);
const PG = process.argv.includes('--pg');
const strArg = (name) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
};
// Seeding 10 million lines takes longer than a quiet window: --keep DIR seeds into DIR (SQLite)
// and keeps it (nothing measured), with --end TIME as the newest line's receive time (the window's start, so that
// `--since 1h` then reads the newest hour as it would); --reuse DIR measures on it, no seeding.
const KEEP = strArg('--keep');
const REUSE = strArg('--reuse');
const END = strArg('--end');
if ((KEEP || REUSE) && PG) throw new Error('--keep and --reuse are for SQLite (a file)');
const DAYS = 10;
const QUERIES = 20;
const PASSWORD = 'bench-password-1';
const tmp = mkdtempSync(join(tmpdir(), 'fleetctl-bench-logs-'));
const children = [];
const load = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
const t0 = Date.now();
let cluster;

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    for (const c of children) c.kill('SIGKILL');
    cluster?.stop();
    rmSync(tmp, { recursive: true, force: true });
    process.exit(130);
  });
}

/** `fleetctl server ARGS` until it prints its URL (its banner is on stderr: stdout is a stdout sink's). */
async function server(args) {
  const child = spawn(
    process.execPath,
    [bin, 'server', '--listen', '127.0.0.1:0', '--workers', '1', '--api-rate-limit', '100000000', ...args],
    { stdio: ['pipe', 'ignore', 'pipe'], env: { ...process.env, FLEETCTL_ADMIN_PASSWORD: PASSWORD } },
  );
  children.push(child);
  child.stdin.end();
  let out = '';
  const url = await new Promise((resolve, reject) => {
    child.stderr.on('data', (d) => {
      out += d;
      const m = /(?:URL:\s+|listening on )(http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1]);
    });
    child.on('exit', (c) => reject(new Error(`server exited ${c}: ${out}`)));
  });
  // The rest (the demo's banner, warnings) is read and dropped, so the pipe never fills.
  child.stderr.removeAllListeners('data');
  child.stderr.resume();
  return {
    url,
    pid: child.pid,
    stop: () => new Promise((r) => (child.once('exit', r), child.kill('SIGTERM'))),
  };
}

const cfg = join(tmp, 'cfg');
const cli = (args, o = {}) => {
  const s = performance.now();
  const r = spawnSync(process.execPath, [bin, ...args], {
    env: { ...process.env, FLEETCTL_CONFIG_DIR: cfg, FLEETCTL_PAGER: 'cat', DBUS_SESSION_BUS_ADDRESS: 'disabled:' },
    input: o.input,
    maxBuffer: 1024 * 1024 * 1024,
  });
  const ms = performance.now() - s;
  if (r.status !== 0) throw new Error(`fleetctl ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  return { ms, out: r.stdout.toString() };
};
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// 1. A fleet: the demo seed puts 54.5 % of its nodes in prod.
const db = PG
  ? await (async () => {
      const { startCluster } = await import('../scripts/pg-cluster.mjs');
      cluster = await startCluster();
      return cluster.createDatabase('logs');
    })()
  : join(REUSE ?? KEEP ?? tmp, 'fleet.db');
if (KEEP) mkdirSync(KEEP, { recursive: true });
console.log(
  `fleetctl logs benchmark: ${cpus().length} CPUs (${cpus()[0]?.model}), load ${load()}; ${PG ? 'PostgreSQL' : 'SQLite'}${REUSE ? '' : `; ${LINES.toLocaleString('en')} lines, ${NODES.toLocaleString('en')} nodes reporting`}`,
);
let host = '';
let seeded = REUSE ? JSON.parse(readFileSync(join(REUSE, 'seed.json'), 'utf8')) : undefined;
if (!seeded) {
  let s = performance.now();
  const seedServer = await server([
    '--dev',
    '--db',
    db,
    '--dev-password',
    PASSWORD,
    '--dev-nodes',
    String(Math.ceil((NODES * 2200) / 1200) + 10),
  ]);
  await seedServer.stop();
  console.log(`fleet seeded in ${((performance.now() - s) / 1000).toFixed(0)} s`);

  // 2. The store: lines over the last DAYS days, every 10th a status line (every 50th a warning).
  s = performance.now();
  const end = END ? Date.parse(END) : Date.now();
  if (Number.isNaN(end)) throw new Error(`--end ${END}: not a time`);
  const start = end - DAYS * 86_400_000;
  const step = (end - start) / LINES;
  const lineSql = {
    // The shape osquery 5 sends (event format), about 330 bytes a result line.
    result: (uuid, i, t, name) =>
      `'{"name":"' || ${name} || '","hostIdentifier":"' || ${uuid} || '","calendarTime":"Wed Nov 25 10:00:00 2026 UTC","unixTime":' || ${t} || ',"epoch":0,"counter":' || ${i} || ',"numerics":false,"decorations":{"host_uuid":"' || ${uuid} || '"},"columns":{"pid":"' || (${i} % 65536) || '","name":"proc-' || (${i} % 977) || '","path":"/usr/sbin/proc-' || (${i} % 977) || '","uid":"0"},"action":"added"}'`,
    status: (uuid, i, t) =>
      `'{"hostIdentifier":"' || ${uuid} || '","calendarTime":"Wed Nov 25 10:00:00 2026 UTC","unixTime":' || ${t} || ',"severity":' || (case when ${i} % 50 = 0 then 1 else 0 end) || ',"filename":"scheduler.cpp","line":120,"message":"Executing scheduled query q' || (${i} % ${QUERIES}) || '","version":"5.23.0"}'`,
  };
  const report = '[{"days":"3","hours":"4","minutes":"5","seconds":"6","total_seconds":"273906"}]';
  if (PG) {
    const pg = (await import('pg')).default;
    const c = new pg.Client({ connectionString: db });
    await c.connect();
    const env = (await c.query(`select id from environments where name = 'prod'`)).rows[0].id;
    await c.query(
      `create temp table bench_nodes as select row_number() over (order by id) - 1 as k, id, uuid, hostname from nodes where environment_id = $1 limit $2`,
      [env, NODES],
    );
    await c.query(
      `update settings set integer_value = case when name = 'retention_logs_days' then 0 else 100000000 end where name in ('retention_logs_days', 'retention_logs_mb') and environment_id = 0`,
    );
    const name = `'q' || lpad((i % ${QUERIES})::text, 2, '0')`;
    const t = `floor((${start} + i * ${step}) / 1000)::bigint`;
    await c.query(`insert into log_spool (environment_id, node_id, host_identifier, hostname, log_type, name, severity, time, received_at, line, tseq, tpos, eseq, epos)
    select ${env}, n.id, n.uuid, n.hostname, case when i % 10 = 0 then 'status' else 'result' end,
      case when i % 10 = 0 then null else ${name} end, case when i % 10 = 0 then (case when i % 50 = 0 then 1 else 0 end) else null end,
      ${t}, to_char(to_timestamp((${start} + i * ${step}) / 1000.0) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
      case when i % 10 = 0 then ${lineSql.status('n.uuid', 'i', t)} else ${lineSql.result('n.uuid', 'i', t, name)} end, 0, 0, 0, 0
    from generate_series(0, ${LINES - 1}) as i join bench_nodes n on n.k = i % (select count(*) from bench_nodes)`);
    await c.query(
      `insert into query_reports (environment_id, name, node_id, kind, epoch, counter, rows, row_count, truncated, reported_at) select $1, 'uptime', id, 'snapshot', 0, 0, $2, 1, 0, $3 from bench_nodes`,
      [env, report, new Date().toISOString()],
    );
    await c.query(`insert into log_streams (environment_id, log_type, entries, bytes, last_id) select environment_id, log_type, count(*), sum(length(line)), max(id) from log_spool group by environment_id, log_type
    on conflict (environment_id, log_type) do update set entries = excluded.entries, bytes = excluded.bytes, last_id = excluded.last_id`);
    await c.query(
      `update log_streams set entries = (select count(*) from log_spool), last_id = (select max(id) from log_spool) where environment_id = 0 and log_type = '*'`,
    );
    await c.query('analyze');
    host = (await c.query('select hostname from bench_nodes where k = 0')).rows[0].hostname;
    await c.end();
  } else {
    const Database = (await import('better-sqlite3')).default;
    const d = new Database(db);
    d.pragma('journal_mode = WAL');
    const env = d.prepare(`select id from environments where name = 'prod'`).get().id;
    d.exec(
      `create temp table bench_nodes as select row_number() over (order by id) - 1 as k, id, uuid, hostname from nodes where environment_id = ${env} limit ${NODES}`,
    );
    d.exec(
      `update settings set integer_value = case when name = 'retention_logs_days' then 0 else 100000000 end where name in ('retention_logs_days', 'retention_logs_mb') and environment_id = 0`,
    );
    const name = `printf('q%02d', i % ${QUERIES})`;
    const t = `cast((${start} + i * ${step}) / 1000 as integer)`;
    const count = d.prepare('select count(*) as n from bench_nodes').get().n;
    d.exec(`insert into log_spool (environment_id, node_id, host_identifier, hostname, log_type, name, severity, time, received_at, line, tseq, tpos, eseq, epos)
    with recursive c(i) as (select 0 union all select i + 1 from c where i < ${LINES - 1})
    select ${env}, n.id, n.uuid, n.hostname, case when i % 10 = 0 then 'status' else 'result' end,
      case when i % 10 = 0 then null else ${name} end, case when i % 10 = 0 then (case when i % 50 = 0 then 1 else 0 end) else null end,
      ${t}, strftime('%Y-%m-%dT%H:%M:%fZ', (${start} + i * ${step}) / 1000.0, 'unixepoch'),
      case when i % 10 = 0 then ${lineSql.status('n.uuid', 'i', t)} else ${lineSql.result('n.uuid', 'i', t, name)} end, 0, 0, 0, 0
    from c join bench_nodes n on n.k = i % ${count}`);
    d.prepare(
      `insert into query_reports (environment_id, name, node_id, kind, epoch, counter, rows, row_count, truncated, reported_at) select ?, 'uptime', id, 'snapshot', 0, 0, ?, 1, 0, ? from bench_nodes`,
    ).run(env, report, new Date().toISOString());
    d.exec(`insert into log_streams (environment_id, log_type, entries, bytes, last_id) select environment_id, log_type, count(*), sum(length(line)), max(id) from log_spool group by environment_id, log_type
    on conflict (environment_id, log_type) do update set entries = excluded.entries, bytes = excluded.bytes, last_id = excluded.last_id`);
    d.exec(
      `update log_streams set entries = (select count(*) from log_spool), last_id = (select max(id) from log_spool) where environment_id = 0 and log_type = '*'`,
    );
    d.exec('analyze');
    host = d.prepare('select hostname from bench_nodes where k = 0').get().hostname;
    d.pragma('wal_checkpoint(TRUNCATE)');
    d.close();
  }
  console.log(`store seeded in ${((performance.now() - s) / 1000).toFixed(0)} s, load ${load()}`);
  seeded = { host, lines: LINES, nodes: NODES, seededAt: new Date().toISOString(), newest: new Date(end).toISOString() };
  if (KEEP) writeFileSync(join(KEEP, 'seed.json'), `${JSON.stringify(seeded)}\n`);
}
host = seeded.host;
if (KEEP) {
  console.log(`kept in ${KEEP}: measure with --reuse ${KEEP}`);
  rmSync(tmp, { recursive: true, force: true });
  process.exit(0);
}
if (REUSE)
  console.log(
    `store of ${seeded.lines.toLocaleString('en')} lines and ${seeded.nodes.toLocaleString('en')} reporting nodes seeded at ${seeded.seededAt} (newest line ${seeded.newest}), reused from ${REUSE}`,
  );

// 3. The server on that store, a CLI logged in, each command RUNS times.
const srv = await server(['--db', db]);
try {
  cli(['login', '--url', srv.url, '--env', 'prod', '--username', 'admin', '--password-stdin', '--insecure-storage'], { input: PASSWORD });
  cli(['logs', '--limit', '1']); // warm the page cache once
  const rows = [];
  const time = (label, args, check) => {
    const ms = [];
    let out = '';
    for (let i = 0; i < RUNS; i++) ({ ms: ms[i], out } = cli(args));
    const note = check(out);
    rows.push({ label, command: `fleetctl ${args.join(' ')}`, median: median(ms), min: Math.min(...ms), max: Math.max(...ms), note });
    console.log(
      `${label.padEnd(44)} median ${median(ms).toFixed(0).padStart(5)} ms  (min ${Math.min(...ms).toFixed(0)}, max ${Math.max(...ms).toFixed(0)})  ${note}`,
    );
  };
  console.log(`\ncommand (median of ${RUNS} whole-process runs)           wall time`);
  time('baseline: nodes list --limit 1', ['nodes', 'list', '--limit', '1', '-o', 'json'], (o) => `${JSON.parse(o).length} node`);
  time(
    `schedule report --all -o json (${seeded.nodes.toLocaleString('en')} nodes)`,
    ['schedule', 'report', 'prod', 'uptime', '--all', '-o', 'json'],
    (o) => `${JSON.parse(o).length} nodes`,
  );
  time('schedule report --all (TSV)', ['schedule', 'report', 'prod', 'uptime', '--all'], (o) => `${o.trim().split('\n').length - 1} rows`);
  time('logs --since 1h --query q07', ['logs', '--since', '1h', '--query', 'q07'], (o) => `${o.trim().split('\n').length} lines`);
  time(
    'logs --since 1h --query q07 --all',
    ['logs', '--since', '1h', '--query', 'q07', '--all'],
    (o) => `${o.trim().split('\n').length} lines`,
  );
  time(
    'logs --node HOST --since 1d',
    ['logs', '--node', host, '--since', '1d'],
    (o) => `${o.trim() ? o.trim().split('\n').length : 0} lines`,
  );
  time(
    'logs --severity warning --since 1h',
    ['logs', '--severity', 'warning', '--since', '1h'],
    (o) => `${o.trim().split('\n').length} lines`,
  );
  console.log(`\nbench time ${((Date.now() - t0) / 1000).toFixed(0)} s, load ${load()}`);
  mkdirSync(join(root, 'bench', 'results'), { recursive: true });
  const file = join(root, 'bench', 'results', `logs-${new Date().toISOString().replaceAll(':', '-')}.json`);
  writeFileSync(
    file,
    `${JSON.stringify({ machine: { cpus: cpus().length, model: cpus()[0]?.model }, options: { LINES: seeded.lines, NODES: seeded.nodes, RUNS, PG, DAYS, QUERIES, seededAt: seeded.seededAt, newest: seeded.newest, reused: Boolean(REUSE) }, rows }, null, 2)}\n`,
  );
  console.log(`results: ${file}`);
} finally {
  await srv.stop();
  cluster?.stop();
  rmSync(tmp, { recursive: true, force: true });
}
