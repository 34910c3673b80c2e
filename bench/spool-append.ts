// What one agent's log batch costs the durable spool (issue 31): appends of one line through a
// real server's spool (its SQLite writer thread, the query reports hook), the CPU of each thread
// of this process per append, from /proc. Back to back (the writer thread awake) and paced by a
// 5 ms timer (each append finds the thread asleep, as at an agent door's rates), for a status line
// (one message to the writer thread) and a result line (and the query report it updates); then
// groups of 1, 2, 4 and 8 lines committed together, paced; then appends arriving at random at the
// log rates of a door of 5,000 and of 20,000 osquery-perf hosts, without the commit spacing and
// with it (spool.ts COMMIT_SPACING_MS), in the same run. The pacing timer's own cost is measured
// alone and subtracted from the paced figures; the arrivals' timers are in theirs, the same with
// and without the spacing. Linux only.
// Usage: npm run bench:append -- [N]
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer } from '../src/server/start.js';
import { COMMIT_SPACING_MS, Spool, type SpoolInput } from '../src/server/services/delivery/spool.js';

const N = Number(process.argv[2] ?? 2000);
if (!Number.isInteger(N) || N < 1) {
  console.error(`usage: npm run bench:append -- [N]: N appends of each kind, a positive integer (got ${process.argv[2]})`);
  process.exit(2);
}
const PACE_MS = 5;
const dir = mkdtempSync(join(tmpdir(), 'fleetctl-bench-append-'));
const server = await startServer({ dbPath: join(dir, 'bench.db'), host: '127.0.0.1', port: 0, dev: true, devPassword: 'bench-password-1' });
const db = server.store.db;
const env = await db.selectFrom('environments').select('id').orderBy('id').executeTakeFirstOrThrow();
const node = await db.selectFrom('nodes').select(['id', 'uuid', 'hostname']).where('environment_id', '=', env.id).executeTakeFirstOrThrow();

/** CPU ticks of each thread of this process. */
function threads(): Map<string, number> {
  const out = new Map<string, number>();
  for (const t of readdirSync('/proc/self/task')) {
    try {
      const s = readFileSync(`/proc/self/task/${t}/stat`, 'utf8');
      const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
      out.set(t, Number(f[11]) + Number(f[12]));
    } catch {
      /* ended */
    }
  }
  return out;
}
const ticksMs = 1000 / 100; // USER_HZ

/** Event-loop and other-thread CPU (ms) per run of `fn`, over N runs. */
async function perRun(fn: () => Promise<unknown>): Promise<{ loop: number; other: number }> {
  const a = threads();
  for (let i = 0; i < N; i++) await fn();
  const b = threads();
  let loop = 0;
  let other = 0;
  for (const [t, v] of b) {
    const d = (v - (a.get(t) ?? 0)) * ticksMs;
    if (t === String(process.pid)) loop += d;
    else other += d;
  }
  return { loop: loop / N, other: other / N };
}

// A line of osquery-perf's size (about 860 bytes: its uptime snapshot with decorations).
const line = JSON.stringify({
  name: 'pack/bench/uptime',
  action: 'snapshot',
  snapshot: [{ days: '1', hours: '2', minutes: '3', seconds: '4', total_seconds: '93784' }],
  hostIdentifier: node.uuid,
  calendarTime: 'Fri Oct  6 18:13:04 2023 UTC',
  unixTime: 1696615984,
  epoch: 0,
  counter: 0,
  numerics: false,
  decorations: { host_uuid: node.uuid, hostname: node.hostname, pad: 'x'.repeat(400) },
});
const row = (logType: 'status' | 'result'): SpoolInput => ({
  environmentId: env.id,
  nodeId: node.id,
  hostIdentifier: node.uuid,
  hostname: node.hostname,
  logType,
  name: logType === 'result' ? 'pack/bench/uptime' : null,
  severity: logType === 'status' ? 0 : null,
  line,
});
const pause = () => new Promise((r) => setTimeout(r, PACE_MS));
const f3 = (x: number) => x.toFixed(3);

console.log(
  `${N} one-line appends of each kind, load ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}; CPU ms per append:`,
);
// Spools of the server's store with its commit hooks (the query reports): one without the
// commit spacing, for the figures of a commit by its size, and one with it.
const spoolWith = (spacingMs: number) => {
  const s = new Spool(server.deps, spacingMs);
  s.onCommit.push(...server.spool.onCommit);
  return s;
};
const bare = spoolWith(0);
for (let i = 0; i < 300; i++) await bare.append([row('status')]); // warm
const timer = await perRun(pause);
for (const kind of ['status', 'result'] as const) {
  const busy = await perRun(() => bare.append([row(kind)]));
  const paced = await perRun(async () => {
    await bare.append([row(kind)]);
    await pause();
  });
  console.log(
    `${kind.padEnd(6)}  back to back: event loop ${f3(busy.loop)}, other threads ${f3(busy.other)}, total ${f3(busy.loop + busy.other)}` +
      `   paced: event loop ${f3(paced.loop - timer.loop)}, other threads ${f3(paced.other - timer.other)}, total ${f3(paced.loop + paced.other - timer.loop - timer.other)}`,
  );
}
console.log(`(the ${PACE_MS} ms timer alone: ${f3(timer.loop + timer.other)} ms a turn, subtracted from the paced figures)`);

// What costs is the commit, not its lines: k lines appended in one turn commit together.
const groups: string[] = [];
for (const k of [1, 2, 4, 8]) {
  const paced = await perRun(async () => {
    await Promise.all(Array.from({ length: k }, (_, i) => bare.append([row(i % 2 ? 'result' : 'status')])));
    await pause();
  });
  groups.push(`${k}: ${f3((paced.loop + paced.other - timer.loop - timer.other) / k)}`);
}
console.log(`a commit of k lines, paced, CPU ms per line (all threads): ${groups.join(', ')}`);

// Arrivals at random (exponential gaps, a fixed seed: the same times with and without the
// spacing), half status and half result lines, at an agent door's log rates measured with
// osquery-perf (its logger_tls_period 10s): about 84 log requests a second at 5,000 hosts, 370 at 20,000.
for (const [hosts, meanMs] of [
  [5000, 12],
  [20000, 2.7],
] as const) {
  const line = [];
  let perAppend0 = 0;
  for (const spacingMs of [0, COMMIT_SPACING_MS]) {
    const spool = spoolWith(spacingMs);
    let commits = 0;
    spool.on('committed', () => commits++);
    let seed = 4242;
    const gap = () => -Math.log(1 - (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648) * meanMs;
    const all: Promise<void>[] = [];
    const cpu = await perRun(async () => {
      await new Promise((r) => setTimeout(r, gap()));
      all.push(spool.append([row(all.length % 2 ? 'result' : 'status')]));
      if (all.length === N) await Promise.all(all); // the last commits counted in
    });
    const perAppend = cpu.loop + cpu.other;
    if (spacingMs === 0) perAppend0 = perAppend;
    line.push(
      `spacing ${spacingMs} ms: ${commits} commits, ${f3(perAppend)} ms an append${spacingMs ? ` (${(perAppend / perAppend0).toFixed(2)}x)` : ''}`,
    );
  }
  console.log(`arrivals every ${meanMs} ms on average (a door of ${hosts} hosts): ${line.join('; ')}`);
}
await server.close();
rmSync(dir, { recursive: true, force: true });
