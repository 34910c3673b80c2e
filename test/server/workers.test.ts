// `fleetctl server --workers 2` (issue 21): two server processes on the same two ports (Node's
// cluster module), on one SQLite file or one PostgreSQL database (the postgres project). Every
// request below opens its own connection, so the cluster hands them to both workers in turn: a
// node key one worker issued, a tag, a logout are seen by the other at once; the metrics count
// both; a worker that dies is replaced while the other serves; SIGTERM drains both and exits 0.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { startServerProcess, type ServerProcess } from '../helpers/cli.js';
import { agentPost, eventually, hostDetails, parseFlags, type Flags } from '../helpers/osquery-agent.js';
import { childrenOf } from '../helpers/processes.js';
import { testDatabaseUrl } from '../helpers/test-db.js';
import { selfSigned } from '../../src/server/agent/listener.js';

const PASSWORD = 'workers-test-password-1';
let dir: string;
let server: ServerProcess;
let token: string;
let flags: Flags;
let secret: string;
let ca: string;

/** An admin API call on a connection of its own (Connection: close), so calls spread over the workers. */
function api(
  method: string,
  path: string,
  o: { token?: string; body?: unknown; timeoutMs?: number } = {},
): Promise<{ status: number; body: any }> {
  const url = new URL(path, server.url);
  const data = o.body === undefined ? undefined : Buffer.from(JSON.stringify(o.body));
  const headers: Record<string, string> = { connection: 'close' };
  if (o.token) headers.authorization = `Bearer ${o.token}`;
  if (data) Object.assign(headers, { 'content-type': 'application/json', 'content-length': String(data.length) });
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          /* text */
        }
        resolve({ status: res.statusCode ?? 0, body });
      });
    });
    req.on('error', reject);
    if (o.timeoutMs) req.setTimeout(o.timeoutMs, () => req.destroy(new Error('timed out')));
    req.end(data);
  });
}

/** Tries again (up to 3 times) after a connection error or a timeout. */
async function retried<T>(fn: () => Promise<T>): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      return await fn();
    } catch (e) {
      if (i >= 2) throw e;
    }
  }
}

const agent = (ep: string, body: unknown) => agentPost(flags.hostname, flags.endpoint[ep], body, { ca, headers: { connection: 'close' } });

/** The server's worker processes: the children of the primary. */
const workerPids = (): number[] => childrenOf(server.proc.pid!);

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'fleetctl-workers-'));
  const { certFile, keyFile } = selfSigned(dir, '127.0.0.1');
  ca = readFileSync(certFile, 'utf8');
  const db = (await testDatabaseUrl()) ?? join(dir, 'fleet.db');
  server = await startServerProcess(
    [
      '--db',
      db,
      '--workers',
      '2',
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
    ],
    { env: { FLEETCTL_ADMIN_PASSWORD: PASSWORD } },
  );
  await eventually(async () => (/Agent API/.test(server.output()) ? true : undefined), 'the agent listener line');
  const login = await api('POST', '/api/v1/login/prod', { body: { username: 'admin', password: PASSWORD } });
  expect(login.status).toBe(200);
  token = login.body.token;
  flags = parseFlags((await api('GET', '/api/v1/environments/prod/enroll/flags', { token })).body.data);
  secret = (await api('GET', '/api/v1/environments/prod/enroll/secret', { token })).body.data;
});

afterAll(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('fleetctl server --workers 2', () => {
  it('two worker processes serve both doors; what one stores the other sees at once', async () => {
    expect(server.output()).toContain('Workers: 2 server processes share these ports');
    expect(workerPids()).toHaveLength(2);
    // Enroll on one connection each, check in on another: a key issued by either worker works on both.
    const nodes = await Promise.all(
      Array.from({ length: 24 }, async () => {
        const uuid = randomUUID();
        const r = await agent('enroll', {
          enroll_secret: secret,
          host_identifier: uuid,
          host_details: hostDetails(uuid, `w-${uuid.slice(0, 8)}`),
        });
        expect(r.body.node_invalid).toBe(false);
        return { uuid, key: r.body.node_key as string };
      }),
    );
    for (const n of nodes) {
      const c = await agent('config', { node_key: n.key });
      expect(c.status).toBe(200);
      expect(c.body.node_invalid).toBe(false);
    }
    const list = await api('GET', '/api/v1/nodes/prod?page_size=100', { token });
    expect(list.body.total_items).toBe(24);
    // A tag applied through one worker filters the list on the other, every time.
    expect(
      (await api('POST', '/api/v1/tags/prod/add', { token, body: { name: 'pci', description: 'in scope', color: '#112233', tagtype: 6 } }))
        .status,
    ).toBe(200);
    const tagged = nodes.slice(0, 5).map((n) => n.uuid);
    expect((await api('POST', '/api/v1/tags/prod/tag', { token, body: { name: 'pci', uuids: tagged } })).status).toBe(200);
    for (let i = 0; i < 4; i++) expect((await api('GET', '/api/v1/nodes/prod?tag=pci', { token })).body.total_items).toBe(5);
    // A logout through one worker ends the session on both.
    const other = (await api('POST', '/api/v1/login/prod', { body: { username: 'admin', password: PASSWORD } })).body.token as string;
    expect((await api('POST', '/api/v1/logout', { token: other })).status).toBe(200);
    for (let i = 0; i < 4; i++) expect((await api('GET', '/api/v1/nodes/prod', { token: other })).status).toBe(401);
  });

  it("the agent door's caches follow changes made through the other worker at once", async () => {
    const enroll = async () => {
      const uuid = randomUUID();
      const r = await agent('enroll', {
        enroll_secret: secret,
        host_identifier: uuid,
        host_details: hostDetails(uuid, `c-${uuid.slice(0, 8)}`),
      });
      return { uuid, key: r.body.node_key as string };
    };
    const [a, b] = [await enroll(), await enroll()];
    // Both workers have answered both nodes' reads (nothing owed: no query is run for it; a node
    // this new is also told to accelerate, tls/accelerated_seconds).
    for (let i = 0; i < 4; i++)
      for (const n of [a, b]) expect((await agent('read', { node_key: n.key })).body).toMatchObject({ queries: {}, node_invalid: false });
    // A live query started through the API reaches the node it targets on either worker, and only it.
    const run = await api('POST', '/api/v1/queries/prod', { token, body: { query: 'SELECT * FROM osquery_info', uuid_list: [a.uuid] } });
    expect(run.status).toBe(200);
    for (let i = 0; i < 2; i++) {
      expect(Object.values((await agent('read', { node_key: a.key })).body.queries)).toEqual(['SELECT * FROM osquery_info']);
      expect((await agent('read', { node_key: b.key })).body.queries).toEqual({});
    }
    // Deleted through one worker: refused by both (osquery re-enrolls), never served from a cache.
    expect((await api('POST', '/api/v1/nodes/prod/delete', { token, body: { uuid: b.uuid } })).status).toBe(200);
    for (let i = 0; i < 4; i++) expect((await agent('config', { node_key: b.key })).body).toEqual({ node_invalid: true });
    // Re-enrolled: the old key is refused everywhere, the new one works everywhere.
    const again = await agent('enroll', { enroll_secret: secret, host_identifier: a.uuid, host_details: hostDetails(a.uuid, 'c-again') });
    for (let i = 0; i < 4; i++) {
      expect((await agent('config', { node_key: a.key })).body).toEqual({ node_invalid: true });
      expect((await agent('config', { node_key: again.body.node_key })).body.node_invalid).toBe(false);
    }
  });

  it('a file sink written by both workers keeps every line once, rotated by size', async () => {
    const sink = await api('POST', '/api/v1/log-sinks', {
      token,
      body: {
        name: 'rotating',
        type: 'file',
        source: 'status',
        environment_id: 0,
        config: { path: 'rot.jsonl', max_size_mb: 1, max_files: 4 },
      },
    });
    expect(sink.status).toBe(200);
    const keys: string[] = [];
    for (let i = 0; i < 4; i++) {
      const uuid = randomUUID();
      keys.push(
        (await agent('enroll', { enroll_secret: secret, host_identifier: uuid, host_details: hostDetails(uuid, `r-${uuid.slice(0, 8)}`) }))
          .body.node_key,
      );
    }
    const pad = 'x'.repeat(1000);
    // 2.4 MB of status lines from 4 nodes, over connections both workers answer.
    const ids: string[] = [];
    for (let r = 0; r < 120; r += 8) {
      await Promise.all(
        Array.from({ length: 8 }, async (_, k) => {
          const data = Array.from({ length: 20 }, (_, j) => {
            const id = `m-${r + k}-${j}`;
            ids.push(id);
            return { severity: '0', filename: 'w.cpp', line: '1', message: `${id} ${pad}`, version: '5.12.1' };
          });
          const res = await agent('log', { node_key: keys[(r + k) % 4], log_type: 'status', data });
          expect(res.status).toBe(200);
        }),
      );
    }
    const files = () => readdirSync(dir).filter((f) => /^rot\.jsonl(\.\d+)?$/.test(f));
    const seen = await eventually(async () => {
      const counts = new Map<string, number>();
      for (const f of files())
        for (const m of readFileSync(join(dir, f), 'utf8').matchAll(/"(m-\d+-\d+) /g)) counts.set(m[1], (counts.get(m[1]) ?? 0) + 1);
      return counts.size === ids.length ? counts : undefined;
    }, 'every line in the sink files');
    expect([...seen.values()].every((n) => n === 1)).toBe(true);
    expect(files().length).toBeGreaterThanOrEqual(3);
    // Each file near its bound (a batch may land on a file the other worker just filled).
    for (const f of files()) expect(readFileSync(join(dir, f)).length).toBeLessThan(1.5 * 1024 * 1024);
  });

  it('/metrics counts the requests of both workers', async () => {
    expect((await api('PATCH', '/api/v1/settings/api/service_metrics', { token, body: { boolean: true } })).status).toBe(200);
    const before = await api('GET', '/metrics', { token });
    expect(before.status).toBe(200);
    const count = (text: string) =>
      [
        ...text.matchAll(
          /^fleetctl_http_requests_total\{[^}]*door="admin"[^}]*endpoint="\/api\/v1\/environments\/:env\/enroll\/:target"[^}]*\} (\d+)/gm,
        ),
      ].reduce((a, m) => a + Number(m[1]), 0);
    const n0 = count(before.body);
    for (let i = 0; i < 6; i++) await api('GET', '/api/v1/environments/prod/enroll/flags', { token });
    expect(count((await api('GET', '/metrics', { token })).body)).toBe(n0 + 6);
  });

  it('a worker that dies is replaced, and the other serves meanwhile', async () => {
    const [victim, survivor] = workerPids();
    process.kill(victim, 'SIGKILL');
    // Requests keep being answered by the living worker. A connection the cluster was handing to
    // the dying one is lost with it (as with any replica that crashes): the client's timeout and
    // retry, as a load balancer's or an agent's, cover it.
    for (let i = 0; i < 4; i++) expect((await retried(() => api('GET', '/healthz', { timeoutMs: 2000 }))).status).toBe(200);
    await eventually(
      async () => (/worker \d exited \(SIGKILL\); starting another/.test(server.output()) ? true : undefined),
      'the restart line',
    );
    const pids = await eventually(async () => {
      const p = workerPids();
      return p.length === 2 && !p.includes(victim) ? p : undefined;
    }, 'a new worker');
    expect(pids).toContain(survivor);
    for (let i = 0; i < 6; i++)
      expect((await retried(() => api('GET', '/api/v1/nodes/prod', { token, timeoutMs: 5000 }))).status).toBe(200);
  });

  it('SIGTERM: both workers drain and exit, then the primary, exit 0', async () => {
    const pids = workerPids();
    server.proc.kill('SIGTERM');
    const r = await server.proc;
    expect(r.exitCode).toBe(0);
    for (const p of pids) expect(() => process.kill(p, 0)).toThrow();
  });
});
