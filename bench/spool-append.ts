// What one agent's log batch costs the durable spool (issue 31): appends of one line, each
// awaited, through a real server's spool (its SQLite writer thread, the query reports hook), the
// CPU of each thread of this process per append, from /proc. Back to back (the writer thread
// awake) and paced by a 5 ms timer (each append finds the thread asleep, as at an agent door's
// rates), for a status line (one message to the writer thread) and a result line (and the query
// report it updates). The pacing timer's own cost is measured alone and subtracted. Linux only.
// Usage: npm run bench:append -- [N]
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer } from '../src/server/start.js';
import type { SpoolInput } from '../src/server/services/delivery/spool.js';

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
for (let i = 0; i < 300; i++) await server.spool.append([row('status')]); // warm
const timer = await perRun(pause);
for (const kind of ['status', 'result'] as const) {
  const busy = await perRun(() => server.spool.append([row(kind)]));
  const paced = await perRun(async () => {
    await server.spool.append([row(kind)]);
    await pause();
  });
  console.log(
    `${kind.padEnd(6)}  back to back: event loop ${f3(busy.loop)}, other threads ${f3(busy.other)}, total ${f3(busy.loop + busy.other)}` +
      `   paced: event loop ${f3(paced.loop - timer.loop)}, other threads ${f3(paced.other - timer.other)}, total ${f3(paced.loop + paced.other - timer.loop - timer.other)}`,
  );
}
console.log(`(the ${PACE_MS} ms timer alone: ${f3(timer.loop + timer.other)} ms a turn, subtracted from the paced figures)`);
await server.close();
rmSync(dir, { recursive: true, force: true });
