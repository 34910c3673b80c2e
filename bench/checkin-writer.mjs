#!/usr/bin/env node
// The database side of agents checking in, for the list benchmark (bench/fleet.mjs): every
// second, one transaction writes the check-ins of RATE nodes as the server's check-in flush
// writes them (services/agents/checkins.ts: node_seen's last_seen and bytes, the seen counter
// moved only when a node comes back across a window, the node statement for the config fetches
// among them (each agent fetches its configuration every 5 minutes: about one check-in in nine;
// the same hash and validity, so it changes no node), and the check-ins counter once), so the
// list's caches see what they see under a real fleet. A process of its own so its writes never
// pause the load generator's event loop.
//
// Which nodes: a fleet of 100,000 agents at osquery's default intervals checks in about 3,700
// times a second, each agent every half minute or so. The agents are the nodes seen within the
// inactive window (72 h) when the writer starts: each is checked in once at the start (a fleet
// that is running), then RATE of them at random every second. Besides them, WAKEUPS nodes a
// second from the rest (a laptop back after days asleep) check in too: each moves the counts
// counter, so the cached totals are counted again that second.
// Usage: node bench/checkin-writer.mjs <sqlite file | postgres:// url> <rate per second> [wake-ups per second]
const [target, rateArg, wakeArg] = process.argv.slice(2);
const RATE = Number(rateArg ?? 3700);
const WAKEUPS = Number(wakeArg ?? 1);
const ALIVE_MS = 72 * 3600_000;
/** The crossing horizon the server uses at the default intervals (checkins.ts: 3 x 60 s distributed). */
const HORIZON_MS = 180_000;

let run;
let rowsOf;
let close;
if (/^postgres(ql)?:\/\//.test(target)) {
  const pg = (await import('pg')).default;
  const pool = new pg.Pool({ connectionString: target, max: 1 });
  run = async (statements) => {
    const c = await pool.connect();
    try {
      await c.query('begin');
      for (const [text, params] of statements) await c.query(text, params);
      await c.query('commit');
    } catch (e) {
      await c.query('rollback').catch(() => {});
      throw e;
    } finally {
      c.release();
    }
  };
  rowsOf = async (text, params) => (await pool.query(text, params)).rows;
  close = () => pool.end();
} else {
  const Database = (await import('better-sqlite3')).default;
  const db = new Database(target);
  db.pragma('busy_timeout = 5000');
  run = async (statements) =>
    db.transaction(() => {
      for (const [text, params] of statements) db.prepare(text).run(...params);
    })();
  rowsOf = async (text, params) => db.prepare(text).all(...params);
  close = async () => db.close();
}
const pgDialect = /^postgres/.test(target);
const p = (n) => (pgDialect ? `$${n}` : '?');
const rowsJson = (keys) =>
  pgDialect
    ? `jsonb_to_recordset($1::jsonb) as c(${keys.map(([k, t]) => `${k} ${t}`).join(', ')})`
    : `(select ${keys.map(([k]) => `value ->> '$.${k}' as ${k}`).join(', ')} from json_each(?)) as c`;
const CROSSING = `update node_generation set generation = generation + 1 where id = 9 and exists (select 1 from ${rowsJson([['id', 'int']])} join node_seen on node_seen.node_id = c.id where node_seen.last_seen < ${p(2)})`;
const SEEN = `update node_seen set bytes_received = node_seen.bytes_received + c.b, last_seen = case when node_seen.last_seen < c.s then c.s else node_seen.last_seen end from ${rowsJson(
  [
    ['id', 'int'],
    ['b', 'bigint'],
    ['s', 'text'],
  ],
)} where node_seen.node_id = c.id`;
const differs = pgDialect ? 'is distinct from' : 'is not';
// The flush's node statement, for the columns a config fetch sends (hash and validity): only the
// nodes whose values differ are updated.
const NODE = `update nodes set config_hash = coalesce(c.ch, nodes.config_hash), config_valid = coalesce(c.cv, nodes.config_valid) from ${rowsJson(
  [
    ['id', 'int'],
    ['ch', 'text'],
    ['cv', 'int'],
  ],
)} where nodes.id = c.id and ((c.ch is not null and c.ch ${differs} nodes.config_hash) or (c.cv is not null and c.cv ${differs} nodes.config_valid))`;
const CHECKINS = 'update node_generation set generation = generation + 1 where id = 10';
/** Of the check-ins, the share that are config fetches (osquery's default intervals: 5 min config, 30 s the rest). */
const CONFIG_SHARE = 1 / 9;

/** Each node's config hash and validity, as its config fetches send them again. */
const configOf = new Map(
  (await rowsOf('select id, config_hash, config_valid from nodes', [])).map((r) => [
    r.id,
    { ch: r.config_hash, cv: Number(r.config_valid) },
  ]),
);

const checkIn = async (ids, now) => {
  const json = JSON.stringify(ids.map((id) => ({ id, b: 1000, s: now.toISOString() })));
  const fetches = JSON.stringify(ids.filter(() => Math.random() < CONFIG_SHARE).map((id) => ({ id, ...configOf.get(id) })));
  await run([
    [CROSSING, [json, new Date(now.getTime() - HORIZON_MS).toISOString()]],
    [SEEN, [json]],
    [NODE, [fetches]],
    [CHECKINS, []],
  ]);
};

const cutoff = new Date(Date.now() - ALIVE_MS).toISOString();
const alive = (await rowsOf(`select node_id as id from node_seen where last_seen >= ${p(1)}`, [cutoff])).map((r) => r.id);
const asleep = (await rowsOf(`select node_id as id from node_seen where last_seen < ${p(1)}`, [cutoff])).map((r) => r.id);
// The running fleet: every agent checked in once before the clock starts.
for (let i = 0; i < alive.length; i += 5000) await checkIn(alive.slice(i, i + 5000), new Date());

let stopping = false;
process.on('SIGTERM', () => (stopping = true));
process.stdout.write(
  `writing: ${alive.length} agents checking in, ${RATE} a second; ${WAKEUPS} of ${asleep.length} others waking a second\n`,
);
while (!stopping) {
  const started = Date.now();
  try {
    const pick = Array.from({ length: Math.min(RATE, alive.length) }, () => alive[Math.floor(Math.random() * alive.length)]);
    for (let w = 0; w < WAKEUPS && asleep.length > 0; w++) {
      const back = asleep.splice(Math.floor(Math.random() * asleep.length), 1)[0];
      pick.push(back);
      alive.push(back);
    }
    await checkIn(pick, new Date());
  } catch (e) {
    process.stderr.write(`check-in writer: ${e.message}\n`);
  }
  await new Promise((r) => setTimeout(r, Math.max(0, 1000 - (Date.now() - started))));
}
await close();
