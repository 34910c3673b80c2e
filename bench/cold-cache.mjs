// What a read costs once Linux has dropped the database's pages from its cache (issue 31). The
// server reads SQLite through a memory map (src/server/store/sqlite-mmap.ts) because the kernel
// may drop file pages that no process maps: under memory pressure, and on the virtual machines
// measured all the time (DAMON's proactive pageout). This drops them on purpose (drop_caches, as
// root: it drops only pages nobody maps), then times point reads on one connection read through
// pread, as SQLite does by default, and on one read through a map, alternating. Before the
// reads another connection commits a row, as the agent door's writers do all the time, which
// empties the reading connection's own page cache (SQLite's rule in WAL mode).
// Usage: npm run bench:cold-cache -- [ROUNDS]   (root; writes a 190 MB database in the OS temp dir)
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';

const ROUNDS = Number(process.argv[2] ?? 2);
if (!Number.isInteger(ROUNDS) || ROUNDS < 1) {
  console.error(`usage: npm run bench:cold-cache -- [ROUNDS]: a positive integer (got ${process.argv[2]})`);
  process.exit(2);
}
if (process.platform !== 'linux' || process.getuid?.() !== 0) {
  console.error('bench:cold-cache drops the page cache through /proc/sys/vm/drop_caches: Linux, as root');
  process.exit(2);
}
const ROWS = 400_000;
const READS = 2000;
// As the server sets it (src/server/store/sqlite-mmap.ts, db.ts).
const MMAP_BYTES = 2 * 1024 * 1024 * 1024;
const CACHE_KIB = 65536;

const dir = mkdtempSync(join(tmpdir(), 'fleetctl-cold-cache-'));
const path = join(dir, 'cold.db');
try {
  const setup = new Database(path);
  setup.pragma('journal_mode = WAL');
  setup.exec('create table t (k text primary key, v blob); create table w (x)');
  const insert = setup.prepare('insert into t values (?, ?)');
  // Keys in no particular order, as node keys are: a read's pages are scattered over the file.
  setup.transaction(() => {
    for (let i = 0; i < ROWS; i++) insert.run(`k${(i * 2654435761) % 1e9}`, Buffer.alloc(400, i));
  })();
  setup.pragma('wal_checkpoint(TRUNCATE)');
  setup.close();

  const run = (mapped) => {
    const db = new Database(path);
    db.pragma(`cache_size = -${CACHE_KIB}`);
    if (mapped) db.pragma(`mmap_size = ${MMAP_BYTES}`);
    const keys = db.prepare('select k from t').pluck().all();
    const get = db.prepare('select v from t where k = ?');
    for (const k of keys) get.get(k); // every page touched once through this connection
    execFileSync('sh', ['-c', 'sync && echo 1 > /proc/sys/vm/drop_caches']);
    const writer = new Database(path);
    writer.prepare('insert into w values (1)').run();
    writer.close();
    let worst = 0;
    const start = process.hrtime.bigint();
    for (let i = 0; i < READS; i++) {
      const t = process.hrtime.bigint();
      get.get(keys[(i * 7919) % keys.length]);
      worst = Math.max(worst, Number(process.hrtime.bigint() - t) / 1e6);
    }
    const total = Number(process.hrtime.bigint() - start) / 1e6;
    db.close();
    return { total, worst };
  };

  console.log(
    `${READS} point reads of a ${ROWS.toLocaleString('en')}-row database after drop_caches, load ${execFileSync('cat', ['/proc/loadavg']).toString().trim()}`,
  );
  for (let r = 1; r <= ROUNDS; r++) {
    for (const mapped of [false, true]) {
      const { total, worst } = run(mapped);
      console.log(`round ${r}  ${mapped ? 'mmap ' : 'pread'}  all ${total.toFixed(1)} ms  slowest ${worst.toFixed(2)} ms`);
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
