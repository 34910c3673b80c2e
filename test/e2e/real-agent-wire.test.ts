// What osquery really sends, and the simulator with it (issue 26, point 4 of the brief). The
// fixtures in test/fixtures/osquery/ were recorded from osqueryd 5.23.0 through a recording proxy
// (test/helpers/agent-recorder.ts): one request of each kind (enroll, config, log status, log
// result, distributed read and write, carver start and continue), scrubbed of the secret and node
// keys, with the shape of each. Two checks keep them honest:
// - with the real agent (OSQUERYD), what it sends now has the recorded shapes (RECORD_OSQUERY_FIXTURES=1
//   records them again instead);
// - always, the simulator (src/agent-sim) sends the same shapes, through the same proxy.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import {
  describeRealAgent,
  startAgentServer,
  startOsqueryd,
  type AgentServer,
  type Enrollment,
  type Osqueryd,
} from '../helpers/osqueryd.js';
import { shapeOf, startRecorder, type Exchange, type Recorder } from '../helpers/agent-recorder.js';
import { eventually } from '../helpers/osquery-agent.js';
import { Simulator, parseAgentFlags, syntheticHost } from '../../src/agent-sim/index.js';

const DIR = resolve(import.meta.dirname, '../fixtures/osquery');
const RECORD = process.env.RECORD_OSQUERY_FIXTURES === '1';

/** The kinds of request, each told by its endpoint and (for logs) its log_type. */
const KINDS = ['enroll', 'config', 'log-status', 'log-result', 'read', 'write', 'carve-start', 'carve-block'] as const;
type Kind = (typeof KINDS)[number];

const kindOf = (x: Exchange): Kind | undefined => {
  const body = (x.body ?? {}) as Record<string, unknown>;
  switch (x.endpoint) {
    case 'enroll':
    case 'config':
    case 'read':
    case 'write':
      return x.endpoint;
    case 'log':
      return body.log_type === 'status' ? 'log-status' : body.log_type === 'result' ? 'log-result' : undefined;
    case 'init':
      return 'carve-start';
    case 'block':
      return 'carve-block';
  }
  return undefined;
};

/** Maps keyed by data in each kind (query names, columns), so their keys do not count, only their values' shapes. */
const KEYED: Record<Kind, string[]> = {
  enroll: [],
  config: [],
  'log-status': ['$.data[].decorations'],
  'log-result': [
    '$.data[].decorations',
    '$.data[].columns',
    '$.data[].snapshot[]',
    '$.data[].diffResults.added[]',
    '$.data[].diffResults.removed[]',
  ],
  read: [],
  write: ['$.queries', '$.statuses', '$.messages', '$.stats', '$.queries.*[]'],
  'carve-start': [],
  'carve-block': [],
};

/** Headers that say how the agent speaks (not per request: no length, host or connection). */
const headerNames = (x: Exchange) =>
  Object.keys(x.headers)
    .filter((h) => !['content-length', 'host', 'connection'].includes(h))
    .sort();

interface Fixture {
  kind: Kind;
  headers: string[];
  shape: unknown;
  /** One request as the agent sent it, secrets and node keys replaced. */
  sample: unknown;
}

function scrub(v: unknown): unknown {
  return JSON.parse(
    JSON.stringify(v)
      .replace(/"(node_key|enroll_secret)":"[^"]*"/g, '"$1":"REDACTED"')
      .replace(/"data":"[A-Za-z0-9+/=]{200,}"/g, '"data":"BASE64-BLOCK"'),
  );
}

/** The first exchange of each kind, with its shape. */
function fixturesOf(exchanges: Exchange[]): Map<Kind, Fixture> {
  const out = new Map<Kind, Fixture>();
  for (const x of exchanges) {
    const kind = kindOf(x);
    if (!kind || out.has(kind) || x.status !== 200) continue;
    out.set(kind, { kind, headers: headerNames(x), shape: shapeOf(x.body, KEYED[kind]), sample: scrub(x.body) });
  }
  return out;
}

/** A simulator seed whose first host is a Debian virtual machine (no platform_info). */
function debianVmSeed(): string {
  for (let i = 0; ; i++) {
    const h = syntheticHost(`wire-${i}`, 0);
    if (h.platform === 'debian' && !h.platformInfo) return `wire-${i}`;
  }
}

const readFixture = (kind: Kind): Fixture => JSON.parse(readFileSync(join(DIR, `${kind}.json`), 'utf8')) as Fixture;

/** A server, a recorder in front of its agent listener, and the enrollment pointing at the recorder. */
async function recordedServer(): Promise<{ srv: AgentServer; rec: Recorder; enrollment: Enrollment }> {
  const srv = await startAgentServer();
  // A scheduled query, so agents send result logs.
  const sched = await srv.cli.run(['env', 'config', 'prod', '--set', 'schedule', '-'], {
    input: 'wire_probe:\n  query: SELECT version FROM osquery_info\n  interval: 2\n  snapshot: true\n',
  });
  expect(sched.exitCode, sched.stderr).toBe(0);
  const enrollment = await srv.enrollment();
  const target = /^--tls_hostname=(.*)$/m.exec(enrollment.flags)![1];
  const rec = await startRecorder({
    target,
    cert: readFileSync(join(srv.dir, 'agent-cert.pem'), 'utf8'),
    key: readFileSync(join(srv.dir, 'agent-key.pem'), 'utf8'),
    ca: enrollment.cert,
  });
  return {
    srv,
    rec,
    enrollment: { ...enrollment, flags: enrollment.flags.replace(/^--tls_hostname=.*$/m, `--tls_hostname=${rec.hostname}`) },
  };
}

/** Drives a query and a carve through whatever agent runs, until every kind was seen. */
async function exerciseAll(srv: AgentServer, rec: Recorder, node: string, carvePath: string): Promise<Map<Kind, Fixture>> {
  await eventually(async () => (rec.exchanges.some((x) => kindOf(x) === 'log-result') ? true : undefined), 'a result log');
  const q = await srv.cli.run(['query', 'run', 'SELECT version FROM osquery_info', '--target', node, '--exit', '--wait', '3m']);
  expect(q.exitCode, q.stderr).toBe(0);
  const c = await srv.cli.run(['carves', 'run', carvePath, '--target', node]);
  expect(c.exitCode, c.stderr).toBe(0);
  await eventually(async () => (rec.exchanges.some((x) => kindOf(x) === 'log-status') ? true : undefined), 'a status log');
  const got = fixturesOf(rec.exchanges);
  expect([...got.keys()].sort()).toEqual([...KINDS].sort());
  return got;
}

describeRealAgent('what the real osquery agent sends (fixtures)', () => {
  let srv: AgentServer;
  let rec: Recorder;
  let agent: Osqueryd;
  let files: string;

  beforeAll(async () => {
    let enrollment: Enrollment;
    ({ srv, rec, enrollment } = await recordedServer());
    files = mkdtempSync(join(tmpdir(), 'wire-'));
    writeFileSync(join(files, 'carved.txt'), 'carved by the wire test\n');
    agent = startOsqueryd({ enrollment });
  });

  afterAll(async () => {
    await agent?.stop();
    await rec?.close();
    await srv?.stop();
    rmSync(files, { recursive: true, force: true });
  });

  it('sends each kind of request in the recorded shape', async () => {
    const got = await exerciseAll(srv, rec, await agent.identifier(), join(files, 'carved.txt'));
    if (RECORD) {
      mkdirSync(DIR, { recursive: true });
      for (const f of got.values()) writeFileSync(join(DIR, `${f.kind}.json`), JSON.stringify(f, null, 1) + '\n');
    }
    for (const kind of KINDS) {
      const want = readFixture(kind);
      expect
        .soft({ kind, headers: got.get(kind)!.headers, shape: got.get(kind)!.shape })
        .toEqual({ kind, headers: want.headers, shape: want.shape });
    }
  });
});

describe('the simulator sends what the real osquery agent sends', () => {
  let srv: AgentServer;
  let rec: Recorder;
  let sim: Simulator;

  beforeAll(async () => {
    let enrollment: Enrollment;
    ({ srv, rec, enrollment } = await recordedServer());
    sim = new Simulator({
      flags: parseAgentFlags(enrollment.flags.replaceAll('__SECRET_FILE__', '/dev/null').replaceAll('__CERT_FILE__', '/dev/null')),
      secret: enrollment.secret,
      // A Debian virtual machine, as the one the fixtures were recorded on (its tables' columns).
      seed: debianVmSeed(),
      ca: enrollment.cert,
      intervals: { distributed: 500, log: 1000, config: 5000 },
    });
    sim.add(1);
  });

  afterAll(async () => {
    await sim?.stop();
    await rec?.close();
    await srv?.stop();
  });

  it('each kind of request has the shape and headers recorded from osqueryd', async () => {
    await eventually(async () => (sim.enrolled === 1 ? true : undefined), 'the simulated agent to enroll');
    const node = (rec.exchanges.find((x) => x.endpoint === 'enroll')!.body as Record<string, unknown>).host_identifier as string;
    const got = await exerciseAll(srv, rec, node, '/etc/hosts');
    for (const kind of KINDS) {
      const want = readFixture(kind);
      expect
        .soft({ kind, headers: got.get(kind)!.headers, shape: got.get(kind)!.shape })
        .toEqual({ kind, headers: want.headers, shape: want.shape });
    }
  });
});
