// Issue 20, end to end: live queries and carves the way a security team works. A real
// `fleetctl server` (not --dev) with 40 simulated agents over TLS, 20 of which are then stopped
// (offline); the built fleetctl, in a pseudo-terminal where it is a terminal behaviour.
//   - query run --exit returns once the 20 online agents answered (exit 9: the offline ones did not)
//   - Ctrl-C on query run leaves no active query; --detach leaves one that expires in 24 h
//   - query cancel takes several names and --all-mine; --target status:/health:/risk: select on the server
//   - carves: NODE column, download --node, default names per node and session, 0600, no link
//     followed, every download in the audit log; carves run with no file exits 9
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { execa, type ResultPromise } from 'execa';
import { lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN, Cli, baseEnv, type ServerProcess } from '../helpers/cli.js';
import { runInPty } from '../helpers/admin-cli.js';
import { syntheticHost } from '../../src/agent-sim/hosts.js';
import { startAgentDoorServer } from '../helpers/agent-door-server.js';

const PASSWORD = 'first-admin-password';
const LIVE = 20;
let dir: string;
let server: ServerProcess;
let cli: Cli;
let carvesDir: string;
const sims: { proc: ResultPromise; out: () => string }[] = [];

/** Waits for `ok` (no clock: the test's timeout catches what never comes, and says what it was). */
async function until(ok: () => Promise<boolean> | boolean, what: string): Promise<void> {
  let done = false;
  try {
    onTestFailed(
      () => void (done || console.error(`was waiting for ${what}; simulators said:\n${sims.map((s) => s.out()).join('\n---\n')}`)),
    );
  } catch {
    // in a hook
  }
  while (!(await ok())) await new Promise((r) => setTimeout(r, 200));
  done = true;
}

function simulate(seed: string, count: number, extra: string[] = []) {
  let out = '';
  const proc = execa(
    'node',
    [
      BIN,
      'dev',
      'agents',
      '--flags',
      join(dir, 'prod.flags'),
      '--secret-file',
      join(dir, 'prod.secret'),
      '--certs',
      join(dir, 'agent.pem'),
      '--count',
      String(count),
      '--seed',
      seed,
      '--distributed-interval',
      '500ms',
      '--log-interval',
      '2s',
      '--duration',
      '10m',
      ...extra,
    ],
    { env: baseEnv(cli.configDir), extendEnv: false, reject: false, all: true, buffer: false },
  );
  proc.all.on('data', (d: Buffer) => (out += d.toString()));
  const sim = { proc, out: () => out };
  sims.push(sim);
  return sim;
}

const json = async (args: string[]) => {
  const r = await cli.run([...args, '-o', 'json']);
  expect(r.exitCode, `${args.join(' ')}: ${r.stderr}`).toBe(0);
  return JSON.parse(r.stdout);
};
/** What the agent sent for carve `name`, as the simulator recorded it (DIR/<name>_<UUID>.tar). */
const sent = (name: string, uuid: string) =>
  readFileSync(
    join(
      carvesDir,
      readdirSync(carvesDir).find((f) => f.toLowerCase() === `${name}_${uuid}.tar`.toLowerCase())!,
    ),
  );
const queryName = (stderr: string) => /Query (query_[0-9a-f]+) started/.exec(stderr)?.[1];

let online: { uuid: string; hostname: string }[];
let offline: { uuid: string; hostname: string }[];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'fleetctl-live-'));
  carvesDir = join(dir, 'sent');
  ({ server, cli } = await startAgentDoorServer(dir, PASSWORD));
  // A distributed interval of 1 s: an agent that stopped is offline 10 s later (3 intervals, at least 10 s).
  expect((await cli.run(['env', 'intervals', 'prod', '--query', '1'])).exitCode).toBe(0);
  writeFileSync(join(dir, 'prod.flags'), (await cli.run(['enroll', 'show', 'prod', 'flags'])).stdout);
  writeFileSync(join(dir, 'prod.secret'), (await cli.run(['enroll', 'show', 'prod', 'secret'])).stdout);
  const a = simulate('live-online', LIVE, ['--record-carves', carvesDir]);
  const b = simulate('live-offline', LIVE);
  await until(() => [a, b].every((s) => new RegExp(`Enrolled ${LIVE}/${LIVE} agents`).test(s.out())), 'enrollment');
  const nodes = (await json(['nodes', 'list', '--all'])) as { uuid: string; hostname: string }[];
  expect(nodes).toHaveLength(2 * LIVE);
  // The second fleet goes away: its 20 nodes stay enrolled (and "active" for inactive_hours) but offline.
  b.proc.kill('SIGTERM');
  await b.proc;
  // Which node belongs to which fleet: the synthetic hosts are deterministic in the seed.
  const seenByA = new Set<string>();
  for (let i = 0; i < LIVE; i++) seenByA.add(syntheticHost('live-online', i).uuid.toLowerCase());
  online = nodes.filter((n) => seenByA.has(n.uuid.toLowerCase()));
  offline = nodes.filter((n) => !seenByA.has(n.uuid.toLowerCase()));
  expect(online).toHaveLength(LIVE);
}, 300_000);

afterAll(async () => {
  for (const s of sims) s.proc.kill('SIGTERM');
  await Promise.all(sims.map((s) => s.proc));
  await server?.stop();
  cli?.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

const activeQueries = async () => ((await json(['query', 'list', '--status', 'active', '--all'])) as { name: string }[]).map((q) => q.name);

describe('query run is bounded and online-aware', () => {
  it('--exit against 20 online and 20 offline agents returns once the 20 answered (exit 9), and stops the query', async () => {
    const r = await cli.run(['query', 'run', 'SELECT * FROM os_version', '--exit', '--wait', '5m', '--json']);
    expect(r.exitCode, r.stderr).toBe(9);
    const sets = JSON.parse(r.stdout) as { uuid: string; status: number }[];
    expect(new Set(sets.map((s) => s.uuid.toLowerCase()))).toEqual(new Set(online.map((n) => n.uuid.toLowerCase())));
    expect(r.stderr).toMatch(/Query query_\w+ started on 40 nodes in prod/);
    expect(r.stderr).toContain(
      'error: 20 of 40 targets did not answer (every online target answered; the others are offline); the query was stopped',
    );
    const name = queryName(r.stderr)!;
    expect((await json(['query', 'show', name])).status).toBe('COMPLETED');
    expect(await activeQueries()).not.toContain(name);
  });

  it('answered by every target without an error: exit 0; --target status:active selects on the server', async () => {
    const r = await cli.run([
      'query',
      'run',
      'SELECT * FROM uptime',
      '--target',
      online
        .slice(0, 3)
        .map((n) => n.hostname)
        .join(','),
      '--json',
    ]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toHaveLength(3);
    const active = await cli.run(['query', 'run', 'SELECT 1', '--target', 'status:active', '--detach', '--wait', '0']);
    expect(active.exitCode, active.stderr).toBe(0);
    expect(active.stderr).toMatch(/started on 40 nodes/);
    const bad = await cli.run(['query', 'run', 'SELECT 1', '--target', 'risk:severe']);
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toMatch(/risk is one of low, medium, high, unknown/);
  });

  it('Ctrl-C at a terminal stops waiting, cancels the query on the server and exits 130: no active query is left', async () => {
    const before = await activeQueries();
    const p = runInPty(cli, ['query', 'run', 'SELECT * FROM os_version', '--wait', '10m']);
    await p.expect(/20\/40 answered/); // the online ones answered; the offline ones never will
    const name = queryName(p.output())!;
    expect(await activeQueries()).toContain(name);
    p.write('\x03');
    const { exitCode } = await p.done();
    expect(exitCode).toBe(130);
    expect(await activeQueries()).toEqual(before.filter((n) => n !== name));
    expect((await json(['query', 'show', name])).status).toBe('EXPIRED');
  });

  it('--detach leaves the query active until it expires (24 h by default, --expire to change)', async () => {
    const r = await cli.run(['query', 'run', 'SELECT * FROM os_version', '--detach', '--wait', '2s', '--json']);
    expect(r.exitCode).toBe(9);
    expect(r.stderr).toMatch(/the query stays active until \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ: fleetctl query results query_\w+/);
    const q = await json(['query', 'show', queryName(r.stderr)!]);
    expect(q.status).toBe('ACTIVE');
    expect(Date.parse(q.expiration) - Date.parse(q.created_at)).toBe(24 * 3600_000);
    const short = await cli.run(['query', 'run', 'SELECT 1', '--detach', '--wait', '0', '--expire', '90s']);
    const s = await json(['query', 'show', queryName(short.stderr)!]);
    expect(Date.parse(s.expiration) - Date.parse(s.created_at)).toBe(90_000);
  });

  it('query cancel takes several names, and --all-mine cancels every active query of mine', async () => {
    const start = async () => queryName((await cli.run(['query', 'run', 'SELECT 1', '--detach', '--wait', '0'])).stderr)!;
    const [q1, q2] = [await start(), await start()];
    const two = await cli.run(['query', 'cancel', q1, q2]);
    expect(two.exitCode, two.stderr).toBe(0);
    expect(two.stderr).toBe(`Cancelled query ${q1} in prod\nCancelled query ${q2} in prod\n`);
    await start();
    expect((await activeQueries()).length).toBeGreaterThan(0);
    const mine = await cli.run(['query', 'cancel', '--all-mine']);
    expect(mine.exitCode, mine.stderr).toBe(0);
    expect(await activeQueries()).toEqual([]);
    const none = await cli.run(['query', 'cancel', '--all-mine']);
    expect(none.stderr).toBe('No active queries of yours in prod.\n');
    expect((await cli.run(['query', 'cancel'])).exitCode).toBe(2);
  });
});

describe('carves attributed and audited', () => {
  const hosts = () => online.slice(0, 2);
  let name = '';

  it('carves run waits for the files (exit 0); the files table names the node of each file', async () => {
    const run = await cli.run([
      'carves',
      'run',
      '/etc/hosts',
      '--target',
      hosts()
        .map((h) => h.hostname)
        .join(','),
      '--wait',
      '2m',
    ]);
    expect(run.exitCode, run.stderr).toBe(0);
    name = run.stdout.trim();
    const show = await cli.run(['carves', 'show', name]);
    const table = show.stdout.split('\n\n')[1].trim().split('\n');
    expect(table[0]).toMatch(/^NODE\tSESSION\t/);
    expect(new Set(table.slice(1).map((l) => l.split('\t')[0]))).toEqual(new Set(hosts().map((h) => h.hostname)));
  });

  it('download without -O writes each file as NAME_HOST_SESSION.tar, 0600, byte for byte what the agent sent; --node picks one', async () => {
    const out = join(dir, 'downloads');
    mkdirSync(out);
    const r = await cli.run(['carves', 'download', name], { cwd: out });
    expect(r.exitCode, r.stderr).toBe(0);
    const files = readdirSync(out).sort();
    expect(files).toHaveLength(2);
    for (const h of hosts()) {
      const f = files.find((x) => x.startsWith(`${name}_${h.hostname}_`))!;
      expect(f).toMatch(/_[0-9a-f]{12}\.tar$/);
      expect(statSync(join(out, f)).mode & 0o777).toBe(0o600);
      expect(readFileSync(join(out, f))).toEqual(sent(name, h.uuid));
    }
    const one = join(dir, 'one.tar');
    const picked = await cli.run(['carves', 'download', name, '--node', hosts()[1].hostname, '-O', one]);
    expect(picked.exitCode, picked.stderr).toBe(0);
    expect(readFileSync(one)).toEqual(sent(name, hosts()[1].uuid));
    expect((await cli.run(['carves', 'download', name, '-O', join(dir, 'two.tar')])).exitCode).toBe(2); // -O takes one file
  });

  it('never writes through a symbolic link: a planted .partial link or an existing link at the destination', async () => {
    const victim = join(dir, 'victim.txt');
    writeFileSync(victim, 'do not touch');
    const dest = join(dir, 'linked.tar');
    symlinkSync(victim, `${dest}.partial`);
    const r = await cli.run(['carves', 'download', name, '--node', hosts()[0].hostname, '-O', dest]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(readFileSync(victim, 'utf8')).toBe('do not touch');
    expect(lstatSync(dest).isFile()).toBe(true);
    expect(statSync(dest).mode & 0o777).toBe(0o600);
    const link = join(dir, 'link.tar');
    symlinkSync(victim, link);
    expect((await cli.run(['carves', 'download', name, '--node', hosts()[0].hostname, '-O', link])).exitCode).toBe(6);
    const forced = await cli.run(['carves', 'download', name, '--node', hosts()[0].hostname, '-O', link, '--force']);
    expect(forced.exitCode, forced.stderr).toBe(0);
    expect(lstatSync(link).isFile()).toBe(true); // the link was replaced, its target untouched
    expect(readFileSync(victim, 'utf8')).toBe('do not touch');
  });

  it('every download is in the audit log, with the node and the user', async () => {
    const entries = (await json(['audit', 'list', '-q', `carve ${name}: file of`, '--all'])) as { line: string; username: string }[];
    // 2 without -O, 1 with --node, 1 through a planted .partial, 1 forced over a link.
    expect(entries).toHaveLength(5);
    for (const e of entries) expect(e.username).toBe('admin');
    for (const h of hosts()) expect(entries.some((e) => e.line.includes(`file of ${h.hostname} (session `))).toBe(true);
    expect(entries[0].line).toMatch(/downloaded, \d+ bytes$/);
  });

  it('carves run on an offline node with --exit returns at once with no file: exit 9', async () => {
    const r = await cli.run(['carves', 'run', '/etc/hosts', '--target', offline[0].hostname, '--exit', '--wait', '5m']);
    expect(r.exitCode, r.stderr).toBe(9);
    expect(r.stdout).toMatch(/^carve_\w+\n$/);
    expect(r.stderr).toContain(
      'error: 1 of 1 file not uploaded (every online target uploaded its file; the others are offline); the carve was stopped',
    );
  });
});
