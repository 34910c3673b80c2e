// Issue 13's done-checks, end to end: a fresh `fleetctl server` (not --dev) with --create-env
// prod; simulated agents (the hidden `fleetctl dev agents`) enroll over TLS with the flags and
// secret that `fleetctl enroll show prod flags|secret` print; `nodes list --status active`
// lists them; `query run` returns one result set per agent; `carves run` + `carves download`
// give back byte for byte the archive the agent sent.
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { execa, type ResultPromise } from 'execa';
import { createServer as createNetServer } from 'node:net';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN, Cli, DEV_PASSWORD, baseEnv, startServerProcess, type ServerProcess } from '../helpers/cli.js';
import { syntheticHost } from '../../src/agent-sim/hosts.js';
import { startAgentDoorServer } from '../helpers/agent-door-server.js';

const PASSWORD = 'first-admin-password';
const AGENTS = 3;
let dir: string;
let server: ServerProcess;
let cli: Cli;
let agents: ResultPromise;
let agentsOut = '';
let carvesDir: string;

/** Waits for `ok` (no clock: the test's timeout catches what never comes, and says what it was). */
async function until(ok: () => Promise<boolean> | boolean, what: string): Promise<void> {
  const report = () => console.error(`was waiting for ${what}; simulator said:\n${agentsOut}`);
  let done = false;
  try {
    onTestFailed(() => void (done || report()));
  } catch {
    // in a hook
  }
  while (!(await ok())) await new Promise((r) => setTimeout(r, 250));
  done = true;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'fleetctl-agents-'));
  carvesDir = join(dir, 'sent');
  let certFile: string;
  ({ server, cli, certFile } = await startAgentDoorServer(dir, PASSWORD));
  const flags = await cli.run(['enroll', 'show', 'prod', 'flags']);
  const secret = await cli.run(['enroll', 'show', 'prod', 'secret']);
  expect(flags.exitCode, flags.stderr).toBe(0);
  expect(secret.exitCode, secret.stderr).toBe(0);
  writeFileSync(join(dir, 'prod.flags'), flags.stdout);
  writeFileSync(join(dir, 'prod.secret'), secret.stdout);
  agents = execa(
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
      certFile,
      '--count',
      String(AGENTS),
      '--distributed-interval',
      '500ms',
      '--log-interval',
      '500ms',
      '--record-carves',
      carvesDir,
      '--duration',
      '5m',
    ],
    { env: baseEnv(cli.configDir), extendEnv: false, reject: false, all: true, buffer: false },
  );
  agents.all!.on('data', (d: Buffer) => (agentsOut += d.toString()));
  await until(() => /Enrolled \d+\/\d+ agents/.test(agentsOut), 'enrollment');
});

afterAll(async () => {
  agents?.kill('SIGTERM');
  await agents;
  await server?.stop();
  cli?.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

describe('simulated agents against fleetctl server (not --dev)', () => {
  it('enroll over TLS with the flags and secret of enroll show; nodes list --status active lists them', async () => {
    expect(agentsOut).toMatch(new RegExp(`Enrolled ${AGENTS}/${AGENTS} agents`));
    const r = await cli.run(['nodes', 'list', '--status', 'active', '--all', '--json']);
    expect(r.exitCode, r.stderr).toBe(0);
    const nodes = JSON.parse(r.stdout) as { uuid: string; hostname: string; platform: string }[];
    expect(nodes).toHaveLength(AGENTS);
    expect(new Set(nodes.map((n) => n.hostname)).size).toBe(AGENTS);
  });

  it('query run "SELECT * FROM os_version" --target all --wait 30s --json returns one result set per agent', async () => {
    const r = await cli.run(['query', 'run', 'SELECT * FROM os_version', '--target', 'all', '--wait', '30s', '--json']);
    expect(r.exitCode, r.stderr).toBe(0);
    const sets = JSON.parse(r.stdout) as { uuid: string; status: number; rows: Record<string, string>[] }[];
    expect(sets).toHaveLength(AGENTS);
    expect(new Set(sets.map((s) => s.uuid)).size).toBe(AGENTS);
    for (const s of sets) {
      expect(s.status).toBe(0);
      expect(s.rows).toHaveLength(1);
      expect(s.rows[0]).toHaveProperty('platform');
    }
    expect(r.stderr).not.toMatch(/did not answer/);
  });

  it('an unknown table is answered with an error status, as osquery does (exit 9: answered with errors)', async () => {
    const r = await cli.run(['query', 'run', 'SELECT * FROM no_such_table', '--wait', '30s', '-o', 'csv']);
    expect(r.exitCode, r.stderr).toBe(9);
    expect(r.stderr.match(/: error: .*no such table/g)).toHaveLength(AGENTS);
    expect(r.stderr).toContain(`error: ${AGENTS} of ${AGENTS} answered with an error`);
  });

  it("the simulator refuses the generic flags' certificate placeholder with a hint (exit 2)", async () => {
    const r = await cli.run(['dev', 'agents', '--flags', join(dir, 'prod.flags'), '--secret-file', join(dir, 'prod.secret')]);
    expect(readFileSync(join(dir, 'prod.flags'), 'utf8')).toMatch(/--tls_server_certs=__CERT_FILE__/);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/--certs FILE \(fleetctl enroll show ENV cert > FILE\)/);
  });

  it('carves run /etc/hosts --target HOST, then carves download: byte-identical to what the agent sent', async () => {
    const nodes = JSON.parse((await cli.run(['nodes', 'list', '--all', '--json'])).stdout) as { uuid: string; hostname: string }[];
    const host = nodes[0];
    const run = await cli.run(['carves', 'run', '/etc/hosts', '--target', host.hostname, '--wait', '30s']);
    expect(run.exitCode, run.stderr).toBe(0);
    const name = run.stdout.trim();
    expect(name).not.toBe('');
    const file = join(dir, 'hosts.tar');
    const dl = await cli.run(['carves', 'download', name, '-O', file]);
    expect(dl.exitCode, dl.stderr).toBe(0);
    const sent = readdirSync(carvesDir).filter((f) => f.startsWith(`${name}_`));
    expect(sent.map((f) => f.toLowerCase())).toEqual([`${name}_${host.uuid}.tar`.toLowerCase()]);
    expect(readFileSync(file)).toEqual(readFileSync(join(carvesDir, sent[0])));
  });
});

/** Whole JSON lines of a file (a writer may be appending the last one); none when it does not exist yet. */
function jsonLines(file: string): Record<string, unknown>[] {
  if (!existsSync(file)) return [];
  const text = readFileSync(file, 'utf8');
  return text
    .slice(0, text.lastIndexOf('\n') + 1)
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** A free port P whose P+1 is free too (found, then released: the server binds them next). */
async function freePortPair(): Promise<number> {
  for (;;) {
    const a = createNetServer();
    await new Promise<void>((r) => a.listen(0, '127.0.0.1', r));
    const port = (a.address() as { port: number }).port;
    const b = createNetServer();
    const ok = await new Promise<boolean>((r) => {
      b.once('error', () => r(false));
      b.listen(port + 1, '127.0.0.1', () => r(true));
    });
    await new Promise((r) => a.close(r));
    if (ok) await new Promise((r) => b.close(r));
    if (ok && port < 65535) return port;
  }
}

describe('fleetctl server --dev --dev-agents N', () => {
  it('gives the demo fleet live agents: they enroll in prod over the dev agent door, tagged live-agents; the demo sinks deliver without errors', async () => {
    // The demo's file sinks write here (--dev alone puts them in its temporary directory).
    const sinkDir = mkdtempSync(join(tmpdir(), 'fleetctl-dev-sinks-'));
    const dev = await startServerProcess([
      '--dev',
      '--dev-password',
      DEV_PASSWORD,
      '--dev-nodes',
      '30',
      '--dev-agents',
      '2',
      '--sink-dir',
      sinkDir,
    ]);
    const c = new Cli();
    try {
      await until(
        () => /Simulated agents: 2 of 2 enrolled in prod over https:\/\/127\.0\.0\.1:\d+, tagged live-agents/.test(dev.output()),
        'the simulated agents line',
      );
      await c.login(dev.url);
      const expected = [syntheticHost('dev-prod', 0), syntheticHost('dev-prod', 1)];
      await until(async () => {
        const r = await c.run(['nodes', 'show', expected[1].uuid, '--json']);
        return r.exitCode === 0;
      }, 'the second simulated agent in nodes show');
      for (const h of expected) {
        const r = await c.run(['nodes', 'show', h.uuid, '--json']);
        expect(r.exitCode, r.stderr).toBe(0);
        expect(JSON.parse(r.stdout).hostname).toBe(h.hostname);
      }
      const tagged = JSON.parse((await c.run(['nodes', 'list', '--tag', 'live-agents', '--json'])).stdout) as { uuid: string }[];
      expect(new Set(tagged.map((n) => n.uuid.toLowerCase()))).toEqual(new Set(expected.map((h) => h.uuid.toLowerCase())));
      // The demo's sinks work (issue 20: they wrote error rows every minute): the enabled ones are
      // file sinks in the server's sink directory, and they deliver the agents' logs and answers.
      // What each agent always sends, whenever the test looks: the status logs of its enroll (the
      // simulator sends status logs only at enroll, config fetch and a failed carve, so a later
      // one may be minutes away), and its answer to a live query.
      const q = await c.run(['query', 'run', 'SELECT * FROM os_version', '--target', 'tag:live-agents']);
      expect(q.exitCode, q.stderr).toBe(0);
      const uuids = expected.map((h) => h.uuid.toLowerCase());
      const from = (file: string) => new Set(jsonLines(join(sinkDir, file)).map((l) => String(l.node_uuid).toLowerCase()));
      await until(() => uuids.every((u) => from('prod-status.log').has(u)), 'the status logs of both agents in prod-status-file');
      await until(() => uuids.every((u) => from('prod-queries.log').has(u)), 'the answers of both agents in prod-queries-file');
      // What a sink that cannot deliver writes: "log sink NAME dropped N entries: ..." (severity error), once a minute.
      const sinkRows = JSON.parse((await c.run(['audit', 'list', '-q', 'log sink', '--all', '--json'])).stdout) as {
        line: string;
        severity: number;
      }[];
      expect(sinkRows.filter((p) => p.severity > 1 || /dropped|fail/.test(p.line)).map((p) => p.line)).toEqual([]);
      const enabled = JSON.parse((await c.run(['sinks', 'list', 'prod', '-o', 'json'])).stdout) as {
        name: string;
        type: string;
        enabled: boolean;
      }[];
      expect(enabled.filter((s) => s.enabled).every((s) => s.type === 'file')).toBe(true);
    } finally {
      c.cleanup();
      await dev.stop();
      rmSync(sinkDir, { recursive: true, force: true });
    }
  });

  it("--dev puts the agent listener on --listen's port + 1 and says so; a busy one is named in the error", async () => {
    const port = await freePortPair();
    const dev = await startServerProcess(['--dev', '--dev-password', DEV_PASSWORD, '--dev-nodes', '3', '--listen', `127.0.0.1:${port}`]);
    try {
      expect(dev.url).toBe(`http://127.0.0.1:${port}`);
      await until(() => /Agent API/.test(dev.output()), 'the agent listener line');
      expect(dev.output()).toContain(`Agent API (osquery TLS) listening on https://127.0.0.1:${port + 1}`);
    } finally {
      await dev.stop();
    }
    const busy = createNetServer();
    const other = await freePortPair();
    await new Promise<void>((r) => busy.listen(other + 1, '127.0.0.1', r));
    try {
      const r = await execa('node', [BIN, 'server', '--dev', '--dev-nodes', '3', '--listen', `127.0.0.1:${other}`], {
        reject: false,
        stdin: 'ignore',
        timeout: 60_000,
      });
      expect(r.exitCode).toBe(7);
      expect(r.stderr).toContain(
        `address 127.0.0.1:${other + 1} of the agent listener is already in use (--dev's default: --listen's port + 1): choose another with --agent-listen`,
      );
    } finally {
      busy.close();
    }
  });
});
