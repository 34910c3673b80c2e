#!/usr/bin/env node
// The database side of agents checking in, for the list benchmark (bench/fleet.mjs): every
// second, one transaction sets last_seen to now and adds to bytes_received for RATE random nodes,
// as the server's check-in flush does for the nodes whose agents called in that second (100,000
// agents at osquery's default intervals: about 3,700). This moves the node change counters every
// second, so the list's caches are really invalidated while it is measured. A process of its own
// so its writes never pause the load generator's event loop.
// Usage: node bench/checkin-writer.mjs <sqlite file | postgres:// url> <rate per second>
const [target, rateArg] = process.argv.slice(2);
const RATE = Number(rateArg ?? 3700);

let write;
let close;
if (/^postgres(ql)?:\/\//.test(target)) {
  const pg = (await import('pg')).default;
  const pool = new pg.Pool({ connectionString: target, max: 1 });
  const { rows } = await pool.query('select id from nodes');
  const ids = rows.map((r) => r.id);
  write = async (now) => {
    const pick = Array.from({ length: Math.min(RATE, ids.length) }, () => ids[Math.floor(Math.random() * ids.length)]);
    await pool.query('update nodes set last_seen = $1, bytes_received = bytes_received + 1000 where id = any($2::int[])', [now, pick]);
  };
  close = () => pool.end();
} else {
  const Database = (await import('better-sqlite3')).default;
  const db = new Database(target);
  db.pragma('busy_timeout = 5000');
  const ids = db.prepare('select id from nodes').all().map((r) => r.id);
  const update = db.prepare('update nodes set last_seen = ?, bytes_received = bytes_received + 1000 where id = ?');
  const batch = db.transaction((now, pick) => {
    for (const id of pick) update.run(now, id);
  });
  write = async (now) => batch(now, Array.from({ length: Math.min(RATE, ids.length) }, () => ids[Math.floor(Math.random() * ids.length)]));
  close = async () => db.close();
}

let stopping = false;
process.on('SIGTERM', () => (stopping = true));
process.stdout.write('writing\n');
while (!stopping) {
  const started = Date.now();
  try {
    await write(new Date().toISOString());
  } catch (e) {
    process.stderr.write(`check-in writer: ${e.message}\n`);
  }
  await new Promise((r) => setTimeout(r, Math.max(0, 1000 - (Date.now() - started))));
}
await close();
