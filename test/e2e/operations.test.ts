// Issue 27, points 3, 4 and 6: operating the server, with the built CLI and real server processes.
// `fleetctl version` with the server's; environments created, edited and deleted from the CLI,
// their enrollment windows said by env list/show; `server backup` of a live SQLite database,
// restored; `server migrate` of a database an older release left; a newer schema refused.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kysely, Migrator, SqliteDialect } from 'kysely';
import Database from 'better-sqlite3';
import { execa } from 'execa';
import { BIN, Cli, DEV_PASSWORD, startServerProcess, type ServerProcess } from '../helpers/cli.js';
import { eventually } from '../helpers/osquery-agent.js';
import { migrationProvider } from '../../src/server/store/migrations.js';
import pkg from '../../package.json' with { type: 'json' };

let dir: string;
const clis: Cli[] = [];
const servers: ServerProcess[] = [];
const newCli = () => {
  const c = new Cli();
  clis.push(c);
  return c;
};
const serve = async (args: string[], input?: string) => {
  const s = await startServerProcess(args, input === undefined ? {} : { input });
  servers.push(s);
  return s;
};

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'fleetctl-ops-'));
});
afterAll(async () => {
  for (const s of servers) await s.stop().catch(() => undefined);
  for (const c of clis) c.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

describe('fleetctl version', () => {
  let s: ServerProcess;
  beforeAll(async () => {
    s = await serve(['--dev', '--dev-password', DEV_PASSWORD, '--dev-nodes', '20']);
  });

  it("shows the server's release, schema and database beside the client's", async () => {
    const c = newCli();
    await c.login(s.url);
    const r = await c.run(['version']);
    expect(r.exitCode).toBe(0);
    const schema = (await migrationNames()).at(-1)!;
    expect(r.stdout).toBe(
      `fleetctl ${pkg.version} (node ${process.version}, ${process.platform}-${process.arch})\n` +
        `server: fleetctl ${pkg.version} at ${s.url} (schema ${schema}, sqlite, node ${process.version})\n`,
    );
    const j = JSON.parse((await c.run(['version', '-o', 'json'])).stdout);
    expect(j.server).toEqual({ url: s.url, flavor: 'fleet', version: pkg.version, schema, database: 'sqlite', node: process.version });
    expect((await c.run(['version', '--client'])).stdout).toBe(
      `fleetctl ${pkg.version} (node ${process.version}, ${process.platform}-${process.arch})\n`,
    );
    expect(JSON.parse((await c.run(['auth', 'status', '-o', 'json'])).stdout).server_version).toBe(pkg.version);
  });

  it('a server that cannot be asked: the client line, then the error and its exit code (as kubectl)', async () => {
    const r = await newCli().run(['version', '--url', s.url]);
    expect(r.exitCode).toBe(4);
    expect(r.stdout).toMatch(/^fleetctl \S+ \(node /);
    expect(r.stderr).toMatch(/^error: not logged in/);
  });

  it('GET /healthz carries the version; GET /api/v1/version needs a signed-in user', async () => {
    expect(await (await fetch(`${s.url}/healthz`)).json()).toMatchObject({ status: 'ok', version: pkg.version });
    expect((await fetch(`${s.url}/api/v1/version`)).status).toBe(401);
  });
});

async function migrationNames(): Promise<string[]> {
  return Object.keys(await migrationProvider('sqlite').getMigrations()).sort();
}

describe('env create, edit, delete from the CLI', () => {
  let c: Cli;
  beforeAll(async () => {
    const s = await serve(['--dev', '--dev-password', DEV_PASSWORD, '--dev-nodes', '20']);
    c = newCli();
    await c.login(s.url);
  });

  it('create prints where agents connect and how enrollment stands; env list says a window is closing', async () => {
    const r = await c.run(['env', 'create', 'lab', '--enroll-window', '6h', '--query', '10']);
    expect(r.exitCode, r.stderr).toBe(0);
    const kv = Object.fromEntries(
      r.stdout
        .trimEnd()
        .split('\n')
        .map((l) => l.split('\t')),
    );
    expect(kv).toMatchObject({ name: 'lab', query_interval: '10' });
    expect(kv.enrollment).toMatch(/^closing in 6 hours \(\d{4}-.*Z\)$/);
    expect(r.stderr).toBe('Created environment lab. Enroll hosts with: fleetctl enroll show lab enroll.sh\n');
    const list = await c.run(['env', 'list']);
    expect(
      list.stdout
        .split('\n')
        .find((l) => l.startsWith('lab\t'))!
        .split('\t')[6],
    ).toBe('closing');
    expect(list.stderr).toMatch(
      /^warning: enrollment of lab is closing in 6 hours \(.*\): new hosts will be refused; `fleetctl enroll notexpire lab` keeps it open\n$/,
    );
    expect((await c.run(['env', 'create', 'lab'])).exitCode).toBe(6);
    expect((await c.run(['env', 'create', 'bad/name'])).exitCode).toBe(1);
    expect((await c.run(['env', 'create', 'x', '--enroll-window', 'soon'])).exitCode).toBe(2);
  });

  it('a closed window is said by env show and stats', async () => {
    expect((await c.run(['enroll', 'expire', 'lab', '--yes'])).exitCode).toBe(0);
    const show = await c.run(['env', 'show', 'lab']);
    expect(show.stdout).toMatch(/^enrollment\tclosed just now \(window ended \d{4}-.*Z\)$/m);
    expect(show.stderr).toMatch(/^warning: enrollment of lab is closed just now .*new hosts are refused/);
    const stats = await c.run(['stats', '-o', 'json']);
    expect(JSON.parse(stats.stdout).environments.find((e: { name: string }) => e.name === 'lab')).toMatchObject({ enrollment: 'closed' });
  });

  it('edit renames and re-points; nothing given is exit 2', async () => {
    const r = await c.run([
      'env',
      'edit',
      'lab',
      '--name',
      'lab2',
      '--agent-host',
      'fleet-lab.example.com:8443',
      '--detail-refresh',
      '30m',
      '-o',
      'json',
    ]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      name: 'lab2',
      hostname: 'fleet-lab.example.com:8443',
      hostname_pinned: true,
      detail_refresh: 1800,
      secret: '',
    });
    expect((await c.run(['enroll', 'show', 'lab2', 'flags'])).stdout).toContain('--tls_hostname=fleet-lab.example.com:8443\n');
    expect((await c.run(['env', 'edit', 'lab2'])).exitCode).toBe(2);
    expect((await c.run(['env', 'edit', 'lab2', '--agent-host', 'x', '--follow-server'])).exitCode).toBe(2);
    const back = JSON.parse((await c.run(['env', 'edit', 'lab2', '--follow-server', '-o', 'json'])).stdout);
    expect(back).toMatchObject({ hostname_pinned: false });
    expect(back.hostname).not.toBe('fleet-lab.example.com:8443');
  });

  it('delete needs --yes without a terminal (exit 2, nothing deleted), then deletes with its nodes', async () => {
    const no = await c.run(['env', 'delete', 'lab2']);
    expect(no.exitCode).toBe(2);
    expect(no.stderr).toMatch(
      /^error: refusing to proceed without confirmation: Delete environment lab2 \(\S+\) with its 0 nodes, tags, live queries, carves, log sinks and settings\? This cannot be undone; pass --yes\n/,
    );
    expect((await c.run(['env', 'show', 'lab2'])).exitCode).toBe(0);
    const dev = await c.run(['env', 'delete', 'dev', '--yes']);
    expect(dev.exitCode).toBe(0);
    expect(dev.stderr).toMatch(/^Environment dev deleted with \d+ nodes\.\n$/);
    expect((await c.run(['env', 'show', 'dev'])).exitCode).toBe(3);
    expect((await c.run(['audit', 'list', '-q', 'environment dev deleted', '-o', 'json'])).stdout).toContain(
      'environment dev deleted with',
    );
  });
});

describe('--log', () => {
  it('every line on stderr is one JSON object: the start, requests of both doors, a reload, the shutdown', async () => {
    const p = execa(
      'node',
      [
        BIN,
        'server',
        '--dev',
        '--dev-password',
        DEV_PASSWORD,
        '--dev-nodes',
        '20',
        '--dev-agents',
        '1',
        '--listen',
        '127.0.0.1:0',
        '--workers',
        '1',
        '--log',
      ],
      { reject: false, buffer: true },
    );
    let err = '';
    p.stderr.on('data', (d: Buffer) => (err += d.toString()));
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    // Waited for, not timed (the test's timeout ends a hang).
    const logged = (re: RegExp, what: string) => eventually(() => Promise.resolve(re.test(err) ? true : undefined), what);
    // The banner too is an event of the log (stdout is for a stdout sink).
    await logged(/Simulated agents: 1 of 1 enrolled/, 'the simulated agent to enroll');
    const url = /(http:\/\/127\.0\.0\.1:\d+)/.exec(err)![1];
    const c = newCli();
    await c.login(url);
    expect((await c.run(['nodes', 'list', '--limit', '1'])).exitCode).toBe(0);
    await logged(/"door":"agent"/, 'a request of the agent door in the log');
    p.kill('SIGHUP');
    await logged(/"event":"reload"/, 'the reload event');
    p.kill('SIGTERM');
    await p;
    const lines = err.trimEnd().split('\n');
    const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    for (const o of parsed) expect(Object.keys(o).slice(0, 4)).toEqual(['time', 'level', 'event', 'msg']);
    const events = new Set(parsed.map((o) => o.event));
    for (const e of ['banner', 'start', 'request', 'reload', 'shutdown']) expect(events, e).toContain(e);
    expect(out).toBe('');
    expect(parsed.find((o) => o.event === 'request' && o.door === 'admin' && o.route === '/api/v1/nodes/:env')).toMatchObject({
      method: 'GET',
      status: 200,
      user: 'admin',
    });
    expect(parsed.find((o) => o.event === 'request' && o.door === 'agent')).toMatchObject({ endpoint: expect.any(String), status: 200 });
    // Secrets never: no token, no enroll secret path, no node key.
    expect(err).not.toMatch(/Bearer|node_key|enroll_secret/);
  });
});

describe('SIGHUP while the server starts', () => {
  // systemctl reload right after systemctl start (which returns once the service runs): the port
  // answers before the reload handler is set, most of all in the primary of --workers. The signal
  // used to end the server there (Node's default for SIGHUP); it is kept and acted on instead.
  it('a SIGHUP the moment /healthz answers is acted on (a reload event), and the server goes on', async () => {
    const freePort = () =>
      new Promise<number>((res) => {
        const l = createServer().listen(0, '127.0.0.1', () => {
          const p = (l.address() as AddressInfo).port;
          l.close(() => res(p));
        });
      });
    const [port, agentPort] = [await freePort(), await freePort()];
    const p = execa(
      'node',
      [
        BIN,
        'server',
        '--dev',
        '--dev-password',
        DEV_PASSWORD,
        '--dev-nodes',
        '5',
        '--listen',
        `127.0.0.1:${port}`,
        '--agent-listen',
        `127.0.0.1:${agentPort}`,
        '--workers',
        '2',
        '--log',
      ],
      {
        reject: false,
        buffer: true,
        // The workers drain (grace 5 s) before the primary exits: not killed by execa's default 5 s.
        forceKillAfterDelay: 60_000,
      },
    );
    let err = '';
    p.stderr.on('data', (d: Buffer) => (err += d.toString()));
    await eventually(
      () =>
        fetch(`http://127.0.0.1:${port}/healthz`).then(
          (r) => (r.ok ? true : undefined),
          () => undefined,
        ),
      'the port to answer',
    );
    p.kill('SIGHUP');
    const ended = () => p.exitCode !== null || p.signalCode !== null;
    await eventually(
      () => Promise.resolve(/"event":"reload"/.test(err) || ended() ? true : undefined),
      'the reload event (or the end of the server)',
    );
    expect({ code: p.exitCode, signal: p.signalCode }, err).toEqual({ code: null, signal: null });
    expect(err).toMatch(/"event":"reload"/);
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    p.kill('SIGTERM');
    await p;
  });
});

describe('Ctrl-C as soon as the server says it listens', () => {
  // At a terminal Ctrl-C reaches the whole process group: the primary of --workers and its
  // workers. Sent the moment the banner shows, it found the primary without its handler (so it
  // died) while the workers drained and crashed writing to it: a stack trace (EPIPE).
  it('--workers 2: the server stops, and prints no stack trace', async () => {
    const p = execa(
      'node',
      [BIN, 'server', '--dev', '--dev-password', DEV_PASSWORD, '--dev-nodes', '5', '--listen', '127.0.0.1:0', '--workers', '2'],
      {
        reject: false,
        all: true,
        buffer: true,
        detached: true, // a process group of its own, as a terminal's foreground job
        forceKillAfterDelay: 60_000,
      },
    );
    let all = '';
    p.all.on('data', (d: Buffer) => (all += d.toString()));
    await eventually(() => Promise.resolve(/listening on|Log in:/.test(all) || p.exitCode !== null ? true : undefined), 'the banner');
    process.kill(-p.pid!, 'SIGINT');
    const r = await p;
    expect(r.all, r.all).not.toMatch(/EPIPE|^\s+at /m);
    expect([0, 130]).toContain(r.exitCode ?? (r.signal === 'SIGINT' ? 130 : -1));
  });
});

describe('against osctrl: what it lacks is refused before any request', () => {
  // Nothing listens at this URL: a request would be exit 7; a refusal is exit 8 (or 2) at once.
  const env = { FLEETCTL_TOKEN: 'not-used', FLEETCTL_URL: 'http://127.0.0.1:9', FLEETCTL_SERVER_FLAVOR: 'osctrl' };
  it('--enroll-window, --detail-refresh, --follow-server: exit 8; no --agent-host on create: exit 2', async () => {
    const c = newCli();
    const window = await c.run(['env', 'create', 'lab', '--agent-host', 'tls.example.com:8443', '--enroll-window', '7d'], { env });
    expect(window.exitCode).toBe(8);
    expect(window.stderr).toBe(
      'error: an enrollment window of any length (--enroll-window): not supported by this server (osctrl 0.5.4 has no such feature)\n',
    );
    expect((await c.run(['env', 'create', 'lab', '--agent-host', 'tls.example.com', '--detail-refresh', '1h'], { env })).exitCode).toBe(8);
    expect((await c.run(['env', 'edit', 'lab', '--follow-server'], { env })).exitCode).toBe(8);
    const noHost = await c.run(['env', 'create', 'lab'], { env });
    expect(noHost.exitCode).toBe(2);
    expect(noHost.stderr).toMatch(/^error: osctrl needs the agent host of a new environment/);
  });
});

describe('server backup and restore, migrate, a newer schema', () => {
  it('backs up a live database while agents check in; the copy starts as a server with the same fleet', async () => {
    const db = join(dir, 'live.db');
    const s = await serve(['--dev', '--dev-password', DEV_PASSWORD, '--dev-nodes', '50', '--dev-agents', '3', '--db', db]);
    await s.waitFor(/Simulated agents: 3 of 3 enrolled/);
    const out = join(dir, 'backup.db');
    const r = await newCli().run(['server', 'backup', '--db', db, out]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toMatch(
      new RegExp(`^Backed up ${db} \\(schema \\d{3}_\\w+, 53 nodes\\) to ${out}: [\\d.]+ MiB, checked, in [\\d.]+ s\\n$`),
    );
    expect(statSync(out).mode & 0o777).toBe(0o600);
    const again = await newCli().run(['server', 'backup', '--db', db, out]);
    expect(again.exitCode).toBe(1);
    expect(again.stderr).toBe(`error: ${out} already exists: give a new file name (a backup never overwrites)\n`);
    await s.stop();
    // Restored: the copy is a database a server starts on, with the users and nodes it had.
    const restored = await serve(['--db', out]);
    const c = newCli();
    await c.login(restored.url);
    // The simulated agents that were checking in during the backup are in it, with their tag.
    const live = JSON.parse(
      (await c.run(['nodes', 'list', '--tag', 'live-agents', '--all', '-o', 'json', '--env', 'prod'])).stdout,
    ) as unknown[];
    expect(live).toHaveLength(3);
    const total = JSON.parse((await c.run(['stats', '-o', 'json'])).stdout).total_nodes;
    expect(total).toBe(53);
    const pgRefused = await newCli().run(['server', 'backup', '--db', 'postgres://fleet@db.internal/fleet', join(dir, 'x.db')]);
    expect(pgRefused.exitCode).toBe(2);
    expect(pgRefused.stderr).toMatch(
      /^error: a PostgreSQL database is backed up with PostgreSQL's own tool, while the server runs: pg_dump /,
    );
  });

  it('migrate brings a database an older release left to this schema, as a step of its own', async () => {
    const db = join(dir, 'old.db');
    const names = await migrationNames();
    const previous = names[names.indexOf('015_production') - 1];
    const k = new Kysely<any>({ dialect: new SqliteDialect({ database: new Database(db) }) });
    const m = await new Migrator({ db: k, provider: migrationProvider('sqlite') }).migrateTo(previous);
    expect(m.error).toBeUndefined();
    await k.destroy();
    const later = names.slice(names.indexOf('015_production'));
    const dry = await newCli().run(['server', 'migrate', '--db', db, '--dry-run']);
    expect(dry.stdout).toBe(`Would apply ${later.length} migration(s) to the schema at ${previous}: ${later.join(', ')}\n`);
    const run = await newCli().run(['server', 'migrate', '--db', db]);
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.stdout).toBe(`Applied ${later.length} migration(s): ${later.join(', ')}; the schema is now ${names.at(-1)}.\n`);
    expect((await newCli().run(['server', 'migrate', '--db', db])).stdout).toBe(
      `The schema is up to date (${names.at(-1)}): nothing to apply.\n`,
    );
    expect((await newCli().run(['server', 'migrate', '--db', join(dir, 'none.db')])).exitCode).toBe(1);
    expect(existsSync(join(dir, 'none.db'))).toBe(false);
  });

  it('a database migrated by a newer release: the server and migrate refuse it in one line, changing nothing', async () => {
    const db = join(dir, 'newer.db');
    const s = await serve(['--db', db, '--admin-password-stdin'], DEV_PASSWORD);
    await s.stop();
    const raw = new Database(db);
    raw.prepare("insert into kysely_migration (name, timestamp) values ('999_from_the_future', '2030-01-01T00:00:00.000Z')").run();
    raw.close();
    const line = `error: the database's schema is newer than this fleetctl ${pkg.version} knows (its migration 999_from_the_future is not one of ours): run the release that upgraded it, or restore the backup taken before the upgrade\n`;
    for (const args of [
      ['server', '--db', db, '--listen', '127.0.0.1:0'],
      ['server', '--db', db, '--listen', '127.0.0.1:0', '--workers', '2'],
      ['server', 'migrate', '--db', db],
    ]) {
      const r = await newCli().run(args);
      expect(r.exitCode, args.join(' ')).toBe(1);
      expect(r.stderr).toBe(line);
    }
  });
});
