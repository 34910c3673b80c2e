// The agent door end to end: a real `fleetctl server` (not --dev) with --create-env prod and an
// agent listener, spoken to over TLS with osquery's protocol, read back through the admin API.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, existsSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { randomBytes, randomUUID } from 'node:crypto';
import { execa } from 'execa';
import { BIN, Cli, baseEnv, startServerProcess, type ServerProcess } from '../helpers/cli.js';
import { apiCall, apiToken } from '../helpers/admin-cli.js';
import { agentPost, eventually, hostDetails, parseFlags, type Flags } from '../helpers/osquery-agent.js';
import { selfSigned } from '../../src/server/agent/listener.js';
import { SinkTypes } from '../../src/api/constants.js';
import { deliveredTypes } from '../../src/server/services/delivery/destinations/index.js';

/** A sink type of the API this server has no module for yet (none once every type delivers). */
const undeliverable = SinkTypes.find((t) => !deliveredTypes().includes(t));

const PASSWORD = 'agents-test-password-1';
let dir: string;
let server: ServerProcess;
let token: string;
let flags: Flags;
let secret: string;
let ca: string;
let sinkFile: string;
let serverArgs: string[];

const post = (ep: string, body: unknown, o: { gzip?: boolean; raw?: Buffer; headers?: Record<string, string> } = {}) =>
  agentPost(flags.hostname, flags.endpoint[ep], body, { ca, ...o });
const api = (method: string, path: string, body?: unknown) => apiCall(server.url, method, path, { token, body });

async function enroll(uuid = randomUUID(), hostname = `host-${uuid.slice(0, 8)}`) {
  const r = await post('enroll', { enroll_secret: secret, host_identifier: uuid, host_details: hostDetails(uuid, hostname) });
  expect(r.body.node_invalid).toBe(false);
  return { uuid, hostname, nodeKey: r.body.node_key as string };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'fleetctl-agents-'));
  const { certFile, keyFile } = selfSigned(dir, '127.0.0.1');
  ca = readFileSync(certFile, 'utf8');
  serverArgs = [
    '--db',
    join(dir, 'fleet.db'),
    '--create-env',
    'prod',
    '--create-env',
    'staging',
    '--agent-listen',
    '127.0.0.1:0',
    '--agent-tls-cert',
    certFile,
    '--agent-tls-key',
    keyFile,
    '--sink-dir',
    dir,
  ];
  server = await startServerProcess(serverArgs, { env: { FLEETCTL_ADMIN_PASSWORD: PASSWORD } });
  token = await apiToken(server.url, 'admin', PASSWORD);
  flags = parseFlags((await api('GET', '/api/v1/environments/prod/enroll/flags')).body.data);
  secret = (await api('GET', '/api/v1/environments/prod/enroll/secret')).body.data;
  sinkFile = join(dir, 'status.jsonl');
  const sink = await api('POST', '/api/v1/log-sinks', {
    name: 'status-file',
    type: 'file',
    source: 'status',
    environment_id: 0,
    config: { path: 'status.jsonl' },
  });
  expect(sink.status).toBe(200);
});

afterAll(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('enroll and check-in', () => {
  it('the flags name the agent listener and the env-prefixed paths, and carry its certificate', async () => {
    expect(server.output()).toContain(`Agent API (osquery TLS) listening on https://${flags.hostname}`);
    const env = (await api('GET', '/api/v1/environments/prod')).body;
    expect(flags.endpoint.enroll).toBe(`/${env.uuid}/${env.enroll_path}`);
    const text = (await api('GET', '/api/v1/environments/prod/enroll/flags')).body.data as string;
    expect(text).toContain('--tls_server_certs=');
  });

  it('a wrong secret gets node_invalid; the right one enrolls a node built from host_details', async () => {
    const bad = await post('enroll', { enroll_secret: 'nope', host_identifier: randomUUID(), host_details: {} });
    expect(bad).toEqual({ status: 200, body: { node_invalid: true } });
    const { uuid, hostname } = await enroll();
    const node = await api('GET', `/api/v1/nodes/prod/node/${uuid}`);
    expect(node.status).toBe(200);
    expect(node.body).toMatchObject({ uuid, hostname, platform: 'ubuntu', osquery_version: '5.12.1', hardware_serial: 'SER-1234' });
  });

  it('config answers the environment configuration; a check-in moves last_seen after the flush', async () => {
    const n = await enroll();
    const before = (await api('GET', `/api/v1/nodes/prod/node/${n.uuid}`)).body;
    const cfg = await post('config', { node_key: n.nodeKey });
    expect(cfg.status).toBe(200);
    expect(cfg.body.node_invalid).toBe(false);
    expect(cfg.body.options).toBeTypeOf('object');
    await eventually(async () => {
      const after = (await api('GET', `/api/v1/nodes/prod/node/${n.uuid}`)).body;
      return after.last_seen > before.last_seen && after.bytes_received > before.bytes_received ? after : undefined;
    }, 'last_seen and bytes_received to move');
    const active = await api('GET', '/api/v1/nodes/prod?status=active');
    expect(active.body.items.map((x: { uuid: string }) => x.uuid)).toContain(n.uuid);
  });

  it('enrolls arriving together are each answered with their own key (grouped in one transaction); a re-enroll re-keys the same node', async () => {
    const uuids = Array.from({ length: 30 }, () => randomUUID());
    const answers = await Promise.all(
      uuids.map((uuid) =>
        post('enroll', { enroll_secret: secret, host_identifier: uuid, host_details: hostDetails(uuid, `group-${uuid.slice(0, 8)}`) }),
      ),
    );
    const keys = answers.map((a) => a.body.node_key as string);
    expect(new Set(keys).size).toBe(30);
    // Each key is known at once (the config fetch right after the enroll, as osquery does).
    const configs = await Promise.all(keys.map((node_key) => post('config', { node_key })));
    expect(configs.every((c) => c.status === 200 && c.body.node_invalid === false)).toBe(true);
    const first = (await api('GET', `/api/v1/nodes/prod/node/${uuids[0]}`)).body;
    const again = await post('enroll', {
      enroll_secret: secret,
      host_identifier: uuids[0],
      host_details: hostDetails(uuids[0], 'renamed-host'),
    });
    expect(again.body.node_invalid).toBe(false);
    expect(again.body.node_key).not.toBe(keys[0]);
    expect((await post('config', { node_key: keys[0] })).body).toEqual({ node_invalid: true });
    expect((await post('config', { node_key: again.body.node_key })).body.node_invalid).toBe(false);
    const after = (await api('GET', `/api/v1/nodes/prod/node/${uuids[0]}`)).body;
    expect(after).toMatchObject({ id: first.id, hostname: 'renamed-host' });
    const listed = await api('GET', `/api/v1/nodes/prod?q=${uuids[0]}`);
    expect(listed.body.items.length).toBe(1);
  });

  it('a host identifier enrolled in one environment is refused by another (node_invalid), and stays in the first', async () => {
    const n = await enroll();
    const staging = (await api('GET', '/api/v1/environments/staging')).body;
    const stagingSecret = (await api('GET', '/api/v1/environments/staging/enroll/secret')).body.data;
    const r = await agentPost(
      flags.hostname,
      `/${staging.uuid}/${staging.enroll_path}`,
      { enroll_secret: stagingSecret, host_identifier: n.uuid, host_details: hostDetails(n.uuid, 'moved') },
      { ca },
    );
    expect(r.body).toEqual({ node_invalid: true });
    expect((await post('config', { node_key: n.nodeKey })).body.node_invalid).toBe(false);
    expect((await api('GET', `/api/v1/nodes/prod/node/${n.uuid}`)).body.hostname).toBe(n.hostname);
  });
});

describe('health follows the configuration', () => {
  it('a node that enrolled before its first config (config_valid "0", as osquery does) is healthy once it fetched one', async () => {
    const uuid = randomUUID();
    const details = hostDetails(uuid, `fresh-${uuid.slice(0, 8)}`);
    const r = await post('enroll', {
      enroll_secret: secret,
      host_identifier: uuid,
      host_details: { ...details, osquery_info: { ...details.osquery_info, config_valid: '0' } },
    });
    const fresh = (await api('GET', `/api/v1/nodes/prod/node/${uuid}`)).body;
    expect(fresh.health.signals).toContain('config_invalid');
    expect((await post('config', { node_key: r.body.node_key })).status).toBe(200);
    const after = await eventually(async () => {
      const n = (await api('GET', `/api/v1/nodes/prod/node/${uuid}`)).body;
      return n.health.signals.includes('config_invalid') ? undefined : n;
    }, 'config_invalid to clear after the config fetch');
    expect(after.health.status).toBe('healthy');
  });
});

describe('logs', () => {
  it('gzipped status logs land in the file sink as JSON lines and count as exports', async () => {
    const n = await enroll();
    const line = { line: 42, message: `hello ${randomUUID()}`, severity: 0, filename: 'x.cpp' };
    const r = await post('log', { node_key: n.nodeKey, log_type: 'status', data: [line] }, { gzip: true });
    expect(r.body).toEqual({ node_invalid: false });
    const found = await eventually(async () => {
      if (!existsSync(sinkFile)) return undefined;
      // Only whole lines: the sink may be appending while we read.
      const text = readFileSync(sinkFile, 'utf8');
      const rows = text
        .slice(0, text.lastIndexOf('\n') + 1)
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l));
      return rows.find((x) => x.entry?.message === line.message);
    }, 'the status line in the file sink');
    expect(found).toMatchObject({ environment: 'prod', node_uuid: n.uuid, log_type: 'status' });
    await eventually(async () => {
      const sinks = (await api('GET', '/api/v1/log-sinks')).body as { name: string; exports_count: number; bytes_sent: number }[];
      const s = sinks.find((x) => x.name === 'status-file');
      return s && s.exports_count > 0 && s.bytes_sent > 0 ? s : undefined;
    }, 'exports_count to count');
  });
});

describe('file sinks: confined, 0600, rotated by size, bytes_sent exact (issue 18)', () => {
  it('a result sink of max_size_mb 1 rotates into PATH.1; every file 0600; bytes_sent is the bytes written', async () => {
    const sink = await api('POST', '/api/v1/log-sinks', {
      name: 'rotating',
      type: 'file',
      source: 'result',
      environment_id: 0,
      config: { path: 'rot/results.jsonl', max_size_mb: 1, max_files: 2 },
    });
    expect(sink.status).toBe(200);
    const n = await enroll();
    const marker = randomUUID();
    // 12 batches of ~200 KB: 2.4 MB through a 1 MB file.
    for (let i = 0; i < 12; i++) {
      const r = await post(
        'log',
        {
          node_key: n.nodeKey,
          log_type: 'result',
          data: Array.from({ length: 20 }, (_, j) => ({ name: 'pack_rot', marker, i, j, pad: 'p'.repeat(10_000) })),
        },
        { gzip: true },
      );
      expect(r.status).toBe(200);
    }
    const file = join(dir, 'rot', 'results.jsonl');
    const lines = () =>
      [file, `${file}.1`, `${file}.2`].filter(existsSync).flatMap((f) => readFileSync(f, 'utf8').split('\n').filter(Boolean));
    await eventually(async () => (lines().filter((l) => l.includes(marker)).length === 240 ? true : undefined), 'all 240 entries written');
    expect(existsSync(`${file}.1`)).toBe(true);
    for (const f of [file, `${file}.1`, `${file}.2`].filter(existsSync)) {
      expect(statSync(f).mode & 0o777).toBe(0o600);
      expect(statSync(f).size).toBeLessThanOrEqual(1024 * 1024);
    }
    const written = [file, `${file}.1`, `${file}.2`].filter(existsSync).reduce((a, f) => a + statSync(f).size, 0);
    const counted = await eventually(async () => {
      const s = ((await api('GET', '/api/v1/log-sinks')).body as { name: string; bytes_sent: number }[]).find((x) => x.name === 'rotating');
      return s && s.bytes_sent >= written ? s.bytes_sent : undefined;
    }, 'bytes_sent to count every byte');
    expect(counted).toBe(written);
    expect((await api('DELETE', `/api/v1/log-sinks/${sink.body.id}`)).status).toBe(200);
  });

  // Skipped while every type of the API has a destination module (true since issue 28's sinks);
  // it runs again the day a type is added to the API without one, which must then be refused.
  it.skipIf(!undeliverable)('a sink type this server cannot deliver is refused (400, one line), never accepted and dropped', async () => {
    const before = (await api('GET', '/api/v1/log-sinks')).body.length;
    const sink = await api('POST', '/api/v1/log-sinks', {
      name: 'to-nowhere',
      type: undeliverable,
      source: 'status',
      environment_id: 0,
      config: {},
    });
    expect(sink.status).toBe(400);
    expect(sink.body.error).toBe(`sink type ${undeliverable} is not supported by this server (supported: ${deliveredTypes().join(', ')})`);
    expect((await api('GET', '/api/v1/log-sinks')).body.length).toBe(before);
  });
});

describe('hostile input', () => {
  it('broken or hostile requests get a 4xx, never node_invalid (a known key stays known); only an unknown key is node_invalid', async () => {
    const n = await enroll();
    const notJson = await post('config', undefined, { raw: Buffer.from('not json{') });
    expect(notJson.status).toBe(400);
    expect(notJson.body.code).toBe('bad_request');
    expect(notJson.body.node_invalid).toBeUndefined();
    expect(await post('config', { node_key: 'unknown' })).toEqual({ status: 200, body: { node_invalid: true } });
    const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024, 0x20));
    expect(bomb.length).toBeLessThan(1024 * 1024);
    const r = await post('log', undefined, { raw: bomb, headers: { 'content-encoding': 'gzip' } });
    expect(r.status).toBe(413);
    expect(r.body.node_invalid).toBeUndefined();
    const big = await post('log', undefined, { raw: randomBytes(2 * 1024 * 1024) });
    expect(big.status).toBe(413);
    expect(big.body.node_invalid).toBeUndefined();
    const nowhere = await agentPost(flags.hostname, '/no-such-env/enroll', {}, { ca });
    expect(nowhere.status).toBe(404);
    expect(nowhere.body.node_invalid).toBeUndefined();
    const badEncoding = await agentPost(flags.hostname, '/%E0%A4%A/enroll', {}, { ca });
    expect(badEncoding.status).toBe(400);
    // None of it cost the node its key.
    expect((await post('config', { node_key: n.nodeKey })).body.node_invalid).toBe(false);
  });
});

describe('live queries and carves', () => {
  it('a distributed query round trip through the admin API', async () => {
    const n = await enroll();
    const run = await api('POST', '/api/v1/queries/prod', { query: 'SELECT * FROM os_version;', uuid_list: [n.uuid] });
    expect(run.status).toBe(200);
    expect(run.body.expected).toBe(1);
    const name = run.body.query_name as string;
    const read = await post('read', { node_key: n.nodeKey });
    expect(read.body.queries).toEqual({ [name]: 'SELECT * FROM os_version;' });
    const rows = [{ name: 'Ubuntu', version: '22.04' }];
    expect((await post('write', { node_key: n.nodeKey, queries: { [name]: rows }, statuses: { [name]: 0 } })).body).toEqual({
      node_invalid: false,
    });
    expect((await post('read', { node_key: n.nodeKey })).body.queries).toEqual({});
    const results = await api('GET', `/api/v1/queries/prod/results/${name}`);
    expect(results.body).toMatchObject({ expected: 1, answered: 1, query_status: 'COMPLETED', total_items: 1 });
    expect(results.body.items[0]).toMatchObject({ uuid: n.uuid, hostname: n.hostname, status: 0, rows });
    expect((await api('GET', `/api/v1/queries/prod/${name}`)).body).toMatchObject({ name, status: 'COMPLETED', executions: 1 });
    expect((await api('GET', '/api/v1/queries/prod')).body.items.map((q: { name: string }) => q.name)).toContain(name);
    expect((await api('POST', `/api/v1/queries/prod/cancel/${name}`)).status).toBe(200);
  });

  it('a carve round trip: blocks in, the same bytes out', async () => {
    const n = await enroll();
    const start = await api('POST', '/api/v1/carves/prod', { path: '/etc/hosts', host_list: [n.hostname] });
    expect(start.status).toBe(201);
    const name = start.body.query_name as string;
    const read = await post('read', { node_key: n.nodeKey });
    expect(read.body.queries[name]).toBe("SELECT * FROM carves WHERE carve=1 AND path = '/etc/hosts';");
    const content = randomBytes(2500);
    const blockSize = 1000;
    const blocks = [0, 1, 2].map((i) => content.subarray(i * blockSize, (i + 1) * blockSize));
    const s = await post('carveStart', {
      node_key: n.nodeKey,
      block_count: 3,
      block_size: blockSize,
      carve_size: content.length,
      carve_id: randomUUID(),
      request_id: name,
    });
    expect(s.body.session_id).toMatch(/^[0-9a-f]{32}$/);
    for (const i of [2, 0, 1]) {
      const b = await post('carveBlock', {
        block_id: i,
        session_id: s.body.session_id,
        request_id: name,
        data: blocks[i].toString('base64'),
      });
      expect(b.body).toEqual({ success: true });
    }
    const res = await fetch(`${server.url}/api/v1/carves/prod/archive/${name}`, { headers: { authorization: `Bearer ${token}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-carve-size')).toBe('2500');
    expect(res.headers.get('x-carve-blocks')).toBe('3');
    expect(Buffer.from(await res.arrayBuffer()).equals(content)).toBe(true);
    const carve = (await api('GET', `/api/v1/carves/prod/${name}`)).body;
    expect(carve.files[0]).toMatchObject({ uuid: n.uuid, status: 'COMPLETED', completed_blocks: 3 });
  });
});

describe("carves run's default wait follows the targets' cadence (issue 26)", () => {
  it('right after the query interval was lowered, a node still polling at the old one is waited for that long', async () => {
    const cli = new Cli();
    await cli.login(server.url, 'admin', 'prod', PASSWORD);
    const was = (await api('GET', '/api/v1/environments/prod')).body.query_interval as number;
    try {
      expect((await cli.run(['env', 'intervals', 'prod', '--query', '200'])).exitCode).toBe(0);
      const n = await enroll(); // its flags say 200 s
      // Lowered, and the node has not fetched its configuration since: it still polls every 200 s.
      expect((await cli.run(['env', 'intervals', 'prod', '--query', '5'])).exitCode).toBe(0);
      const run = execa('node', [BIN, 'carves', 'run', '/etc/hosts', '--target', n.uuid], {
        env: baseEnv(cli.configDir),
        extendEnv: false,
        reject: false,
        stdin: 'ignore',
      });
      // The node picks the carve up and uploads it (as osquery before 4.7 did: by the query name).
      const name = await eventually(
        async () => Object.keys(((await post('read', { node_key: n.nodeKey })).body.queries ?? {}) as Record<string, string>)[0],
        "the carve in the node's read",
      );
      const content = randomBytes(100);
      const s = await post('carveStart', {
        node_key: n.nodeKey,
        block_count: 1,
        block_size: 100,
        carve_size: 100,
        carve_id: randomUUID(),
        request_id: name,
      });
      expect(
        (await post('carveBlock', { block_id: 0, session_id: s.body.session_id, request_id: name, data: content.toString('base64') })).body,
      ).toEqual({ success: true });
      const r = await run;
      expect(r.exitCode, r.stderr).toBe(0);
      expect(r.stdout.trim()).toBe(name);
      // The carve's expiry is the wait plus a minute: twice 200 s + osquery's carve minute + 2 min
      // for the upload (640 s), not the 5 minutes the environment's 5 s would give (360 s).
      const q = (await api('GET', `/api/v1/carves/prod/${name}`)).body.query as { created_at: string; expiration: string };
      expect((Date.parse(q.expiration) - Date.parse(q.created_at)) / 1000).toBe(2 * 200 + 60 + 120 + 60);
    } finally {
      await cli.run(['env', 'intervals', 'prod', '--query', String(was)]);
      cli.cleanup();
    }
  });
});

describe('restart', () => {
  it('check-ins waiting in the batch are written on SIGTERM; node keys and queries survive a restart', async () => {
    const n = await enroll();
    const enrolled = (await api('GET', `/api/v1/nodes/prod/node/${n.uuid}`)).body;
    await new Promise((r) => setTimeout(r, 5)); // a later check-in timestamp than the enroll's
    expect((await post('config', { node_key: n.nodeKey })).body.node_invalid).toBe(false);
    await server.stop();
    // Same agent address as before: the environment's hostname (in the flags agents hold) names it.
    server = await startServerProcess(serverArgs.map((a) => (a === '127.0.0.1:0' ? flags.hostname : a)));
    token = await apiToken(server.url, 'admin', PASSWORD);
    const after = (await api('GET', `/api/v1/nodes/prod/node/${n.uuid}`)).body;
    expect(after.last_seen > enrolled.last_seen).toBe(true);
    expect(after.bytes_received).toBeGreaterThan(enrolled.bytes_received);
    expect((await post('config', { node_key: n.nodeKey })).body.node_invalid).toBe(false);
  });
});

describe('agent listener flags', () => {
  it('outside --dev the agent listener needs a certificate and key (exit 2, nothing started)', async () => {
    const db = join(dir, 'other.db');
    const r = await execa('node', [BIN, 'server', '--db', db, '--listen', '127.0.0.1:0', '--agent-listen', '127.0.0.1:0'], {
      reject: false,
      stdin: 'ignore',
      env: { FLEETCTL_ADMIN_PASSWORD: PASSWORD },
    });
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain('--agent-listen needs --agent-tls-cert and --agent-tls-key');
    const half = await execa('node', [BIN, 'server', '--db', db, '--agent-listen', '127.0.0.1:0', '--agent-tls-cert', 'x.pem'], {
      reject: false,
      stdin: 'ignore',
    });
    expect(half.exitCode).toBe(2);
    expect(existsSync(db)).toBe(false);
  });
});
