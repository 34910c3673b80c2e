// A throwaway PostgreSQL cluster for tests and `npm run bench -- --pg`: initdb into a temporary
// directory, listen on 127.0.0.1 on a free port (and a private socket directory), fsync off
// (the data is thrown away), removed by stop(). Uses the Debian packages' binaries
// (/usr/lib/postgresql/<version>/bin) or initdb on PATH. initdb refuses to run as root, so as
// root the cluster runs as the `postgres` user the Debian package creates.
import { spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The directory holding initdb/pg_ctl, newest version first; undefined when none is installed. */
export function postgresBinDir() {
  const base = '/usr/lib/postgresql';
  if (existsSync(base)) {
    const versions = readdirSync(base)
      .filter((v) => existsSync(join(base, v, 'bin', 'initdb')))
      .sort((a, b) => Number(b) - Number(a));
    if (versions.length) return join(base, versions[0], 'bin');
  }
  const r = spawnSync('sh', ['-c', 'command -v pg_ctl && command -v initdb'], { encoding: 'utf8' });
  if (r.status === 0) return join(r.stdout.split('\n')[0], '..');
  return undefined;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function ownerOf() {
  if (process.getuid?.() !== 0) return undefined;
  const r = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
  if (r.status !== 0)
    throw new Error('running as root, and there is no postgres user to run the test cluster as (install the Debian package postgresql)');
  const g = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' });
  return { user: 'postgres', uid: Number(r.stdout), gid: Number(g.stdout) };
}

function run(owner, cmd, args) {
  const [c, a] = owner ? ['runuser', ['-u', owner.user, '--', cmd, ...args]] : [cmd, args];
  const r = spawnSync(c, a, { encoding: 'utf8', cwd: tmpdir() });
  if (r.status !== 0)
    throw new Error(
      `${cmd} ${args.join(' ')} failed (exit ${r.status}): ${(r.stderr || r.stdout || '').trim().split('\n').slice(-3).join(' / ')}`,
    );
  return r.stdout;
}

/**
 * Starts a cluster; returns { url, port, dir, createDatabase(name?), stop(), pause(), resume() }. `url` points at
 * the database `postgres` as superuser `postgres` (trust authentication on loopback only).
 */
export async function startCluster(opts = {}) {
  const bin = postgresBinDir();
  if (!bin)
    throw new Error(
      'PostgreSQL server binaries not found (install the Debian packages postgresql and postgresql-contrib: node scripts/test-deps.mjs)',
    );
  const owner = ownerOf();
  const dir = mkdtempSync(join(tmpdir(), 'fleetctl-pg-'));
  if (owner) chownSync(dir, owner.uid, owner.gid);
  const data = join(dir, 'data');
  const port = opts.port ?? (await freePort());
  run(owner, join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '-A', 'trust', '--no-sync', '-E', 'UTF8', '--locale=C']);
  const settings = [
    '-c listen_addresses=127.0.0.1',
    `-p ${port}`,
    `-k ${dir}`,
    '-c fsync=off',
    '-c synchronous_commit=off',
    '-c full_page_writes=off',
    `-c max_connections=${opts.maxConnections ?? 400}`,
    '-c shared_buffers=256MB',
  ].join(' ');
  run(owner, join(bin, 'pg_ctl'), ['-D', data, '-l', join(dir, 'log'), '-w', '-t', '60', '-o', settings, 'start']);
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  let stopped = false;
  let paused = false;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    try {
      if (!paused) run(owner, join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  // A real outage for fault tests: the server process stops (fast shutdown: connections are
  // terminated as in a restart) and starts again on the same port with the same data.
  const pause = () => {
    run(owner, join(bin, 'pg_ctl'), ['-D', data, '-m', 'fast', '-w', 'stop']);
    paused = true;
  };
  const resume = () => {
    run(owner, join(bin, 'pg_ctl'), ['-D', data, '-l', join(dir, 'log'), '-w', '-t', '60', '-o', settings, 'start']);
    paused = false;
  };
  return { url, port, dir, createDatabase: (name) => createDatabaseAt(url, name), stop, pause, resume };
}

let made = 0;
/** A new empty database in the cluster whose superuser URL is `adminUrl`; returns its URL. */
export async function createDatabaseAt(adminUrl, name = `t_${process.pid}_${Date.now().toString(36)}_${++made}`) {
  const pg = (await import('pg')).default;
  const c = new pg.Client({ connectionString: adminUrl });
  await c.connect();
  try {
    await c.query(`create database "${name.replaceAll('"', '')}"`);
  } finally {
    await c.end();
  }
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  return u.toString();
}
