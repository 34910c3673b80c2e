// The figures of issue 28 ("Done when"), for the durable log spool, run by bench/agent-faults.mjs
// (`npm run bench:faults -- <scenario>`), against real `fleetctl server` processes:
//
//   kill9-backlog  --lines (default 100,000) acknowledged while the only sink's destination is
//                  down, then kill -9 of the server, a restart on the same database, and the
//                  destination back: lines lost, duplicates, time to deliver the backlog. --pg:
//                  on PostgreSQL (a throwaway cluster) instead of SQLite.
//   sink-down      --rate lines a second (default 2,000: a 100,000-agent fleet) for --minutes
//                  (default 10) with a file sink beside an http sink whose destination is down
//                  the whole time: the file sink's lag (when a line shows in its file minus
//                  when the agent was answered), per minute; then the destination back: the
//                  down sink's lines lost and duplicated.
//   replicas       two server processes on one PostgreSQL database, agents posting to both,
//                  one http sink; halfway, the replica delivering it is killed (kill -9) and a
//                  new one started: acknowledged lines, distinct lines at the sink, duplicates.
//   disk-full      --dir a small file system of its own for the SQLite database (as root:
//                  `mkdir -p /mnt/spoolfull && mount -t tmpfs -o size=64m tmpfs /mnt/spoolfull`),
//                  agents posting, then the file system filled with a file: log requests are
//                  answered 503 (never 200), the server stays up; the file removed, posting goes
//                  on and every acknowledged line reaches the sink once.
//
// Lines are posted by a small agent here (enrolled through the agent door, one TLS connection
// each, batches of --batch lines, default 500), each carrying a unique number, so the sink side
// can be counted exactly.
import { createServer } from 'node:http';
import { Agent, request } from 'node:https';
import { readFileSync, statSync, openSync, readSync, closeSync, existsSync, writeSync, rmSync, statfsSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';

/** A destination that counts what it gets by line number; `up` false answers 503. */
async function destination() {
  const got = new Map();
  let total = 0;
  const d = {
    up: false,
    got,
    get total() {
      return total;
    },
    server: createServer((req, res) => {
      const chunks = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        if (!d.up) return res.writeHead(503).end('down');
        for (const e of JSON.parse(Buffer.concat(chunks).toString('utf8'))) {
          const i = e.entry.columns.i;
          got.set(i, (got.get(i) ?? 0) + 1);
          total++;
        }
        res.writeHead(200).end('ok');
      });
    }),
  };
  await new Promise((r) => d.server.listen(0, '127.0.0.1', r));
  d.url = `http://127.0.0.1:${d.server.address().port}/in`;
  return d;
}

/** Agents that post numbered result lines through one server's agent door. */
async function posters(s, ca, n) {
  const agent = new Agent({ keepAlive: true, maxSockets: n, ca });
  const post = (path, body, at = s.connect) =>
    new Promise((resolve) => {
      const data = Buffer.from(JSON.stringify(body));
      const req = request(
        {
          host: at.host,
          port: at.port,
          path,
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', 'content-length': data.length },
        },
        (res) => {
          const chunks = [];
          res.on('data', (c) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString('utf8') }));
        },
      );
      req.on('error', (e) => resolve({ status: 0, body: e.message }));
      req.end(data);
    });
  const keys = [];
  for (let i = 0; i < n; i++) {
    const uuid = randomUUID();
    const r = await post(s.flags.enroll, {
      enroll_secret: s.secret,
      host_identifier: uuid,
      host_details: { system_info: { hostname: `spool-${i}`, uuid }, osquery_info: { version: '5.12.1' } },
    });
    keys.push(JSON.parse(r.body).node_key);
  }
  let next = 0;
  return {
    /** Posts `count` lines (numbers next, next+1, ...) as agent `a`; resolves with the status. */
    async send(a, count, at) {
      const from = next;
      next += count;
      const data = Array.from({ length: count }, (_, k) => ({
        name: 'pack_spool_bench',
        unixTime: Math.floor(Date.now() / 1000),
        columns: { i: String(from + k), pad: 'x'.repeat(200) },
        action: 'added',
      }));
      const r = await post(s.flags.logger, { node_key: keys[a % keys.length], log_type: 'result', data }, at);
      return { status: r.status, from, count };
    },
    close: () => agent.destroy(),
  };
}

/** The line numbers of acknowledged batches (what must reach the sink). */
class Acked {
  ranges = [];
  count = 0;
  refused = 0;
  add(r) {
    if (r.status === 200) {
      this.ranges.push([r.from, r.count]);
      this.count += r.count;
    } else this.refused++;
  }
  /** Acknowledged lines the destination has not got. */
  missing(d) {
    let n = 0;
    for (const [from, count] of this.ranges) for (let i = from; i < from + count; i++) if (!d.got.has(String(i))) n++;
    return n;
  }
}

/** Sends batches from `agents` connections at once until `lines` are acknowledged (what is refused is sent again). */
async function fill(p, lines, batch, agents = 8) {
  const acked = new Acked();
  let reserved = 0;
  await Promise.all(
    Array.from({ length: agents }, async (_, a) => {
      while (reserved < lines) {
        const n = Math.min(batch, lines - reserved);
        reserved += n;
        const r = await p.send(a, n);
        acked.add(r);
        if (r.status !== 200) reserved -= n;
      }
    }),
  );
  return acked;
}

/** Waits until every acknowledged line is at the destination, or nothing new came for a minute. */
async function delivered(d, acked, sleep) {
  let last = -1;
  let since = Date.now();
  for (;;) {
    const missing = acked.missing(d);
    if (missing === 0) return 0;
    if (d.total !== last) {
      last = d.total;
      since = Date.now();
    } else if (Date.now() - since > 60_000) return missing;
    await sleep(500);
  }
}

const dups = (d) => [...d.got.values()].reduce((a, c) => a + (c > 1 ? c - 1 : 0), 0);

export function spoolScenarios(h) {
  const { startServer, arg, tmp, cert, until, uptime, root } = h;
  const ca = readFileSync(cert);
  const BATCH = Number(arg('--batch', '500'));

  async function database(name) {
    if (!process.argv.includes('--pg')) return { db: join(tmp, `${name}.db`), stop: () => undefined };
    const { startCluster } = await import(join(root, 'scripts', 'pg-cluster.mjs'));
    const cluster = await startCluster({ maxConnections: 100 });
    return { db: await cluster.createDatabase(name), stop: () => cluster.stop() };
  }

  async function kill9Backlog() {
    const LINES = Number(arg('--lines', '100000'));
    const d = await destination();
    const { db, stop } = await database('kill9');
    let s = await startServer(['--db', db, '--workers', '1']);
    try {
      const sink = await s.api('POST', '/api/v1/log-sinks', {
        name: 'down',
        type: 'http',
        source: 'result',
        environment_id: 0,
        config: { url: d.url },
      });
      if (sink.status !== 200) throw new Error(JSON.stringify(sink.body));
      console.log(
        `kill9-backlog: ${LINES.toLocaleString('en')} lines acknowledged while the sink's destination is down, then kill -9; ${process.argv.includes('--pg') ? 'PostgreSQL' : 'SQLite'}; ${uptime()}`,
      );
      const p = await posters(s, ca, 8);
      const t0 = Date.now();
      const f = await fill(p, LINES, BATCH);
      p.close();
      const state = (await s.api('GET', '/api/v1/log-sinks')).body.find((x) => x.name === 'down').state;
      console.log(
        `  acknowledged ${f.count.toLocaleString('en')} lines in ${((Date.now() - t0) / 1000).toFixed(1)} s (${f.refused} requests refused); the sink's backlog: ${state.backlog_entries.toLocaleString('en')} entries, ${(state.backlog_bytes / 1048576).toFixed(1)} MiB`,
      );
      s.proc.kill('SIGKILL');
      await new Promise((r) => (s.exited() ? r() : s.proc.once('exit', r)));
      d.up = true;
      const t1 = Date.now();
      s = await startServer(['--db', db, '--workers', '1']);
      const missing = await delivered(d, f, h.sleep);
      const drained = (Date.now() - t1) / 1000;
      await h.sleep(3000);
      console.log(
        `  after kill -9 and a restart: ${missing} of ${f.count.toLocaleString('en')} acknowledged lines lost, ${dups(d)} duplicates; the backlog delivered in ${drained.toFixed(1)} s from the restart (start included), ${(f.count / drained).toFixed(0)} lines/s; ${uptime()}`,
      );
    } finally {
      await s.stop();
      d.server.close();
      stop();
    }
  }

  async function sinkDown() {
    const RATE = Number(arg('--rate', '2000'));
    const MINUTES = Number(arg('--minutes', '10'));
    const d = await destination();
    const s = await startServer(['--db', join(tmp, 'sinkdown.db'), '--workers', '1']);
    const file = join(tmp, 'beside.jsonl');
    try {
      for (const body of [
        { name: 'down', type: 'http', source: 'result', environment_id: 0, config: { url: d.url } },
        { name: 'beside', type: 'file', source: 'result', environment_id: 0, config: { path: 'beside.jsonl', max_size_mb: 100_000 } },
      ]) {
        const r = await s.api('POST', '/api/v1/log-sinks', body);
        if (r.status !== 200) throw new Error(JSON.stringify(r.body));
      }
      console.log(`sink-down: ${RATE} lines/s for ${MINUTES} min, an http sink down the whole time beside a file sink; ${uptime()}`);
      const p = await posters(s, ca, 16);
      // The file sink's lag: read the file as it grows; each line's delay from its received_at.
      let offset = 0;
      let rest = '';
      let lags = [];
      let seen = 0;
      // Over the whole run, so the last (partial) minute and the catch-up after it count too.
      let worst = 0;
      let over5s = 0;
      const tail = () => {
        if (!existsSync(file)) return;
        const size = statSync(file).size;
        if (size <= offset) return;
        const fd = openSync(file, 'r');
        const buf = Buffer.alloc(size - offset);
        readSync(fd, buf, 0, buf.length, offset);
        closeSync(fd);
        offset = size;
        const text = rest + buf.toString('utf8');
        const lines = text.split('\n');
        rest = lines.pop();
        const now = Date.now();
        for (const l of lines) {
          const lag = now - Date.parse(JSON.parse(l).received_at);
          lags.push(lag);
          worst = Math.max(worst, lag);
          if (lag > 5000) over5s++;
          seen++;
        }
      };
      const tailer = setInterval(tail, 100);
      const window = (label) => {
        const sorted = [...lags].sort((x, y) => x - y);
        const pct = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
        lags = [];
        return `${label}: file sink lag p50 ${pct(0.5)} ms, p99 ${pct(0.99)} ms, max ${sorted.at(-1) ?? 0} ms over ${sorted.length.toLocaleString('en')} lines`;
      };
      const acked = new Acked();
      const perTick = Math.max(1, Math.round(RATE / 10));
      const end = Date.now() + MINUTES * 60_000;
      let minute = 0;
      const started = Date.now();
      let a = 0;
      while (Date.now() < end) {
        const tick = Date.now();
        acked.add(await p.send(a++, perTick));
        if (Date.now() - started >= (minute + 1) * 60_000) {
          minute++;
          tail();
          const down = (await s.api('GET', '/api/v1/log-sinks')).body.find((x) => x.name === 'down').state;
          console.log(
            `  ${window(`minute ${minute}: acked ${acked.count.toLocaleString('en')}`)}; down sink backlog ${down.backlog_entries.toLocaleString('en')} (${(down.backlog_bytes / 1048576).toFixed(0)} MiB), retrying since ${down.retrying_since}; load ${uptime().split('load average: ')[1]}`,
          );
        }
        await h.sleep(Math.max(0, 100 - (Date.now() - tick)));
      }
      await until('the file sink to have every line', () => (tail(), seen >= acked.count), 120_000);
      clearInterval(tailer);
      console.log(
        `  ${window('the rest (the last minute and the file sink catching up)')}; over the whole run: max ${worst} ms, ${over5s} of ${seen.toLocaleString('en')} lines over 5 s`,
      );
      d.up = true;
      const t1 = Date.now();
      const missing = await delivered(d, acked, h.sleep);
      console.log(
        `  ${acked.count.toLocaleString('en')} lines acknowledged (${acked.refused} requests refused): file sink ${seen.toLocaleString('en')} lines; the sink that was down: ${missing} lost, ${dups(d)} duplicates, its backlog delivered in ${((Date.now() - t1) / 1000).toFixed(1)} s once its destination was back; ${uptime()}`,
      );
      p.close();
    } finally {
      await s.stop();
      d.server.close();
    }
  }

  async function replicas() {
    const LINES = Number(arg('--lines', '200000'));
    const d = await destination();
    d.up = true;
    const { startCluster } = await import(join(root, 'scripts', 'pg-cluster.mjs'));
    const cluster = await startCluster({ maxConnections: 100 });
    const db = await cluster.createDatabase('replicas');
    const servers = [await startServer(['--db', db, '--workers', '1']), await startServer(['--db', db, '--workers', '1'])];
    try {
      const sink = await servers[0].api('POST', '/api/v1/log-sinks', {
        name: 'shared',
        type: 'http',
        source: 'result',
        environment_id: 0,
        config: { url: d.url },
      });
      if (sink.status !== 200) throw new Error(JSON.stringify(sink.body));
      console.log(
        `replicas: 2 server processes on one PostgreSQL database, ${LINES.toLocaleString('en')} lines posted to both, one http sink; halfway the replica delivering it is killed (kill -9); ${uptime()}`,
      );
      const p = await posters(servers[0], ca, 8);
      const acked = new Acked();
      let killed = false;
      let reserved = 0;
      await Promise.all(
        Array.from({ length: 8 }, async (_, a) => {
          while (reserved < LINES) {
            if (!killed && acked.count >= LINES / 2) {
              killed = true;
              const st = (await servers[1].api('GET', '/api/v1/log-sinks')).body.find((x) => x.name === 'shared').state;
              const pid = Number(st.delivered_by.split(':')[1]);
              const victim = servers.find((x) => x.proc.pid === pid) ?? servers[0];
              console.log(
                `  at ${acked.count.toLocaleString('en')} acknowledged: kill -9 of the replica delivering the sink (${st.delivered_by}), a new replica started`,
              );
              victim.proc.kill('SIGKILL');
              servers.splice(servers.indexOf(victim), 1);
              servers.push(await startServer(['--db', db, '--workers', '1']));
            }
            const via = servers[a % servers.length];
            if (via.exited()) continue;
            const n = Math.min(BATCH, LINES - reserved);
            reserved += n;
            const r = await p.send(a, n, via.connect);
            acked.add(r);
            if (r.status !== 200) reserved -= n;
          }
        }),
      );
      p.close();
      const missing = await delivered(d, acked, h.sleep);
      await h.sleep(3000);
      console.log(
        `  ${acked.count.toLocaleString('en')} acknowledged (${acked.refused} requests refused or cut by the kill, sent again), ${missing} of them lost; ${d.got.size.toLocaleString('en')} distinct lines at the sink (a request cut by the kill may have been committed), ${dups(d)} duplicates; ${uptime()}`,
      );
    } finally {
      for (const x of servers) await x.stop();
      d.server.close();
      cluster.stop();
    }
  }

  async function diskFull() {
    const dir = arg('--dir', undefined);
    if (!dir) throw new Error('disk-full needs --dir: a small file system of its own (see the top of bench/spool-faults.mjs)');
    const d = await destination();
    d.up = true;
    const s = await startServer(['--db', join(dir, 'fleet.db'), '--workers', '1']);
    const filler = join(dir, 'filler');
    try {
      const sink = await s.api('POST', '/api/v1/log-sinks', {
        name: 'after-full',
        type: 'http',
        source: 'result',
        environment_id: 0,
        config: { url: d.url },
      });
      if (sink.status !== 200) throw new Error(JSON.stringify(sink.body));
      const fs = statfsSync(dir);
      console.log(
        `disk-full: the SQLite database on ${dir} (${((fs.blocks * fs.bsize) / 1048576).toFixed(0)} MiB), agents posting, then the file system filled; ${uptime()}`,
      );
      const p = await posters(s, ca, 4);
      const before = await fill(p, 5000, 100, 4);
      // Fill the file system (what is left, in 1 MiB writes, until ENOSPC).
      const fd = openSync(filler, 'w');
      const mb = Buffer.alloc(1 << 20, 1);
      try {
        for (;;) writeSync(fd, mb);
      } catch (e) {
        if (e.code !== 'ENOSPC') throw e;
      } finally {
        closeSync(fd);
      }
      const free = statfsSync(dir);
      const during = new Acked();
      const statuses = {};
      for (let i = 0; i < 40; i++) {
        const r = await p.send(i, 100);
        statuses[r.status] = (statuses[r.status] ?? 0) + 1;
        during.add(r);
      }
      const health = await fetch(`${s.urls.api}/healthz`);
      console.log(
        `  full (${free.bavail * free.bsize} bytes free): 40 log requests answered ${JSON.stringify(statuses)}; /healthz ${health.status} ${(await health.text()).slice(0, 120)}; server up: ${!s.exited()}`,
      );
      rmSync(filler);
      const after = await fill(p, 5000, 100, 4);
      p.close();
      const all = new Acked();
      for (const a of [before, during, after]) for (const r of a.ranges) all.add({ status: 200, from: r[0], count: r[1] });
      const missing = await delivered(d, all, h.sleep);
      console.log(
        `  space again: ${after.count} more acknowledged (${after.refused} refused); of all ${all.count.toLocaleString('en')} acknowledged lines ${missing} lost, ${dups(d)} duplicates at the sink; ${uptime()}`,
      );
    } finally {
      rmSync(filler, { force: true });
      await s.stop();
      d.server.close();
    }
  }

  return { 'kill9-backlog': kill9Backlog, 'sink-down': sinkDown, replicas, 'disk-full': diskFull };
}
