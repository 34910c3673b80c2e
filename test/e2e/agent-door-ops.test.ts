// The agent door run as a service (issue 18), against a real `fleetctl server` process: the
// in-flight bound answers 503 at once and recovers, --log writes a line per agent request,
// /metrics is Prometheus' format behind the admin token (and on --metrics-listen) and carries the
// SQLite checkpoint thread's timings once agents write, a log flood into a sink that stalls keeps
// the server's memory and that sink's backlog bounded while other agents are served, and a
// stalled agent upload cannot hold SIGTERM. Every wait is for an event (an answer, an exit).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { connect, type TLSSocket } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { randomUUID } from 'node:crypto';
import { startServerProcess, type ServerProcess } from '../helpers/cli.js';
import { apiCall, apiToken } from '../helpers/admin-cli.js';
import { agentPost, eventually, hostDetails, parseFlags, type Flags } from '../helpers/osquery-agent.js';
import { selfSigned } from '../../src/server/agent/listener.js';

const PASSWORD = 'agent-ops-password-1';
let dir: string;
let server: ServerProcess;
let token: string;
let flags: Flags;
let secret: string;
let ca: string;
let metricsUrl: string;
let stall: Server;
const held: ServerResponse[] = [];

const post = (ep: string, body: unknown, o: { raw?: Buffer; headers?: Record<string, string> } = {}) =>
  agentPost(flags.hostname, flags.endpoint[ep], body, { ca, ...o });
const api = (method: string, path: string, body?: unknown) => apiCall(server.url, method, path, { token, body });

async function enroll() {
  const uuid = randomUUID();
  const r = await post('enroll', {
    enroll_secret: secret,
    host_identifier: uuid,
    host_details: hostDetails(uuid, `ops-${uuid.slice(0, 8)}`),
  });
  return { uuid, key: r.body.node_key as string };
}

/** An agent upload that sends its headers and part of its body, then stalls; resolves with what the server answered. */
function stalledUpload(path: string): { socket: TLSSocket; answer: Promise<string> } {
  const [host, port] = [flags.hostname.replace(/:\d+$/, ''), Number(/:(\d+)$/.exec(flags.hostname)![1])];
  const socket = connect({ host, port, ca, servername: 'localhost' });
  socket.write(
    `POST ${path} HTTP/1.1\r\nHost: ${flags.hostname}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"node_key":`,
  );
  let text = '';
  socket.on('data', (d: Buffer) => (text += d.toString()));
  socket.on('error', () => undefined);
  const answer = new Promise<string>((resolve) => socket.on('close', () => resolve(text)));
  return { socket, answer };
}

const rssBytes = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'fleetctl-agent-ops-'));
  const { certFile, keyFile } = selfSigned(dir, '127.0.0.1');
  ca = readFileSync(certFile, 'utf8');
  // A log sink that takes the request and never answers: a sink that stalls.
  stall = createServer((req, res) => {
    req.resume();
    held.push(res);
  });
  await new Promise<void>((r) => stall.listen(0, '127.0.0.1', r));
  server = await startServerProcess(
    [
      '--db',
      join(dir, 'fleet.db'),
      '--create-env',
      'prod',
      '--agent-listen',
      '127.0.0.1:0',
      '--agent-tls-cert',
      certFile,
      '--agent-tls-key',
      keyFile,
      // One process: the in-flight bound is per server process (two stalled uploads must meet in one).
      '--sink-dir',
      dir,
      '--log',
      '--metrics-listen',
      '127.0.0.1:0',
      '--agent-max-in-flight',
      '2',
      '--shutdown-grace',
      '1',
      '--workers',
      '1',
      '--sink-backlog-size',
      '40M',
    ],
    // As deploy/systemd/fleetctl.service and the README run it: without MALLOC_ARENA_MAX glibc keeps
    // an arena per thread (decoder, writer, checkpoints), and what those threads freed counts in
    // RSS until the arena is trimmed (544 MiB once in CI, 420-450 usually).
    { env: { FLEETCTL_ADMIN_PASSWORD: PASSWORD, MALLOC_ARENA_MAX: '2' } },
  );
  metricsUrl = await eventually(async () => /Prometheus metrics at (http:\/\/[^\s"]+)/.exec(server.output())?.[1], 'the metrics address');
  token = await apiToken(server.url, 'admin', PASSWORD);
  flags = parseFlags((await api('GET', '/api/v1/environments/prod/enroll/flags')).body.data);
  secret = (await api('GET', '/api/v1/environments/prod/enroll/secret')).body.data;
});

afterAll(async () => {
  for (const r of held) r.destroy();
  stall?.close();
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('the agent door as a service', () => {
  it('beyond the in-flight bound an agent is answered 503 at once (never node_invalid), and served again when the load falls', async () => {
    const n = await enroll();
    const a = stalledUpload(flags.endpoint.config);
    const b = stalledUpload(flags.endpoint.config);
    const shed = await eventually(async () => {
      const r = await post('config', { node_key: n.key });
      return r.status === 503 ? r : undefined;
    }, 'a request beyond the bound to be shed');
    expect(shed.body.code).toBe('unavailable');
    expect(shed.body.node_invalid).toBeUndefined();
    a.socket.destroy();
    b.socket.destroy();
    const back = await eventually(async () => {
      const r = await post('config', { node_key: n.key });
      return r.status === 200 ? r : undefined;
    }, 'the door to serve again');
    expect(back.body.node_invalid).toBe(false);
    const metrics = await (await fetch(metricsUrl)).text();
    expect(metrics).toMatch(/fleetctl_http_shed_total\{door="agent"\} [1-9]/);
  });

  it('--log writes one JSON line per agent request (endpoint, status, ms, node), never the secret paths', async () => {
    const n = await enroll();
    expect((await post('config', { node_key: n.key })).status).toBe(200);
    const line = await eventually(
      async () =>
        server
          .output()
          .split('\n')
          .find((l) => l.includes('"door":"agent"') && l.includes(n.uuid) && l.includes('"endpoint":"config"')),
      'the request line',
    );
    expect(JSON.parse(line)).toMatchObject({ door: 'agent', endpoint: 'config', status: 200, node: n.uuid });
    expect(server.output()).not.toContain(flags.endpoint.config);
  });

  it('/metrics: Prometheus text behind the admin token (api/service_metrics on), and on --metrics-listen', async () => {
    expect((await api('PATCH', '/api/v1/settings/api/service_metrics', { boolean: true })).status).toBe(200);
    expect((await fetch(`${server.url}/metrics`)).status).toBe(401);
    const res = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await res.text();
    for (const name of [
      'fleetctl_http_requests_total',
      'fleetctl_http_request_duration_seconds_bucket',
      'fleetctl_agent_in_flight',
      'fleetctl_http_shed_total',
      'fleetctl_sink_backlog_bytes',
      'fleetctl_sink_delivered_total',
      'fleetctl_log_dropped_total',
      'fleetctl_agent_node_invalid_total',
      'fleetctl_faults_total',
      'fleetctl_process_resident_memory_bytes',
    ]) {
      expect(text, name).toContain(`# TYPE ${name.replace(/_bucket$/, '')} `);
    }
    expect(text).toMatch(/fleetctl_http_requests_total\{door="agent",endpoint="config",status="200"\} [1-9]/);
    expect(await (await fetch(metricsUrl)).text()).toContain('fleetctl_http_requests_total');
  });

  it('/metrics: the SQLite checkpoint thread times its checkpoints while agents write (fleetctl_sqlite_checkpoint_seconds, a histogram by mode)', async () => {
    const name = 'fleetctl_sqlite_checkpoint_seconds';
    const scrape = async () => (await fetch(metricsUrl)).text();
    const passiveCount = (m: string) => Number(/^fleetctl_sqlite_checkpoint_seconds_count\{mode="passive"\} (\d+)$/m.exec(m)?.[1] ?? 0);
    // The thread posts its timings only when the log changed since its last tick: what this test
    // writes must show as checkpoints counted after it began.
    const before = passiveCount(await scrape());
    const n = await enroll();
    // One write a poll (a log batch, committed to the spool before it is answered), of 1 to 10
    // rows: the log's frame count changes from one tick (every second) to the next. The thread
    // ticks every second; a deadline far past that ends the writes and fails the test, rather than
    // writing on into the tests after this one until the test's timeout.
    const deadline = Date.now() + 90_000;
    let round = 0;
    const text = await eventually(async () => {
      round++;
      const data = Array.from({ length: 1 + (round % 10) }, (_, i) => ({
        name: 'pack_checkpoint',
        columns: { round: String(round), i: String(i) },
      }));
      expect((await post('log', { node_key: n.key, log_type: 'result', data })).status).toBe(200);
      const m = await scrape();
      if (passiveCount(m) > before) return m;
      if (Date.now() > deadline) {
        const lines = m.split('\n').filter((l) => l.includes(name));
        throw new Error(
          `no ${name}{mode="passive"} counted in 90 s of agent writes (${round} log batches); the scrape's lines of it:\n${lines.join('\n')}`,
        );
      }
      return undefined;
    }, `${name}{mode="passive"} to count a checkpoint after the agent's writes`);

    // As metrics.ts declares it: a histogram labelled by mode, prom-client's text format.
    expect(text).toMatch(new RegExp(`^# HELP ${name} \\S`, 'm'));
    expect(text).toMatch(new RegExp(`^# TYPE ${name} histogram$`, 'm'));
    const samples = text.split('\n').filter((l) => l.startsWith(`${name}_`) || l.startsWith(`${name}{`));
    const series = new Map<string, { buckets: [string, number][]; sum?: number; count?: number }>();
    for (const line of samples) {
      const m = /^fleetctl_sqlite_checkpoint_seconds_(bucket|sum|count)\{(?:le="([^"]+)",)?mode="([^"]+)"\} (\S+)$/.exec(line);
      expect(m, line).not.toBeNull();
      const [, kind, le, mode, value] = m!;
      const s = series.get(mode) ?? { buckets: [] };
      series.set(mode, s);
      if (kind === 'bucket') {
        expect(le, line).toBeDefined();
        s.buckets.push([le, Number(value)]);
      } else {
        expect(le, line).toBeUndefined();
        s[kind as 'sum' | 'count'] = Number(value);
      }
    }
    // Only the modes the code documents (docs/api.md, "Metrics": passive, restart, truncate), passive among them.
    const modes = [...series.keys()];
    expect(modes).toContain('passive');
    for (const mode of modes) expect(['passive', 'restart', 'truncate'], `mode="${mode}"`).toContain(mode);
    for (const [mode, s] of series) {
      // Bounds rising to +Inf, counts cumulative, +Inf equal to _count, a _sum of seconds.
      const bounds = s.buckets.map(([le]) => le);
      expect(bounds.at(-1), mode).toBe('+Inf');
      const finite = bounds.slice(0, -1).map(Number);
      expect(finite.length, mode).toBeGreaterThan(0);
      for (let i = 0; i < finite.length; i++) {
        expect(Number.isFinite(finite[i]), `${mode} le=${bounds[i]}`).toBe(true);
        if (i > 0) expect(finite[i], `${mode} le=${bounds[i]}`).toBeGreaterThan(finite[i - 1]);
      }
      const counts = s.buckets.map(([, c]) => c);
      for (let i = 1; i < counts.length; i++) expect(counts[i], `${mode} le=${bounds[i]}`).toBeGreaterThanOrEqual(counts[i - 1]);
      expect(s.count, mode).toBeGreaterThan(0);
      expect(counts.at(-1), mode).toBe(s.count);
      expect(s.sum, mode).toBeGreaterThanOrEqual(0);
      expect(Number.isFinite(s.sum), mode).toBe(true);
    }
    expect(series.get('passive')!.count).toBe(passiveCount(text));
  });

  it("a log flood into a sink that stalls: batches are spooled one big body at a time, memory stays bounded, the sink's backlog stays within its bound, other agents are served", async () => {
    const sink = await api('POST', '/api/v1/log-sinks', {
      name: 'stalls',
      type: 'http',
      source: 'result',
      environment_id: 0,
      config: { url: `http://127.0.0.1:${(stall.address() as { port: number }).port}/` },
    });
    expect(sink.status).toBe(200);
    const flooder = await enroll();
    const other = await enroll();
    // 16 MB of log lines in a ~16 KB gzip body: 2 in a row, then 4 at once (one big body is
    // decoded at a time: the others are answered 503 and osquery resends them).
    const entry = { name: 'pack_flood', columns: { blob: 'x'.repeat(100_000) } };
    const body = gzipSync(JSON.stringify({ node_key: flooder.key, log_type: 'result', data: Array.from({ length: 160 }, () => entry) }));
    expect(body.length).toBeLessThan(64 * 1024);
    const send = async () => (await post('log', undefined, { raw: body, headers: { 'content-encoding': 'gzip' } })).status;
    const statuses = [await send(), await send()];
    statuses.push(...(await Promise.all(Array.from({ length: 4 }, send))));
    expect(statuses.slice(0, 2)).toEqual([200, 200]);
    expect(statuses.every((s) => s === 200 || s === 503)).toBe(true);
    // Another agent's small batch and check-in are served meanwhile.
    const mine = await post('log', { node_key: other.key, log_type: 'result', data: [{ name: 'pack_small', columns: { a: '1' } }] });
    expect(mine.status).toBe(200);
    expect((await post('config', { node_key: other.key })).status).toBe(200);
    // The goal of issue 18 (README, "The agent door under faults"): under 512 MiB. The spooled
    // lines pass through SQLite's page cache (up to 64 MiB per connection) on their way to disk.
    expect(rssBytes(server.proc.pid!)).toBeLessThan(512 * 1024 * 1024);
    // The sink that stalls keeps at most --sink-backlog-size: its oldest entries were dropped, counted.
    const metrics = await eventually(async () => {
      const m = await (await fetch(metricsUrl)).text();
      const dropped = Number(/fleetctl_log_dropped_total\{sink="stalls",reason="backlog_bytes"\} (\d+)/.exec(m)?.[1] ?? 0);
      const backlog = Number(/fleetctl_sink_backlog_bytes\{sink="stalls",environment="global"\} (\d+)/.exec(m)?.[1] ?? 0);
      return dropped > 0 && backlog > 0 && backlog <= 40 * 1024 * 1024 ? m : undefined;
    }, "the stalled sink's backlog held to its bound");
    expect(metrics).toContain('fleetctl_sink_backlog_entries{sink="stalls",environment="global"}');
    expect((await api('DELETE', `/api/v1/log-sinks/${sink.body.id}`)).status).toBe(200);
  });

  it('SIGTERM with an agent upload stalled mid-body: the upload is answered 503 and the server exits', async () => {
    const s = stalledUpload(flags.endpoint.log);
    await eventually(async () => {
      const m = await (await fetch(metricsUrl)).text();
      return /fleetctl_agent_in_flight [1-9]/.test(m) ? true : undefined;
    }, 'the stalled upload to be in flight');
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    server.proc.kill('SIGTERM');
    // From the first moment of the drain the load balancer hears "not me" (never 200 again).
    await eventually(async () => (/Shutting down/.test(server.output()) ? true : undefined), 'the drain to start');
    const during = await fetch(`${server.url}/healthz`).then(
      (r) => r.status,
      () => 'refused',
    );
    expect(during).not.toBe(200);
    const answer = await s.answer;
    expect(answer).toMatch(/^HTTP\/1\.1 503/);
    const r = await server.proc;
    expect(r.exitCode).toBe(0);
  });
});
