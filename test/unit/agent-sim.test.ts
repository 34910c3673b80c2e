// The agent simulator against a minimal osquery TLS server written here (so the protocol the
// simulator speaks is checked on its own, independent of fleetctl server): enroll with
// host_details, gzip logs, distributed read/write with osquery's error status for unknown
// tables, carve upload reassembled byte for byte, and re-enrollment on node_invalid.
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { Simulator, parseAgentFlags, answer, syntheticHost } from '../../src/agent-sim/index.js';

let dir: string;
let server: Server;
let port: number;
let cert: string;
const seen: { path: string; body: any; gzip: boolean }[] = [];
const queue: Record<string, string> = {};
const blocks = new Map<string, Buffer[]>();
let invalidateOnce = false;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'fleetctl-sim-'));
  const key = join(dir, 'key.pem');
  const certFile = join(dir, 'cert.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      key,
      '-out',
      certFile,
      '-days',
      '2',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  cert = readFileSync(certFile, 'utf8');
  server = createServer({ key: readFileSync(key), cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const gzip = req.headers['content-encoding'] === 'gzip';
      const raw = Buffer.concat(chunks);
      const body = JSON.parse((gzip ? gunzipSync(raw) : raw).toString());
      const path = req.url ?? '';
      seen.push({ path, body, gzip });
      let out: unknown = {};
      if (path.endsWith('/enroll')) out = { node_key: `key-${body.host_identifier}` };
      else if (invalidateOnce && path.endsWith('/config')) {
        invalidateOnce = false;
        out = { node_invalid: true };
      } else if (path.endsWith('/config')) out = { schedule: { uptime: { query: 'SELECT * FROM uptime', interval: 10 } } };
      else if (path.endsWith('/read')) {
        out = { queries: { ...queue } };
        for (const k of Object.keys(queue)) delete queue[k];
      } else if (path.endsWith('/init')) out = { session_id: 'sess-1', success: true };
      else if (path.endsWith('/block')) {
        const list = blocks.get(body.session_id) ?? [];
        list[body.block_id] = Buffer.from(body.data, 'base64');
        blocks.set(body.session_id, list);
        out = { success: true };
      }
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(out));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as { port: number }).port;
});

afterAll(() => {
  server.close();
  rmSync(dir, { recursive: true, force: true });
});

const flagsText = () =>
  [
    '--host_identifier=uuid',
    '--enroll_tls_endpoint=/env-1/enroll',
    '--config_plugin=tls',
    '--config_tls_endpoint=/env-1/config',
    '--logger_plugin=tls',
    '--logger_tls_compress=true',
    '--logger_tls_endpoint=/env-1/log',
    '--logger_tls_period=4',
    '--disable_distributed=false',
    '--distributed_plugin=tls',
    '--distributed_interval=60',
    '--distributed_tls_read_endpoint=/env-1/read',
    '--distributed_tls_write_endpoint=/env-1/write',
    '--disable_carver=false',
    '--carver_start_endpoint=/env-1/init',
    '--carver_continue_endpoint=/env-1/block',
    '--carver_block_size=300',
    `--tls_hostname=127.0.0.1:${port}`,
  ].join('\n');

/** Waits for the event (no clock: the test's timeout catches what never comes, and says what it was). */
async function until(ok: () => boolean, what: string): Promise<void> {
  let done = false;
  onTestFailed(() => void (done || console.error(`was waiting for ${what}`)));
  while (!ok()) await new Promise((r) => setTimeout(r, 50));
  done = true;
}

describe('agent simulator', () => {
  it('reads the flags osquery reads', () => {
    const f = parseAgentFlags(flagsText());
    expect(f).toMatchObject({
      host: '127.0.0.1',
      port,
      enroll: '/env-1/enroll',
      loggerCompress: true,
      distributedInterval: 60,
      carverBlockSize: 300,
    });
    expect(() => parseAgentFlags('--enroll_tls_endpoint=/x')).toThrow(/tls_hostname/);
  });

  it('answers known tables with rows, unknown ones with an error, and recognises carves', () => {
    const h = syntheticHost('t', 3);
    expect(answer('SELECT * FROM os_version;', h)).toMatchObject({ kind: 'rows', rows: [{ platform: h.platform }] });
    expect(answer('select name, pid from processes', h)).toMatchObject({ kind: 'rows' });
    // listening_ports (issue 29: the query run examples ask for it): ports of the host's own processes
    const rowsOf = (sql: string) => {
      const a = answer(sql, h);
      if (a.kind !== 'rows') throw new Error(`${sql}: ${a.kind}`);
      return a.rows;
    };
    const pids = new Set(rowsOf('SELECT pid FROM processes').map((r) => r.pid));
    const ports = rowsOf('SELECT pid, port FROM listening_ports');
    expect(ports.length).toBeGreaterThan(0);
    for (const r of ports) {
      expect(pids.has(r.pid)).toBe(true);
      expect(Number(r.port)).toBeGreaterThan(0);
    }
    expect(answer('SELECT * FROM no_such_thing', h)).toEqual({ kind: 'error', message: 'no such table: no_such_thing' });
    expect(answer("SELECT * FROM carves WHERE carve=1 AND path = '/etc/it''s';", h)).toEqual({ kind: 'carve', path: "/etc/it's" });
    expect(syntheticHost('t', 3).uuid).toBe(h.uuid);
    expect(syntheticHost('t', 4).uuid).not.toBe(h.uuid);
    // As osquery 5.23 on a virtual machine (recorded, test/fixtures/osquery/enroll.json): no
    // platform_info (osquery cannot read its SMBIOS) and no hardware serial or vendor columns;
    // optional fields a client must do without (what issue 19 found fleetctl choking on on osctrl).
    const fleet = Array.from({ length: 40 }, (_, i) => syntheticHost('t', i));
    const vms = fleet.filter((x) => x.platformInfo === undefined);
    expect(vms.length).toBeGreaterThan(0);
    expect(vms.length).toBeLessThan(fleet.length);
    for (const x of vms) expect(Object.keys(x.systemInfo)).not.toContain('hardware_serial');
    for (const x of fleet.filter((y) => y.platformInfo))
      expect(Object.keys(x.platformInfo!).sort()).toEqual([
        'address',
        'date',
        'extra',
        'revision',
        'size',
        'vendor',
        'version',
        'volume_size',
      ]);
  });

  it('enrolls, checks in, answers queries and uploads a carve byte for byte; re-enrolls on node_invalid', async () => {
    const record = join(dir, 'carves');
    const sim = new Simulator({
      flags: parseAgentFlags(flagsText()),
      secret: 's3cret',
      seed: 'unit',
      ca: cert,
      intervals: { distributed: 200, log: 200, config: 60_000 },
      recordDir: record,
    });
    invalidateOnce = false;
    sim.add(3);
    try {
      await until(() => sim.enrolled === 3, 'three enrollments');
      const enrolls = seen.filter((s) => s.path === '/env-1/enroll');
      expect(new Set(enrolls.map((e) => e.body.host_identifier)).size).toBe(3);
      expect(enrolls[0].body).toMatchObject({
        enroll_secret: 's3cret',
        host_details: { os_version: {}, system_info: {}, osquery_info: {} },
      });
      await until(() => seen.some((s) => s.path === '/env-1/log'), 'a log request');
      const log = seen.find((s) => s.path === '/env-1/log')!;
      expect(log.gzip).toBe(true);
      expect(log.body.log_type).toBe('status');

      queue.q1 = 'SELECT * FROM os_version';
      queue.q2 = 'SELECT * FROM nope';
      queue.c1 = "SELECT * FROM carves WHERE carve=1 AND path = '/etc/hosts';";
      // The recorded archive appears before writeFile finishes, and the last block may still be on
      // its way: wait until both sides hold the whole archive, then compare bytes.
      const recorded = () => {
        const f = readdirSafe(record)[0];
        return f ? readFileSync(join(record, f)) : Buffer.alloc(0);
      };
      const received = () => Buffer.concat(blocks.get('sess-1') ?? []);
      await until(
        () => seen.some((s) => s.path === '/env-1/write') && recorded().length > 300 && received().length === recorded().length,
        'answers and a whole carve',
      );
      const w = seen.find((s) => s.path === '/env-1/write')!.body;
      expect(w.statuses).toEqual({ q1: 0, q2: 1, c1: 0 });
      expect(w.messages.q2).toBe('no such table: nope');
      expect(w.queries.q1[0]).toHaveProperty('version');
      // As osquery 4.7+: a fresh carve_guid and random request_id in the row, and the carver start
      // carries those two, not the query's name (issue 26).
      const row = w.queries.c1[0];
      expect(row).toMatchObject({
        carve: '1',
        path: '/etc/hosts',
        status: 'SCHEDULED',
        carve_guid: expect.stringMatching(/^[0-9a-f-]{36}$/),
        request_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      });
      expect(row.request_id).not.toBe('c1');
      const start = seen.find((s) => s.path === '/env-1/init')!.body;
      expect(start).toMatchObject({ carve_id: row.carve_guid, request_id: row.request_id });
      const sent = recorded();
      expect(received()).toEqual(sent);
      expect(sent.length).toBeGreaterThan(300); // several blocks

      const before = seen.filter((s) => s.path === '/env-1/enroll').length;
      invalidateOnce = true;
      await until(() => seen.filter((s) => s.path === '/env-1/config').length >= 3, 'configs');
      sim.agents[0].nodeKey = 'stale';
      await (sim as unknown as { run(i: object): Promise<void> }).run({ at: 0, agent: 0, task: 'config' });
      await until(() => seen.filter((s) => s.path === '/env-1/enroll').length > before, 're-enrollment');
    } finally {
      await sim.stop();
    }
  });
});

function readdirSafe(d: string): string[] {
  try {
    return readdirSync(d);
  } catch {
    return [];
  }
}
