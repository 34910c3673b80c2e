// The log spool and the sinks from outside (issue 28), against a real `fleetctl server` process
// and the built CLI: a stdout sink is NDJSON on stdout and nothing else is; `sinks edit`,
// `enable`, `disable` and `test` as a user runs them, secrets never shown nor typed on a command
// line; and a kill -9 with a backlog loses nothing: after the restart, every acknowledged line
// reaches the sink once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { Cli, startServerProcess, type ServerProcess } from '../helpers/cli.js';
import { apiCall, apiToken } from '../helpers/admin-cli.js';
import { agentPost, eventually, hostDetails, parseFlags, type Flags } from '../helpers/osquery-agent.js';
import { selfSigned } from '../../src/server/agent/listener.js';
import { fullProgram } from '../../src/program.js';
import { allCommands, readProgram } from '../../src/gen/model.js';

/** An example line as a shell would split it (single and double quotes). */
function words(line: string): string[] {
  const out: string[] = [];
  const re = /'([^']*)'|"([^"]*)"|(\S+)/g;
  for (let m; (m = re.exec(line));) out.push(m[1] ?? m[2] ?? m[3]);
  return out;
}

const PASSWORD = 'spool-test-password-1';
let dir: string;
let server: ServerProcess;
let token: string;
let flags: Flags;
let secret: string;
let ca: string;
let args: string[];
let cli: Cli;
let stdout = '';

const api = (method: string, path: string, body?: unknown) => apiCall(server.url, method, path, { token, body });
const post = (ep: string, body: unknown) => agentPost(flags.hostname, flags.endpoint[ep], body, { ca });

/** Starts (or restarts, on the same database) the server; its stdout is kept apart. */
async function start(): Promise<void> {
  server = await startServerProcess(args, { env: { FLEETCTL_ADMIN_PASSWORD: PASSWORD, SIEM_TOKEN: 'token-from-the-environment' } });
  stdout = '';
  server.proc.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  token = await apiToken(server.url, 'admin', PASSWORD);
  flags = parseFlags((await api('GET', '/api/v1/environments/prod/enroll/flags')).body.data);
  // The agent listener's port is new at each start; the flags name the one of the first.
  flags.hostname = /Agent API \(osquery TLS\) listening on https:\/\/([^;\s]+)/.exec(server.output())![1]!;
  secret = (await api('GET', '/api/v1/environments/prod/enroll/secret')).body.data;
}

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

const results = (tag: string, from: number, n: number) =>
  Array.from({ length: n }, (_, i) => ({
    name: 'pack_spool_q',
    unixTime: 1700000000,
    columns: { tag, i: String(from + i) },
    action: 'added',
  }));

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'fleetctl-spool-e2e-'));
  const { certFile, keyFile } = selfSigned(dir, '127.0.0.1');
  ca = readFileSync(certFile, 'utf8');
  args = [
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
    '--sink-dir',
    dir,
    '--log',
  ];
  await start();
  cli = new Cli();
  await cli.login(server.url, 'admin', 'prod', PASSWORD);
});

afterAll(async () => {
  await server?.stop();
  cli?.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

describe('a stdout sink', () => {
  it("writes NDJSON envelopes on the server's stdout, and the server writes nothing else there (banner and --log on stderr)", async () => {
    const add = await cli.run(['sinks', 'add', 'global', '--name', 'out', '--type', 'stdout', '--source', 'result']);
    expect(add.exitCode, add.stderr).toBe(0);
    const n = await enroll();
    const tag = randomUUID();
    expect((await post('log', { node_key: n.key, log_type: 'result', data: results(tag, 0, 5) })).status).toBe(200);
    await eventually(
      async () => (stdout.split('\n').filter((l) => l.includes(tag)).length === 5 ? true : undefined),
      'the 5 lines on stdout',
    );
    const lines = stdout.trimEnd().split('\n');
    // Every line of stdout is a JSON envelope: the listening banner and the request log are not there.
    for (const l of lines) expect(() => JSON.parse(l), l).not.toThrow();
    expect(JSON.parse(lines.find((l) => l.includes(tag))!)).toMatchObject({
      environment: 'prod',
      node_uuid: n.uuid,
      log_type: 'result',
      name: 'pack_spool_q',
    });
    expect(server.output()).toMatch(/reference server listening on/);
    expect(server.output()).toMatch(/"door":"agent"/);
    expect((await cli.run(['sinks', 'disable', 'out', 'global'])).exitCode).toBe(0);
  });
});

describe('sinks edit, enable, disable, test', () => {
  let collector: Server;
  const collected: { auth?: string; body: any[] }[] = [];
  let url: string;
  beforeAll(async () => {
    collector = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        collected.push({ auth: req.headers.authorization, body: JSON.parse(body) });
        res.writeHead(202).end('accepted');
      });
    });
    await new Promise<void>((r) => collector.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(collector.address() as { port: number }).port}/in`;
  });
  afterAll(() => collector?.close());

  it('a secret is never shown, nor taken on the command line; edit keeps it; test prints what the destination said', async () => {
    const cfg = join(dir, 'siem.json');
    writeFileSync(cfg, JSON.stringify({ url, headers: { Authorization: 'Bearer s3cret-value' } }));
    const add = await cli.run([
      'sinks',
      'add',
      'global',
      '--name',
      'siem',
      '--type',
      'http',
      '--source',
      'status',
      '--config',
      `@${cfg}`,
      '-o',
      'json',
    ]);
    expect(add.exitCode, add.stderr).toBe(0);
    expect(add.stdout).not.toContain('s3cret-value');
    expect(JSON.parse(add.stdout).config).toEqual({ url, headers: { Authorization: '<redacted>' } });
    const shown = await cli.run(['sinks', 'show', 'siem', 'global']);
    expect(shown.stdout).not.toContain('s3cret-value');
    expect(shown.stdout).toContain('<redacted>');

    const typed = await cli.run(['sinks', 'edit', 'siem', 'global', '--set', 'headers.Authorization=Bearer other']);
    expect(typed.exitCode).toBe(2);
    expect(typed.stderr).toMatch(/^error: --set headers\.Authorization: secrets are not given on the command line/);
    expect(typed.stderr).toMatch(/hint: use --set headers\.Authorization_env=VARIABLE/);

    // An edit of another key keeps the secret the server has.
    const edit = await cli.run(['sinks', 'edit', 'siem', 'global', '--set', 'timeout_seconds=5', '--info', 'the SIEM gateway']);
    expect(edit.exitCode, edit.stderr).toBe(0);
    expect(edit.stderr).toMatch(/^Changed log sink \d+ \(siem\)\n$/);
    const test = await cli.run(['sinks', 'test', 'siem', 'global']);
    expect(test.exitCode, test.stderr).toBe(0);
    expect(test.stdout).toMatch(/^ok: HTTP 202 accepted \(\d+ ms\)\n$/);
    expect(collected.at(-1)!.auth).toBe('Bearer s3cret-value');
    expect(collected.at(-1)!.body[0]).toMatchObject({ node_uuid: 'fleetctl-sink-test', log_type: 'status' });

    // The secret from the server's environment instead: the header's value becomes the variable's.
    const byEnv = await cli.run(['sinks', 'edit', 'siem', 'global', '--unset', 'headers', '--set', 'headers_env.Authorization=SIEM_TOKEN']);
    expect(byEnv.exitCode, byEnv.stderr).toBe(0);
    expect((await cli.run(['sinks', 'test', 'siem', 'global'])).exitCode).toBe(0);
    expect(collected.at(-1)!.auth).toBe('token-from-the-environment');
    const bad = await cli.run(['sinks', 'edit', 'siem', 'global', '--set', 'headers_env.Authorization=NO_SUCH_VARIABLE']);
    expect(bad.exitCode).toBe(1);
    expect(bad.stderr).toMatch(/config\.headers_env\.Authorization: NO_SUCH_VARIABLE is not set in the server's environment/);

    const audit = await api('GET', `/api/v1/audit-logs?q=${encodeURIComponent('log sink')}&limit=50`);
    expect(JSON.stringify(audit.body)).not.toContain('s3cret-value');
    expect(JSON.stringify(audit.body)).toMatch(/changed: info; config \(timeout_seconds\)/);
  });

  it('disable stops a sink and keeps nothing for it; enable starts it at the newest entries; a failing test exits 1', async () => {
    const n = await enroll();
    const off = await cli.run(['sinks', 'disable', 'siem', 'global']);
    expect(off.exitCode).toBe(0);
    const tag = randomUUID();
    expect(
      (await post('log', { node_key: n.key, log_type: 'status', data: [{ message: `while-off ${tag}`, severity: '0' }] })).status,
    ).toBe(200);
    expect((await cli.run(['sinks', 'enable', 'siem', 'global'])).exitCode).toBe(0);
    expect((await post('log', { node_key: n.key, log_type: 'status', data: [{ message: `while-on ${tag}`, severity: '0' }] })).status).toBe(
      200,
    );
    await eventually(async () => (JSON.stringify(collected).includes(`while-on ${tag}`) ? true : undefined), 'the line sent while on');
    expect(JSON.stringify(collected)).not.toContain(`while-off ${tag}`);
    const list = await cli.run(['sinks', 'list', 'global', '-o', 'json']);
    const siem = JSON.parse(list.stdout).find((s: any) => s.name === 'siem');
    expect(siem.state).toMatchObject({ supported: true, backlog_entries: 0 });
    expect(siem.state.delivered).toBeGreaterThan(0);

    // A port nothing listens on.
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as { port: number }).port;
    await new Promise((r) => closed.close(r));
    expect((await cli.run(['sinks', 'edit', 'siem', 'global', '--set', `url=http://127.0.0.1:${port}/closed`])).exitCode).toBe(0);
    const failing = await cli.run(['sinks', 'test', 'siem', 'global']);
    expect(failing.exitCode).toBe(1);
    expect(failing.stdout).toMatch(
      new RegExp(`^failed: http://127\\.0\\.0\\.1:${port}/closed: connect ECONNREFUSED 127\\.0\\.0\\.1:${port} \\(\\d+ ms\\)\\n$`),
    );
    expect(failing.stderr).toMatch(/^error: log sink siem: the test entry was not delivered/);
    expect((await cli.run(['sinks', 'remove', String(siem.id), '--yes'])).exitCode).toBe(0);
  });
});

describe('the examples of sinks add, edit, enable, disable and test', () => {
  it('run as written, in that order, against a server with SIEM_TOKEN in its environment and siem.json beside the CLI', async () => {
    const verbs = ['add', 'edit', 'enable', 'disable', 'test'];
    const commands = allCommands(readProgram(await fullProgram()).root).filter((c) => c.path[0] === 'sinks' && verbs.includes(c.path[1]));
    const examples = verbs.flatMap((v) => commands.find((c) => c.path[1] === v)!.examples);
    expect(examples.length).toBeGreaterThanOrEqual(8);
    const cwd = mkdtempSync(join(tmpdir(), 'fleetctl-examples-'));
    writeFileSync(join(cwd, 'siem.json'), JSON.stringify({ url: 'https://logs.example.com/in', timeout_seconds: 5 }));
    try {
      for (const line of examples) {
        const argv = words(line);
        expect(argv[0]).toBe('fleetctl');
        const r = await cli.run(argv.slice(1), { cwd });
        expect({ line, exit: r.exitCode, stderr: r.exitCode ? r.stderr : '' }).toEqual({ line, exit: 0, stderr: '' });
      }
    } finally {
      rmSync(cwd, { recursive: true, force: true });
    }
    const archive = (await api('GET', '/api/v1/log-sinks')).body.find((s: any) => s.name === 'archive');
    expect(archive).toMatchObject({ enabled: false });
    for (const name of ['archive', 'siem']) {
      const s = (await api('GET', '/api/v1/log-sinks')).body.find((x: any) => x.name === name);
      expect((await api('DELETE', `/api/v1/log-sinks/${s.id}`)).status).toBe(200);
    }
  });
});

describe('kill -9 with a backlog', () => {
  let down: Server;
  const got = new Map<string, number>();
  let up = false;
  beforeAll(async () => {
    down = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        if (!up) return res.writeHead(503).end('down');
        for (const e of JSON.parse(body)) got.set(e.entry.columns.i, (got.get(e.entry.columns.i) ?? 0) + 1);
        res.writeHead(200).end('ok');
      });
    });
    await new Promise<void>((r) => down.listen(0, '127.0.0.1', r));
  });
  afterAll(() => down?.close());

  it('every line acknowledged before the kill reaches the sink after the restart, each once', async () => {
    const url = `http://127.0.0.1:${(down.address() as { port: number }).port}/in`;
    expect(
      (await api('POST', '/api/v1/log-sinks', { name: 'after-crash', type: 'http', source: 'result', environment_id: 0, config: { url } }))
        .status,
    ).toBe(200);
    const n = await enroll();
    const tag = randomUUID();
    let acked = 0;
    for (let b = 0; b < 20; b++) {
      const r = await post('log', { node_key: n.key, log_type: 'result', data: results(tag, b * 100, 100) });
      if (r.status === 200) acked += 100;
    }
    expect(acked).toBe(2000);
    const before = (await api('GET', '/api/v1/log-sinks')).body.find((s: any) => s.name === 'after-crash');
    expect(before.state.backlog_entries).toBe(2000);
    server.proc.kill('SIGKILL');
    await server.proc;
    up = true;
    await start();
    await eventually(async () => (got.size === 2000 ? true : undefined), 'the 2,000 lines after the restart');
    expect([...got.values()].every((c) => c === 1)).toBe(true);
    const after = await eventually(async () => {
      const s = (await api('GET', '/api/v1/log-sinks')).body.find((x: any) => x.name === 'after-crash');
      return s.state.backlog_entries === 0 ? s : undefined;
    }, 'the backlog to be gone');
    expect(after.state.delivered).toBe(2000);
  });
});
