// A real PostgreSQL outage under live agents (issue 18): a private throwaway cluster (not the
// run's shared one) is stopped and started for real while a `fleetctl server` process serves
// simulated osquery agents that send status logs to a file sink. Afterwards every agent still
// holds the key it enrolled with (a server fault is a 5xx, never node_invalid), every log line
// the server acknowledged is in the sink file, and the server never went down. Event-driven: each
// phase waits for what it needs (agents' failures, their recovery), never for a wall-clock time.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startCluster } from '../../scripts/pg-cluster.mjs';
import { startServerProcess, type ServerProcess } from '../helpers/cli.js';
import { apiCall, apiToken } from '../helpers/admin-cli.js';
import { eventually } from '../helpers/osquery-agent.js';
import { selfSigned } from '../../src/server/agent/listener.js';
import { Simulator, parseAgentFlags } from '../../src/agent-sim/index.js';

const AGENTS = 24;
const PASSWORD = 'faults-pg-password-1';

describe('PostgreSQL stopped and started under agents with a file sink', () => {
  let cluster: Awaited<ReturnType<typeof startCluster>>;
  let dir: string;
  let server: ServerProcess;
  let sim: Simulator;
  let sinkFile: string;
  let exited = false;

  beforeAll(async () => {
    cluster = await startCluster({ maxConnections: 50 });
    const url = await cluster.createDatabase('faults');
    dir = mkdtempSync(join(tmpdir(), 'fleetctl-faults-pg-'));
    const { certFile, keyFile } = selfSigned(dir, '127.0.0.1');
    server = await startServerProcess(
      [
        '--db',
        url,
        '--db-pool',
        '4',
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
        '--shutdown-grace',
        '1',
      ],
      { env: { FLEETCTL_ADMIN_PASSWORD: PASSWORD } },
    );
    void server.proc.then(() => (exited = true));
    sinkFile = join(dir, 'status.jsonl');
  });

  afterAll(async () => {
    await sim?.stop(1000);
    await server?.stop();
    cluster?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('no agent re-enrolls, no acknowledged log line is lost, the server stays up', async () => {
    const token = await apiToken(server.url, 'admin', PASSWORD);
    const api = (method: string, path: string, body?: unknown) => apiCall(server.url, method, path, { token, body });
    const sink = await api('POST', '/api/v1/log-sinks', {
      name: 'status-file',
      type: 'file',
      source: 'status',
      environment_id: 0,
      config: { path: 'status.jsonl' },
    });
    expect(sink.status).toBe(200);
    const flags = parseAgentFlags((await api('GET', '/api/v1/environments/prod/enroll/flags')).body.data);
    const secret = String((await api('GET', '/api/v1/environments/prod/enroll/secret')).body.data).trim();

    // What the server acknowledged, as a multiset of entries (identical status lines repeat).
    const acked = new Map<string, number>();
    let ackedSince = new Set<string>();
    sim = new Simulator({
      flags,
      secret,
      seed: 'faults-pg',
      ca: readFileSync(join(dir, 'agent-cert.pem')),
      intervals: { config: 400, log: 200, distributed: 300 },
      connections: 6,
      maxInFlight: 32,
      timeoutMs: 15_000,
      onLogs: (uuid, _type, data) => {
        ackedSince.add(uuid);
        for (const e of data) {
          const k = JSON.stringify(e);
          acked.set(k, (acked.get(k) ?? 0) + 1);
        }
      },
    });
    sim.add(AGENTS);
    await eventually(
      async () => (sim.enrolled === AGENTS && ackedSince.size === AGENTS ? true : undefined),
      'every agent enrolled and sent logs',
    );
    const keys = sim.agents.map((a) => a.nodeKey);

    // The outage: wait until every kind of check-in has been refused while the database is down.
    const before = sim.stats.summary().checkin?.errors ?? 0;
    cluster.pause();
    // (Or the first sign of the old failure: an agent told to re-enroll, the server gone.)
    const reenrolled = () => (sim.stats.summary().enroll?.requests ?? 0) > AGENTS;
    await eventually(
      async () => ((sim.stats.summary().checkin?.errors ?? 0) - before >= AGENTS || reenrolled() || exited ? true : undefined),
      'agents to meet the outage',
    );
    expect(exited).toBe(false);
    const health = await fetch(`${server.url}/healthz`);
    // The admin door says so too: 503 unavailable (clients retry), not 500.
    const admin = await api('GET', '/api/v1/nodes/prod?q=outage');
    cluster.resume();
    expect(admin.status).toBe(503);
    expect(admin.body.code).toBe('unavailable');
    expect(reenrolled()).toBe(false);
    expect(health.status).toBe(503);

    // Recovery without a restart: every agent's logs are acknowledged again.
    ackedSince = new Set();
    await eventually(async () => (ackedSince.size === AGENTS ? true : undefined), 'every agent acknowledged again after the restart');
    await sim.stop(5000);

    expect(exited).toBe(false);
    expect(sim.stats.summary().enroll?.requests).toBe(AGENTS); // nobody enrolled twice
    expect(sim.agents.map((a) => a.nodeKey)).toEqual(keys);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);

    // Every acknowledged entry reaches the file (delivery is asynchronous: wait for the count).
    const missing = () => {
      if (!existsSync(sinkFile)) return acked.size;
      const text = readFileSync(sinkFile, 'utf8');
      const have = new Map<string, number>();
      for (const line of text.slice(0, text.lastIndexOf('\n') + 1).split('\n')) {
        if (!line) continue;
        const k = JSON.stringify(JSON.parse(line).entry);
        have.set(k, (have.get(k) ?? 0) + 1);
      }
      let n = 0;
      for (const [k, c] of acked) if ((have.get(k) ?? 0) < c) n += c - (have.get(k) ?? 0);
      return n;
    };
    await eventually(async () => (missing() === 0 ? true : undefined), 'every acknowledged log line in the sink file');
    expect(missing()).toBe(0);
    // The outage was logged as database trouble, not as a crash.
    expect(server.output()).toMatch(/failed \(database unavailable\)/);
    expect(server.output()).not.toMatch(/unhandled|uncaught|BUG/i);
  }, 240_000);
});
