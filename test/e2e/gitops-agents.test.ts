// Issue 22's done-checks, end to end: a fresh `fleetctl server` (not --dev) with simulated agents
// (`fleetctl dev agents`) enrolled in prod and a file sink for results; `fleetctl apply -f` of a
// YAML file with a schedule and a pack; the agents fetch the new configuration (their recorded
// hash moves to the new one and `nodes list --config-stale` empties), the scheduled queries'
// results land in the file sink with the query name and the node, `diff -f` then exits 0 and
// `apply` again changes nothing; every change is in the audit log with who made it.
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { execa, type ResultPromise } from 'execa';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN, Cli, baseEnv, type ServerProcess } from '../helpers/cli.js';
import { startAgentDoorServer } from '../helpers/agent-door-server.js';

const PASSWORD = 'first-admin-password';
const AGENTS = 3;
/** The scheduled queries' interval: results are due within two of them after the apply. */
const INTERVAL = 10;
let dir: string;
let server: ServerProcess;
let cli: Cli;
let agents: ResultPromise;
let agentsOut = '';
let sinkFile: string;

/** Waits for `check` to give a value (no clock: the test's timeout catches what never comes, and says what it was). */
async function until<T>(check: () => Promise<T | undefined> | T | undefined, what: string): Promise<T> {
  let done = false;
  try {
    onTestFailed(() => void (done || console.error(`was waiting for ${what}; simulator said:\n${agentsOut}`)));
  } catch {
    // in a hook
  }
  for (;;) {
    const v = await check();
    if (v !== undefined) {
      done = true;
      return v;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

const DOC = `# The osquery configuration of prod, as a GitOps repository would keep it.
apiVersion: fleetctl/v1
kind: OsqueryConfig
metadata:
  environment: prod
spec:
  schedule:
    users_query:
      query: SELECT uid, username FROM users
      interval: ${INTERVAL}
  packs:
    web:
      platform: all
      queries:
        uptime:
          query: SELECT total_seconds FROM uptime
          interval: ${INTERVAL}
          snapshot: true
`;

interface NodeView {
  uuid: string;
  config_hash: string;
  config_fetched_at: string;
}
interface SinkLine {
  environment: string;
  node_uuid: string;
  hostname: string;
  log_type: string;
  name?: string;
  received_at: string;
  entry: { name: string; action: string; hostIdentifier: string };
}

const nodes = async () => JSON.parse((await cli.run(['nodes', 'list', '--all', '--json'])).stdout) as NodeView[];
const agentHash = async () => JSON.parse((await cli.run(['env', 'config', 'prod', '--agent', '-o', 'json'])).stdout).hash as string;
const sinkLines = (): SinkLine[] =>
  existsSync(sinkFile)
    ? readFileSync(sinkFile, 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as SinkLine)
    : [];
const configAudit = async () =>
  (
    JSON.parse((await cli.run(['audit', 'list', '--all', '--json'])).stdout) as { line: string; username: string; created_at: string }[]
  ).filter((a) => a.line.startsWith('osquery configuration of prod'));

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'fleetctl-gitops-'));
  sinkFile = join(dir, 'results.jsonl');
  let certFile: string;
  ({ server, cli, certFile } = await startAgentDoorServer(dir, PASSWORD, ['--sink-dir', dir]));
  const sink = await cli.run([
    'sinks',
    'add',
    'prod',
    '--name',
    'results',
    '--type',
    'file',
    '--source',
    'result',
    '--config',
    JSON.stringify({ path: sinkFile }),
  ]);
  expect(sink.exitCode, sink.stderr).toBe(0);
  writeFileSync(join(dir, 'prod.flags'), (await cli.run(['enroll', 'show', 'prod', 'flags'])).stdout);
  writeFileSync(join(dir, 'prod.secret'), (await cli.run(['enroll', 'show', 'prod', 'secret'])).stdout);
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
      '--config-interval',
      '1s',
      '--log-interval',
      '1s',
      '--distributed-interval',
      '5s',
      '--duration',
      '5m',
    ],
    { env: baseEnv(cli.configDir), extendEnv: false, reject: false, all: true, buffer: false },
  );
  agents.all!.on('data', (d: Buffer) => (agentsOut += d.toString()));
  await until(() => (/Enrolled \d+\/\d+ agents/.test(agentsOut) ? true : undefined), 'enrollment');
});

afterAll(async () => {
  agents?.kill('SIGTERM');
  await agents;
  await server?.stop();
  cli?.cleanup();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('apply -f to an environment with agents', () => {
  it('agents fetch the new configuration, results reach the file sink, then diff is clean and apply changes nothing', async () => {
    const file = join(dir, 'prod.yaml');
    writeFileSync(file, DOC);
    // Before: every agent is on the empty configuration, nothing scheduled, no results.
    const before = await agentHash();
    await until(
      async () => ((await nodes()).filter((n) => n.config_hash === before).length === AGENTS ? true : undefined),
      'every agent on the first configuration',
    );
    expect(sinkLines()).toEqual([]);
    const diffBefore = await cli.run(['diff', '-f', file]);
    expect(diffBefore.exitCode, diffBefore.stderr).toBe(1);

    const apply = await cli.run(['apply', '-f', file]);
    expect(apply.exitCode, apply.stderr).toBe(0);
    expect(apply.stdout).toContain('+    users_query:');
    expect(apply.stdout).toMatch(/osqueryconfig\/prod configured \(schedule \+1, packs \+1; hash [0-9a-f]{12} -> [0-9a-f]{12}\)/);
    const after = await agentHash();
    expect(after).not.toBe(before);

    // The agents fetch it at their next refresh: their recorded hash is the new one.
    await until(async () => {
      const stale = await cli.run(['nodes', 'list', '--config-stale', '--json']);
      return stale.exitCode === 0 && JSON.parse(stale.stdout).length === 0 ? true : undefined;
    }, 'no node on an older configuration');
    const current = await nodes();
    expect(current.map((n) => n.config_hash)).toEqual(Array(AGENTS).fill(after));
    const uuids = new Set(current.map((n) => n.uuid));

    // Results of both scheduled queries, from every agent, with the query name and the node.
    const lines = await until(() => {
      const l = sinkLines();
      const from = (name: string) => new Set(l.filter((x) => x.name === name).map((x) => x.node_uuid));
      return from('users_query').size === AGENTS && from('pack_web_uptime').size === AGENTS ? l : undefined;
    }, 'results of users_query and pack_web_uptime from every agent');
    for (const l of lines) {
      expect(l.environment).toBe('prod');
      expect(l.log_type).toBe('result');
      expect(uuids.has(l.node_uuid)).toBe(true);
      expect(l.entry.name).toBe(l.name);
      expect(l.entry.hostIdentifier.toLowerCase()).toBe(l.node_uuid);
    }
    expect(lines.find((l) => l.name === 'users_query')!.entry.action).toBe('added');
    expect(lines.find((l) => l.name === 'pack_web_uptime')!.entry.action).toBe('snapshot');
    // Within two intervals of the change, as the server stored it (its audit row): the agents
    // refresh every second and flush logs every second. Timed from the server's change, not from
    // before the apply command, whose own start-up a loaded machine stretches.
    const applied = Date.parse((await configAudit())[0].created_at);
    const first = Math.min(...lines.map((l) => Date.parse(l.received_at)));
    console.log(`first scheduled result ${((first - applied) / 1000).toFixed(1)} s after apply (interval ${INTERVAL} s)`);
    expect(first - applied).toBeLessThanOrEqual(2 * INTERVAL * 1000);

    // Nothing left to do: diff exits 0, apply again changes nothing.
    const diff = await cli.run(['diff', '-f', file]);
    expect(diff.exitCode, diff.stdout + diff.stderr).toBe(0);
    expect(diff.stdout).toBe('');
    const audits = (await configAudit()).length;
    const again = await cli.run(['apply', '-f', file]);
    expect(again.exitCode, again.stderr).toBe(0);
    expect(again.stdout).toBe('osqueryconfig/prod unchanged\n');
    expect(await agentHash()).toBe(after);
    expect((await configAudit()).length).toBe(audits);

    // The change is in the audit log with who made it.
    const [row] = await configAudit();
    expect(row).toMatchObject({ username: 'admin' });
    expect(row.line).toContain('osquery configuration of prod changed: schedule (+users_query), packs (+web)');
  });
});
