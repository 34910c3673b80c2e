// The durable log spool and the sinks that drain it (issue 28), in a real server with its agent
// door: a log request is answered once its entries are committed; each sink gets each entry
// once from its own cursor; a sink that is down keeps a backlog bounded in bytes and age while
// the others go on; the pruner deletes what every sink has.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { startTestServer, type TestServer } from '../helpers/api-server.js';
import { agentPost, eventually, hostDetails, parseFlags, type Flags } from '../helpers/osquery-agent.js';
import { selfSigned } from '../../src/server/agent/listener.js';

let t: TestServer;
let admin: string;
let flags: Flags;
let secret: string;
let ca: string;
let dir: string;
let envId: number;

const post = (ep: string, body: unknown) => agentPost(flags.hostname, flags.endpoint[ep], body, { ca });
const api = (method: string, path: string, body?: unknown) => t.call(method, path, { token: admin, body });
const db = () => t.server.deps.db;

async function enroll(): Promise<{ uuid: string; key: string }> {
  const uuid = randomUUID();
  const r = await post('enroll', {
    enroll_secret: secret,
    host_identifier: uuid,
    host_details: hostDetails(uuid, `spool-${uuid.slice(0, 8)}`),
  });
  expect(r.body.node_invalid).toBe(false);
  return { uuid, key: r.body.node_key };
}

const result = (name: string, i: number, tag: string) => ({
  name,
  hostIdentifier: 'h',
  calendarTime: 'x',
  unixTime: 1700000000 + i,
  epoch: 0,
  counter: i,
  numerics: false,
  columns: { i: String(i), tag },
  action: 'added',
});

/** The lines of a file sink that carry `tag`, parsed. */
function fileLines(path: string, tag: string): any[] {
  if (!existsSync(join(dir, path))) return [];
  return readFileSync(join(dir, path), 'utf8')
    .split('\n')
    .filter((l) => l.includes(tag))
    .map((l) => JSON.parse(l));
}

async function addSink(body: Record<string, unknown>): Promise<any> {
  const r = await api('POST', '/api/v1/log-sinks', { environment_id: envId, source: 'result', ...body });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
}

async function sinkState(id: number): Promise<any> {
  const all = await api('GET', '/api/v1/log-sinks');
  return all.body.find((s: any) => s.id === id).state;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'fleetctl-spool-'));
  t = await startTestServer({ devNodes: 20, agent: { host: '127.0.0.1', port: 0 }, sinkDir: dir });
  admin = await t.login('admin');
  ca = t.server.agent!.certPem;
  flags = parseFlags((await api('GET', '/api/v1/environments/prod/enroll/flags')).body.data);
  secret = (await api('GET', '/api/v1/environments/prod/enroll/secret')).body.data;
  envId = (await db().selectFrom('environments').select('id').where('name', '=', 'prod').executeTakeFirstOrThrow()).id;
});

afterAll(async () => {
  await t?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('the spool', () => {
  it('answers a log request once its entries are committed, each with environment, node, host, type, query, time, severity and line', async () => {
    const n = await enroll();
    const tag = randomUUID();
    const r = await post('log', { node_key: n.key, log_type: 'result', data: [result('pack_a_b', 1, tag), result('pack_a_b', 2, tag)] });
    expect(r.status).toBe(200);
    // Committed before the answer: no waiting here.
    const rows = await db().selectFrom('log_spool').selectAll().where('line', 'like', `%${tag}%`).orderBy('id').execute();
    expect(rows).toHaveLength(2);
    const node = await db().selectFrom('nodes').select(['id', 'hostname']).where('uuid', '=', n.uuid).executeTakeFirstOrThrow();
    expect(rows[0]).toMatchObject({
      environment_id: envId,
      node_id: node.id,
      host_identifier: n.uuid,
      hostname: node.hostname,
      log_type: 'result',
      name: 'pack_a_b',
      severity: null,
      time: 1700000001,
    });
    expect(JSON.parse(rows[1].line)).toEqual(result('pack_a_b', 2, tag));
    expect(Number(rows[1].id)).toBeGreaterThan(Number(rows[0].id));

    const status = await post('log', {
      node_key: n.key,
      log_type: 'status',
      data: [
        {
          hostIdentifier: n.uuid,
          calendarTime: 'x',
          unixTime: '1700000100',
          severity: '1',
          filename: 'f.cpp',
          line: '7',
          message: tag,
          version: '5.12.1',
        },
      ],
    });
    expect(status.status).toBe(200);
    const st = await db()
      .selectFrom('log_spool')
      .selectAll()
      .where('line', 'like', `%${tag}%`)
      .where('log_type', '=', 'status')
      .executeTakeFirstOrThrow();
    expect(st).toMatchObject({ log_type: 'status', name: null, severity: 1, time: 1700000100 });
  });

  it('a file sink gets each line once, in the envelope, in order', async () => {
    const sink = await addSink({ name: `file-${randomUUID().slice(0, 8)}`, type: 'file', config: { path: 'once.jsonl' } });
    const n = await enroll();
    const tag = randomUUID();
    for (let b = 0; b < 5; b++) {
      const r = await post('log', {
        node_key: n.key,
        log_type: 'result',
        data: Array.from({ length: 20 }, (_, i) => result('q1', b * 20 + i, tag)),
      });
      expect(r.status).toBe(200);
    }
    const lines = await eventually(async () => {
      const l = fileLines('once.jsonl', tag);
      return l.length >= 100 ? l : undefined;
    }, 'the file sink to get 100 lines');
    expect(lines.map((l) => Number(l.entry.columns.i))).toEqual(Array.from({ length: 100 }, (_, i) => i));
    expect(lines[0]).toMatchObject({ environment: 'prod', node_uuid: n.uuid, log_type: 'result', name: 'q1' });
    const state = await eventually(async () => {
      const s = await sinkState(sink.id);
      return s.backlog_entries === 0 && s.delivered >= 100 ? s : undefined;
    }, 'the state to show it delivered');
    expect(state).toMatchObject({ supported: true, delivering: true, backlog_bytes: 0, oldest_undelivered_at: '', dropped: 0 });
    expect(state.last_success_at).not.toBe('');
    // Per-sink metrics: delivered, the delivery latency (receive to acknowledgement), the backlog.
    expect((await api('PATCH', '/api/v1/settings/api/service_metrics', { boolean: true })).status).toBe(200);
    const metrics = await eventually(async () => {
      const m = String((await api('GET', '/metrics')).body);
      return m.includes(`fleetctl_sink_backlog_entries{sink="${sink.name}",environment="prod"} 0`) ? m : undefined;
    }, 'the backlog gauges');
    expect(metrics).toMatch(new RegExp(`fleetctl_sink_delivered_total\\{sink="${sink.name}",environment="prod"\\} 100`));
    expect(metrics).toMatch(new RegExp(`fleetctl_sink_delivery_seconds_count\\{sink="${sink.name}",environment="prod"\\} 100`));
    expect(metrics).toContain(`fleetctl_sink_oldest_seconds{sink="${sink.name}",environment="prod"} 0`);
    await api('DELETE', `/api/v1/log-sinks/${sink.id}`);
  });
});

describe('a sink that is down', () => {
  let down: Server;
  let up = false;
  const got: any[] = [];
  beforeAll(async () => {
    down = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        if (!up) return res.writeHead(503, { 'retry-after': '1' }).end('busy');
        got.push(...JSON.parse(body));
        res.writeHead(200).end('ok');
      });
    });
    await new Promise<void>((r) => down.listen(0, '127.0.0.1', r));
  });
  afterAll(() => down?.close());

  it('keeps its backlog (state and last error) while a file sink beside it goes on; back up, it gets everything once', async () => {
    const url = `http://127.0.0.1:${(down.address() as { port: number }).port}/in`;
    const http = await addSink({ name: `http-${randomUUID().slice(0, 8)}`, type: 'http', config: { url } });
    const file = await addSink({ name: `file-${randomUUID().slice(0, 8)}`, type: 'file', config: { path: 'beside.jsonl' } });
    const n = await enroll();
    const tag = randomUUID();
    for (let b = 0; b < 3; b++)
      expect(
        (
          await post('log', {
            node_key: n.key,
            log_type: 'result',
            data: Array.from({ length: 10 }, (_, i) => result('q2', b * 10 + i, tag)),
          })
        ).status,
      ).toBe(200);
    await eventually(async () => (fileLines('beside.jsonl', tag).length === 30 ? true : undefined), 'the file sink to get all 30');
    const waiting = await eventually(async () => {
      const s = await sinkState(http.id);
      return s.last_error && s.retrying_since ? s : undefined;
    }, 'the http sink to report its failure');
    expect(waiting.backlog_entries).toBe(30);
    expect(waiting.backlog_bytes).toBeGreaterThan(0);
    expect(waiting.oldest_undelivered_at).not.toBe('');
    expect(waiting.last_error).toContain('503');
    up = true;
    await eventually(
      async () => (got.filter((e) => e.entry.columns.tag === tag).length >= 30 ? true : undefined),
      'the http sink to catch up',
    );
    const mine = got.filter((e) => e.entry.columns.tag === tag);
    expect(mine.map((e) => Number(e.entry.columns.i)).sort((a, b) => a - b)).toEqual(Array.from({ length: 30 }, (_, i) => i));
    const after = await eventually(async () => {
      const s = await sinkState(http.id);
      return s.backlog_entries === 0 && s.retrying_since === '' ? s : undefined;
    }, 'the state to show it caught up');
    expect(after.delivered).toBe(30);
    expect(after.failed).toBeGreaterThan(0);
    await api('DELETE', `/api/v1/log-sinks/${http.id}`);
    await api('DELETE', `/api/v1/log-sinks/${file.id}`);
  });

  it('past --sink-backlog-size its oldest entries go, counted and audited; the others go on', async () => {
    up = false;
    const url = `http://127.0.0.1:${(down.address() as { port: number }).port}/in`;
    const http = await addSink({ name: `bounded-${randomUUID().slice(0, 8)}`, type: 'http', config: { url } });
    const n = await enroll();
    const tag = randomUUID();
    const big = 'x'.repeat(1000);
    const config = t.server.deps.config;
    const was = config.sinkBacklogBytes;
    config.sinkBacklogBytes = 20_000;
    try {
      for (let b = 0; b < 5; b++) {
        const r = await post('log', {
          node_key: n.key,
          log_type: 'result',
          data: Array.from({ length: 10 }, (_, i) => ({ ...result('q3', b * 10 + i, tag), pad: big })),
        });
        expect(r.status).toBe(200);
      }
      const s = await eventually(async () => {
        const st = await sinkState(http.id);
        return st.dropped > 0 && st.backlog_bytes <= 20_000 ? st : undefined;
      }, 'the bound to drop the oldest');
      expect(s.dropped + s.backlog_entries).toBe(50);
      up = true;
      await eventually(async () => {
        const st = await sinkState(http.id);
        return st.backlog_entries === 0 ? st : undefined;
      }, 'the rest to be delivered');
      const mine = got.filter((e) => e.entry.columns.tag === tag).map((e) => Number(e.entry.columns.i));
      // The newest survive, each once.
      expect(mine).toEqual(Array.from({ length: mine.length }, (_, i) => 50 - mine.length + i));
      expect(mine.length).toBe(50 - s.dropped);
    } finally {
      config.sinkBacklogBytes = was;
    }
    const audit = await eventually(
      async () =>
        db().selectFrom('audit_logs').selectAll().where('line', 'like', `%${http.name}%dropped%backlog_bytes%`).executeTakeFirst(),
      'the drop to be audited',
    );
    expect(audit).toMatchObject({ log_type: 7, severity: 3 });
    await api('DELETE', `/api/v1/log-sinks/${http.id}`);
  });
});

describe('an http sink over HTTPS with a private CA', () => {
  it('without the CA the test says why it failed; with `ca` it delivers; a CA with an http:// url is refused', async () => {
    const tls = mkdtempSync(join(tmpdir(), 'fleetctl-spool-tls-'));
    const { certFile, keyFile } = selfSigned(tls, '127.0.0.1');
    const got: any[] = [];
    const collector = createHttpsServer({ cert: readFileSync(certFile), key: readFileSync(keyFile) }, (req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        got.push(...JSON.parse(body));
        res.writeHead(200).end('stored');
      });
    });
    await new Promise<void>((r) => collector.listen(0, '127.0.0.1', r));
    try {
      const url = `https://127.0.0.1:${(collector.address() as { port: number }).port}/in`;
      const ca = readFileSync(certFile, 'utf8');
      const plain = await api('POST', '/api/v1/log-sinks', {
        name: `tls-${randomUUID().slice(0, 8)}`,
        environment_id: envId,
        source: 'status',
        type: 'http',
        config: { url: 'http://127.0.0.1:1/', ca },
      });
      expect(plain.status).toBe(400);
      expect(plain.body.error).toBe('config.ca: a CA is only used with an https:// url');
      const sink = await addSink({ name: `tls-${randomUUID().slice(0, 8)}`, source: 'status', type: 'http', config: { url } });
      const untrusted = await api('POST', `/api/v1/log-sinks/${sink.id}/test`);
      expect(untrusted.body.ok).toBe(false);
      expect(untrusted.body.answer).toMatch(/certificate/i);
      expect((await api('PATCH', `/api/v1/log-sinks/${sink.id}`, { config: { url, ca } })).status).toBe(200);
      const trusted = await api('POST', `/api/v1/log-sinks/${sink.id}/test`);
      expect(trusted.body).toMatchObject({ ok: true, answer: 'HTTP 200 stored' });
      const n = await enroll();
      const tag = randomUUID();
      expect((await post('log', { node_key: n.key, log_type: 'status', data: [{ message: tag, severity: '0' }] })).status).toBe(200);
      await eventually(async () => (got.some((e) => e.entry.message === tag) ? true : undefined), 'the line over HTTPS');
      await api('DELETE', `/api/v1/log-sinks/${sink.id}`);
    } finally {
      collector.close();
      rmSync(tls, { recursive: true, force: true });
    }
  });
});

describe('the pruner', () => {
  it('deletes the entries every sink has once the logs retention lets them go (issue 30)', async () => {
    const pruner = t.server.delivery.spoolPruner;
    const n = await enroll();
    const tag = randomUUID();
    expect(
      (await post('log', { node_key: n.key, log_type: 'status', data: [{ message: tag, severity: '0', unixTime: '1700000000' }] })).status,
    ).toBe(200);
    const left = async () => (await db().selectFrom('log_spool').select('id').where('line', 'like', `%${tag}%`).execute()).length;
    // The demo's prod-status-file sink reads prod's status logs: it gets the line...
    await eventually(
      async () =>
        existsSync(join(dir, 'prod-status.log')) && readFileSync(join(dir, 'prod-status.log'), 'utf8').includes(tag) ? true : undefined,
      'the status line at the file sink',
    );
    // ...and the line stays for `fleetctl logs` within the environment's retention (a week by default)...
    await pruner.prune();
    expect(await left()).toBe(1);
    // ...and goes once the server's clock is past it.
    const real = t.server.deps.now;
    t.server.deps.now = () => new Date(Date.now() + 8 * 86_400_000);
    try {
      await eventually(async () => {
        await pruner.prune();
        return (await left()) === 0 ? true : undefined;
      }, 'the delivered status line to be pruned');
    } finally {
      t.server.deps.now = real;
    }
  });
});
