// `fleetctl logs`, `schedule report` and `nodes show`'s status log (issue 30), end to end: the
// built CLI against a real `fleetctl server` process, lines sent through its agent door with
// osquery's protocol. Output as a person sees it (a terminal) and as a pipe gets it, --follow
// through a server restart, the usage errors, and osctrl's refusals.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { BIN, Cli, baseEnv, startServerProcess, type ServerProcess } from '../helpers/cli.js';
import { apiCall, apiToken, runInPty } from '../helpers/admin-cli.js';
import { eventually, parseFlags, type Flags } from '../helpers/osquery-agent.js';
import { added, logAgent, status, type LoggingNode } from '../helpers/osquery-logs.js';
import { selfSigned } from '../../src/server/agent/listener.js';
import { OsctrlStandIn } from '../helpers/osctrl-server.js';

const PASSWORD = 'logs-cli-password-1';
let dir: string;
let server: ServerProcess;
let serverArgs: string[];
let token: string;
let flags: Flags;
let secret: string;
let ca: string;
let cli: Cli;

const api = (method: string, path: string, body?: unknown) => apiCall(server.url, method, path, { token, body });
let agent: ReturnType<typeof logAgent>;
const enroll = (hostname?: string) => agent.enroll(hostname);
const send = (n: LoggingNode, type: 'result' | 'status', data: unknown[]) => agent.send(n, type, data);

let web: LoggingNode;
let db: LoggingNode;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'fleetctl-logs-'));
  const { certFile, keyFile } = selfSigned(dir, '127.0.0.1');
  ca = readFileSync(certFile, 'utf8');
  serverArgs = [
    '--db',
    join(dir, 'fleet.db'),
    '--create-env',
    'prod',
    '--agent-tls-cert',
    certFile,
    '--agent-tls-key',
    keyFile,
    '--sink-dir',
    dir,
  ];
  server = await startServerProcess([...serverArgs, '--agent-listen', '127.0.0.1:0'], { env: { FLEETCTL_ADMIN_PASSWORD: PASSWORD } });
  token = await apiToken(server.url, 'admin', PASSWORD);
  flags = parseFlags((await api('GET', '/api/v1/environments/prod/enroll/flags')).body.data);
  secret = (await api('GET', '/api/v1/environments/prod/enroll/secret')).body.data;
  agent = logAgent(flags, secret, ca);
  cli = new Cli();
  await cli.login(server.url, 'admin', 'prod', PASSWORD);
  web = await enroll('web-fra-0001');
  db = await enroll('db-fra-0002');
  // 120 lines of users_q: more than the 100 shown by default.
  for (let i = 0; i < 120; i += 40)
    await send(
      web,
      'result',
      Array.from({ length: 40 }, (_, k) => added('users_q', { user: `u${i + k}`, uid: String(i + k) }, i + k === 0 ? 0 : 1)),
    );
  await send(db, 'result', [added('users_q', { user: 'alice smith', uid: '1000' }, 0)]);
  await send(web, 'status', [
    status(1, 'Scheduled query may be outdated'),
    status(2, 'Error executing scheduled query nope: no such table: nope_table'),
  ]);
  const put = await api('PUT', '/api/v1/environments/prod/config/schedule', {
    users_q: { query: 'SELECT username AS user, uid FROM users', interval: 60 },
  });
  expect(put.status).toBe(200);
}, 180_000);

afterAll(async () => {
  await server?.stop();
  cli?.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

describe('fleetctl logs', () => {
  it('piped: the newest 100 lines as JSON lines, oldest first, each the API line', async () => {
    const r = await cli.run(['logs', '--query', 'users_q']);
    expect(r.exitCode).toBe(0);
    const lines = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines).toHaveLength(100);
    const ids = lines.map((l) => l.id);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(lines.at(-1)).toMatchObject({
      environment: 'prod',
      node_uuid: db.uuid,
      hostname: 'db-fra-0002',
      log_type: 'result',
      name: 'users_q',
      entry: { columns: { user: 'alice smith' } },
    });
    expect(r.stderr).toBe('');
  });

  it("a line fleetctl logs prints is the line a file sink delivered, byte for byte (but the store's id)", async () => {
    const sink = await api('POST', '/api/v1/log-sinks', {
      name: 'same-lines',
      type: 'file',
      source: 'result',
      environment_id: 0,
      config: { path: 'same.jsonl' },
    });
    expect(sink.status).toBe(200);
    const n = await enroll('same-0001');
    await send(n, 'result', [added('same_q', { user: 'ünïcode "quoted"', uid: '7' }, 0)]);
    const delivered = await eventually(async () => {
      const text = existsSync(join(dir, 'same.jsonl')) ? readFileSync(join(dir, 'same.jsonl'), 'utf8') : '';
      return text.split('\n').find((l) => l.includes('same_q'));
    }, 'the line at the file sink');
    const printed = (await cli.run(['logs', '--query', 'same_q'])).stdout.trim();
    expect(printed.replace(/^\{"id":\d+,/, '{')).toBe(delivered);
  });

  it('--all --node: every line of the range; -o table piped is TSV with NODE TIME QUERY ACTION ROW', async () => {
    const r = await cli.run(['logs', '--node', 'web-fra-0001', '--type', 'result', '--all', '-o', 'table']);
    expect(r.exitCode).toBe(0);
    const rows = r.stdout.trim().split('\n');
    expect(rows[0]).toBe('NODE\tTIME\tQUERY\tACTION\tROW');
    expect(rows).toHaveLength(121);
    expect(rows[1]).toMatch(/^web-fra-0001\t\d{4}-\d\d-\d\dT[\d:.]+Z\tusers_q\tadded\tuser=u0 uid=0$/);
  });

  it('filters: --severity, -q, --since; csv; --jq', async () => {
    const st = await cli.run(['logs', '--severity', 'error', '-o', 'csv']);
    expect(st.stdout).toContain('web-fra-0001');
    expect(st.stdout).toContain('error,scheduler.cpp:84 Error executing scheduled query nope: no such table: nope_table');
    expect(st.stdout).not.toContain('outdated');
    const q = await cli.run(['logs', '-q', 'ALICE', '--jq', '.[].entry.columns.user']);
    expect(q.stdout.trim()).toBe('alice smith'); // strings raw, as gh --jq prints them
    expect((await cli.run(['logs', '--since', '1h', '--query', 'users_q', '--limit', '3'])).stdout.trim().split('\n')).toHaveLength(3);
    expect((await cli.run(['logs', '--until', '1h', '--query', 'users_q'])).stdout).toBe('');
  });

  it('at a terminal: a table by the clock, the status line colored by severity; nothing matched says so', async () => {
    const p = runInPty(cli, ['logs', '--node', 'web-fra-0001', '--type', 'status']);
    const out = await p.expect(/scheduler\.cpp:84 Error executing/);
    expect(out).toMatch(/NODE\s+TIME\s+QUERY\s+ACTION\s+ROW/);
    expect(out).toMatch(/web-fra-0001\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s+warning\s+scheduler\.cpp:84 Scheduled query may be outdated/);
    expect((await p.done()).exitCode).toBe(0);
    const none = runInPty(cli, ['logs', '--query', 'nothing_like_it']);
    await none.expect(/No log lines in prod match\./);
    expect((await none.done()).exitCode).toBe(0);
  });

  it('refuses flags that cannot go together, and bad times, before any request (exit 2)', async () => {
    for (const [args, msg] of [
      [['--severity', 'warning', '--type', 'result'], /--severity is about status lines/],
      [['--query', 'q', '--type', 'status'], /status lines belong to no query/],
      [['--follow', '--until', '1h'], /cannot end at --until/],
      [['--since', 'yesterday'], /invalid --since "yesterday"/],
      [['--since', '1h', '--until', '2h'], /must be before --until/],
      [['--type', 'query'], /argument 'query' is invalid/],
    ] as const) {
      const r = await cli.run(['logs', ...args]);
      expect(r.exitCode, args.join(' ')).toBe(2);
      expect(r.stderr, args.join(' ')).toMatch(msg);
    }
  });

  it('--follow prints the newest lines, then a new line as the agent sends it, until Ctrl-C (exit 130)', async () => {
    const n = await enroll('follow-0001');
    await send(n, 'result', [added('follow_q', { v: 'before' }, 0)]);
    const p = execa('node', [BIN, 'logs', '--follow', '--node', 'follow-0001'], {
      env: baseEnv(cli.configDir),
      extendEnv: false,
      reject: false,
      buffer: false,
    });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    await eventually(async () => (out.includes('"before"') ? true : undefined), 'the backlog line');
    await send(n, 'result', [added('follow_q', { v: 'live' }, 1)]);
    await eventually(async () => (out.includes('"live"') ? true : undefined), 'the new line');
    expect(
      out
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).entry.columns.v),
    ).toEqual(['before', 'live']);
    p.kill('SIGINT');
    expect((await p).exitCode).toBe(130);
  });

  it('--follow outlives a server restart: it says so, reconnects and goes on from where it was', async () => {
    const n = await enroll('restart-0001');
    await send(n, 'result', [added('restart_q', { v: 'one' }, 0)]);
    const p = execa('node', [BIN, 'logs', '--follow', '--node', 'restart-0001', '--timeout', '10s'], {
      env: baseEnv(cli.configDir),
      extendEnv: false,
      reject: false,
      buffer: false,
    });
    let out = '';
    let err = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (err += d.toString()));
    await eventually(async () => (out.includes('"one"') ? true : undefined), 'the first line');
    // The same ports again: the follower's URL and the agents' flags stay right.
    const port = new URL(server.url).port;
    const agentPort = flags.hostname.split(':')[1];
    await server.stop();
    await eventually(async () => (/connection lost/.test(err) ? true : undefined), 'the follower noticing');
    server = await startServerProcess([...serverArgs, '--listen', `127.0.0.1:${port}`, '--agent-listen', `127.0.0.1:${agentPort}`], {
      env: { FLEETCTL_ADMIN_PASSWORD: PASSWORD },
    });
    await send(n, 'result', [added('restart_q', { v: 'two' }, 1)]);
    await eventually(async () => (out.includes('"two"') ? true : undefined), 'the line sent after the restart');
    expect(err).toMatch(/reconnected/);
    expect(
      out
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).entry.columns.v),
    ).toEqual(['one', 'two']);
    p.kill('SIGINT');
    await p;
  });
});

describe('fleetctl schedule report', () => {
  it('the current rows, NODE first then the columns; --fields picks columns; json is one item per node', async () => {
    const r = await cli.run(['schedule', 'report', 'prod', 'users_q', '--all']);
    expect(r.exitCode).toBe(0);
    const rows = r.stdout.trim().split('\n');
    expect(rows[0]).toBe('NODE\tUSER\tUID');
    expect(rows).toContain('db-fra-0002\talice smith\t1000');
    expect(rows.filter((l) => l.startsWith('web-fra-0001\t'))).toHaveLength(120);
    const f = await cli.run(['schedule', 'report', 'prod', 'users_q', '--node', 'db-fra-0002', '--fields', 'node,user', '-o', 'csv']);
    expect(f.stdout).toBe('node,user\ndb-fra-0002,alice smith\n');
    const j = JSON.parse((await cli.run(['schedule', 'report', 'prod', 'users_q', '-o', 'json'])).stdout);
    expect(j.map((n: { hostname: string }) => n.hostname)).toEqual(['db-fra-0002', 'web-fra-0001']);
    expect(j[0]).toMatchObject({
      node_uuid: db.uuid,
      kind: 'differential',
      rows: [{ user: 'alice smith', uid: '1000' }],
      truncated: false,
    });
  });

  it('a name neither scheduled nor reported exits 3', async () => {
    const r = await cli.run(['schedule', 'report', 'prod', 'no_such_query']);
    expect(r.exitCode).toBe(3);
    expect(r.stderr).toMatch(/no scheduled query "no_such_query"/);
  });
});

describe('fleetctl nodes show: the status log', () => {
  it("shows osquery's last warnings and errors at a terminal, and as status_problems in JSON", async () => {
    const p = runInPty(cli, ['nodes', 'show', 'web-fra-0001']);
    const out = await p.expect(/no such table: nope_table/);
    expect(out).toMatch(/Status log \(last warnings and errors\)/);
    expect(out).toMatch(/error\s+scheduler\.cpp:84 Error executing scheduled query nope/);
    expect(out).toMatch(/warning\s+scheduler\.cpp:84 Scheduled query may be outdated/);
    await p.done();
    const j = JSON.parse((await cli.run(['nodes', 'show', 'web-fra-0001', '-o', 'json'])).stdout);
    expect(j.status_problems.map((l: { entry: { severity: number } }) => l.entry.severity)).toEqual([2, 1]);
  });
});

describe('against osctrl', () => {
  let osctrl: OsctrlStandIn;
  let c: Cli;
  beforeAll(async () => {
    osctrl = new OsctrlStandIn();
    await osctrl.start();
    c = new Cli();
    const r = await c.run(['login', '--url', osctrl.url, '--env', 'prod', '--username', 'admin', '--password-stdin'], {
      input: 'osctrl-pass-1',
    });
    expect(r.exitCode).toBe(0);
  });
  afterAll(async () => {
    await osctrl?.stop();
    c?.cleanup();
  });

  it('refuses what osctrl cannot read in one line before any request (exit 8)', async () => {
    for (const args of [
      ['logs'],
      ['logs', '--node', 'x', '--query', 'q'],
      ['logs', '--node', 'x', '--all'],
      ['schedule', 'report', 'prod', 'q'],
    ]) {
      const before = osctrl.requests.length;
      const r = await c.run(args);
      expect(r.exitCode, args.join(' ')).toBe(8);
      expect(r.stderr, args.join(' ')).toMatch(/^error: .*: not supported by this server \(osctrl 0\.5\.4 has no such feature\)/m);
      expect(osctrl.requests.length, args.join(' ')).toBe(before);
    }
  });
});
