// Replicas share the log spool (issue 28): two `fleetctl server` processes on one database (a
// PostgreSQL database in the postgres project, one SQLite file otherwise), agents posting to
// both; a sink is delivered by one process at a time (its lease), and each entry reaches it once
// across the replicas. When the process delivering it stops (SIGTERM) or dies (kill -9), the
// other takes the sink over and still delivers each entry once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { startServerProcess, type ServerProcess } from '../helpers/cli.js';
import { apiCall, apiToken } from '../helpers/admin-cli.js';
import { agentPost, eventually, hostDetails, parseFlags } from '../helpers/osquery-agent.js';
import { onPostgres, testDatabaseUrl } from '../helpers/test-db.js';
import { selfSigned } from '../../src/server/agent/listener.js';

const PASSWORD = 'spool-replicas-password-1';
let dir: string;
let args: string[];
let servers: ServerProcess[] = [];
let ca: string;
let token: string;
let collector: Server;
/** Entry number -> how many times the collector got it. */
const got = new Map<string, number>();

const agentAddress = (s: ServerProcess) => /Agent API \(osquery TLS\) listening on https:\/\/(\S+);/.exec(s.output())![1];
const api = (s: ServerProcess, method: string, path: string, body?: unknown) => apiCall(s.url, method, path, { token, body });
async function start(): Promise<ServerProcess> {
  const s = await startServerProcess(args, { env: { FLEETCTL_ADMIN_PASSWORD: PASSWORD } });
  await eventually(async () => (/Agent API \(osquery TLS\) listening on/.test(s.output()) ? true : undefined), 'the agent listener');
  return s;
}

/** An agent enrolled through one replica, posting through whichever it is given. */
async function agent(s: ServerProcess) {
  const flags = parseFlags((await api(s, 'GET', '/api/v1/environments/prod/enroll/flags')).body.data);
  const secret = (await api(s, 'GET', '/api/v1/environments/prod/enroll/secret')).body.data;
  const uuid = randomUUID();
  const r = await agentPost(
    agentAddress(s),
    flags.endpoint.enroll,
    { enroll_secret: secret, host_identifier: uuid, host_details: hostDetails(uuid, `rep-${uuid.slice(0, 8)}`) },
    { ca },
  );
  expect(r.body.node_invalid).toBe(false);
  const key = r.body.node_key as string;
  return (via: ServerProcess, from: number, n: number) =>
    agentPost(
      agentAddress(via),
      flags.endpoint.log,
      { node_key: key, log_type: 'result', data: Array.from({ length: n }, (_, i) => ({ name: 'q', columns: { i: String(from + i) } })) },
      { ca },
    );
}

/** Which replica holds the sink's lease now (its lease name, host:pid:random, carries its pid). */
async function holder(sinkId: number): Promise<ServerProcess | undefined> {
  const s = (await api(servers[0], 'GET', '/api/v1/log-sinks')).body.find((x: any) => x.id === sinkId);
  const pid = Number(String(s?.state.delivered_by ?? '').split(':')[1]);
  return servers.find((srv) => srv.proc.pid === pid);
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'fleetctl-spool-replicas-'));
  const { certFile, keyFile } = selfSigned(dir, '127.0.0.1');
  ca = readFileSync(certFile, 'utf8');
  const database = onPostgres ? (await testDatabaseUrl())! : join(dir, 'fleet.db');
  args = [
    '--db',
    database,
    '--create-env',
    'prod',
    '--agent-listen',
    '127.0.0.1:0',
    '--agent-tls-cert',
    certFile,
    '--agent-tls-key',
    keyFile,
    '--sink-dir',
    dir,
  ];
  if (onPostgres) servers = await Promise.all([start(), start()]);
  else servers = [await start(), await start()];
  token = await apiToken(servers[0].url, 'admin', PASSWORD);
  collector = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      for (const e of JSON.parse(body)) got.set(e.entry.columns.i, (got.get(e.entry.columns.i) ?? 0) + 1);
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((r) => collector.listen(0, '127.0.0.1', r));
}, 300_000);

afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  collector?.close();
  rmSync(dir, { recursive: true, force: true });
});

const counts = () => ({ distinct: got.size, duplicates: [...got.values()].filter((n) => n > 1).length });

describe('two replicas, one spool', () => {
  it('each entry reaches the sink once, whichever replica the agent posted to; the sink follows the replica that stays', async () => {
    const url = `http://127.0.0.1:${(collector.address() as { port: number }).port}/in`;
    const sink = await api(servers[0], 'POST', '/api/v1/log-sinks', {
      name: 'collected',
      type: 'http',
      source: 'result',
      environment_id: 0,
      config: { url },
    });
    expect(sink.status).toBe(200);
    const posters = await Promise.all([agent(servers[0]), agent(servers[1]), agent(servers[0])]);
    // 3 agents x 10 batches of 50, each batch to either replica, all at once.
    const sends = posters.flatMap((post, a) => Array.from({ length: 10 }, (_, b) => post(servers[(a + b) % 2], a * 10_000 + b * 50, 50)));
    const statuses = await Promise.all(sends);
    expect(statuses.every((r) => r.status === 200)).toBe(true);
    await eventually(async () => (got.size >= 1500 ? true : undefined), 'the 1,500 entries at the sink');
    expect(counts()).toEqual({ distinct: 1500, duplicates: 0 });

    // The replica delivering the sink stops (SIGTERM): the other takes it over.
    const first = await eventually(() => holder(sink.body.id), 'a replica to deliver the sink');
    await first.stop();
    servers = servers.filter((s) => s !== first);
    const post = await agent(servers[0]);
    expect((await post(servers[0], 50_000, 100)).status).toBe(200);
    await eventually(async () => (got.size >= 1600 ? true : undefined), 'the next 100 through the other replica');
    expect(counts()).toEqual({ distinct: 1600, duplicates: 0 });

    // A new replica beside it, then the one delivering dies (kill -9): nothing acknowledged is lost.
    servers.push(await start());
    const second = servers[0];
    expect((await post(servers[1], 60_000, 100)).status).toBe(200);
    second.proc.kill('SIGKILL');
    await second.proc;
    servers = servers.slice(1);
    expect((await post(servers[0], 70_000, 100)).status).toBe(200);
    await eventually(async () => (got.size >= 1800 ? true : undefined), 'every entry after the kill');
    // A kill between the destination's answer and the cursor's commit may resend one batch: never lose.
    expect(got.size).toBe(1800);
    for (const i of ['60000', '60099', '70000', '70099']) expect(got.has(i), i).toBe(true);
  }, 300_000);
});
