// `fleetctl query` and `carves run|download` against a small stand-in of the query/carve API
// (osctrl-api's paths and shapes), for what only a misbehaving or slow server shows: answers
// streamed as they arrive, nodes that never answer, an archive whose size does not match.
// The end-to-end runs against `fleetctl server` with simulated agents are in agents.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cli } from '../helpers/cli.js';
import { runInPty } from '../helpers/admin-cli.js';

let server: Server;
let url: string;
const cli = new Cli();
const dir = mkdtempSync(join(tmpdir(), 'fleetctl-qcli-'));
const bodies: any[] = [];
const actions: string[] = [];
/** Result polls since the last query was started: the mock answers by poll, not by the clock. */
let polls = 0;
const archive = Buffer.alloc(1500, 7);
const LONG_HOST = 'win-sfo-00006-95c4e2b1d7.corp.example.com';
const LONG_PATH = '/opt/vendor/backup-agent/current/bin/backup-agent-daemon';
let archiveBytes = archive;

function query(name: string, expected: number) {
  return {
    id: 1,
    name,
    query: 'SELECT * FROM os_version',
    path: '',
    type: name.startsWith('carve') ? 'carve' : 'query',
    target: '',
    targets: [],
    creator: 'admin',
    environment_id: 1,
    active: true,
    completed: false,
    deleted: false,
    expired: false,
    hidden: false,
    protected: false,
    carve_status: 'ACTIVE',
    errors: 0,
    executions: 0,
    expected,
    expiration: '',
    extra_data: '',
    created_at: new Date().toISOString(),
    updated_at: new Date().toISOString(),
  };
}

beforeAll(async () => {
  server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      const u = new URL(req.url!, 'http://x');
      const send = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      if (req.method === 'POST' && u.pathname === '/api/v1/queries/prod') {
        const body = JSON.parse(raw);
        bodies.push(body);
        polls = 0;
        if (body.query === 'SELECT * FROM wide') return send(200, { query_name: 'q_wide', expected: 2 });
        return send(200, { query_name: 'q_1', expected: 3 });
      }
      if (u.pathname === '/api/v1/queries/prod/results/q_wide') {
        // The first answer is short; the second, a poll later, has a long hostname and a long value.
        // The server says how long the targets' hostnames are (hostname_width) before either arrives.
        const after = Number(u.searchParams.get('after_id') ?? 0);
        const all = [
          {
            id: 1,
            created_at: '2026-01-01T00:00:00Z',
            uuid: 'AAAA',
            hostname: 'web-1',
            status: 0,
            rows: [{ name: 'sshd', path: '/usr/sbin/sshd' }],
          },
          {
            id: 2,
            created_at: '2026-01-01T00:00:01Z',
            uuid: 'BBBB',
            hostname: LONG_HOST,
            status: 0,
            rows: [{ name: 'backup-agent', path: LONG_PATH }],
          },
        ];
        const items = all.slice(0, after === 0 ? 1 : 2).filter((i) => i.id > after);
        return send(200, {
          items,
          page: 1,
          page_size: 1000,
          total_items: items.length,
          total_pages: 1,
          expected: 2,
          answered: Math.min(2, after + 1),
          hostname_width: LONG_HOST.length,
        });
      }
      if (u.pathname === '/api/v1/queries/prod/q_1') return send(200, query('q_1', 3));
      const action = /^\/api\/v1\/(queries|carves)\/prod\/(cancel|complete|expire)\/(\w+)$/.exec(u.pathname);
      if (req.method === 'POST' && action) {
        actions.push(`${action[1]} ${action[2]} ${action[3]}`);
        return send(200, { message: `${action[3]} ${action[2]}` });
      }
      if (u.pathname === '/api/v1/queries/prod/results/q_1') {
        // Two nodes answer, the first by the first poll, the second by the next; the third never does.
        const seen = ++polls === 1 ? 1 : 2;
        const after = Number(u.searchParams.get('after_id') ?? 0);
        const items = [
          {
            id: 1,
            created_at: '2026-01-01T00:00:00Z',
            uuid: 'AAAA',
            hostname: 'web-1',
            status: 0,
            rows: [{ name: 'Ubuntu', version: '22.04' }],
          },
          { id: 2, created_at: '2026-01-01T00:00:01Z', uuid: 'BBBB', hostname: 'db-1', status: 1, error: 'no such table: nope', rows: [] },
        ]
          .slice(0, seen)
          .filter((i) => i.id > after);
        return send(200, { items, page: 1, page_size: 1000, total_items: items.length, total_pages: 1, expected: 3, answered: seen });
      }
      if (req.method === 'POST' && u.pathname === '/api/v1/carves/prod') {
        bodies.push(JSON.parse(raw));
        return send(201, { query_name: 'carve_1', expected: 1 });
      }
      if (u.pathname === '/api/v1/carves/prod/carve_1') {
        return send(200, {
          query: { ...query('carve_1', 1), carve_status: 'COMPLETED' },
          files: [
            {
              uuid: 'AAAA',
              carve_id: 'c',
              session_id: 's1',
              path: '/etc/hosts',
              status: 'COMPLETED',
              archived: false,
              block_size: 1000,
              carve_size: 1500,
              total_blocks: 2,
              completed_blocks: 2,
              created_at: '',
              completed_at: '',
            },
          ],
        });
      }
      if (u.pathname === '/api/v1/carves/prod/archive/carve_1') {
        res.writeHead(200, { 'content-type': 'application/octet-stream', 'x-carve-size': '1500', 'x-carve-blocks': '2' });
        return res.end(archiveBytes);
      }
      send(404, { code: 'not_found', error: 'not found' });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});

afterAll(() => {
  server.close();
  cli.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

const env = () => ({ FLEETCTL_URL: url, FLEETCTL_TOKEN: 'x', FLEETCTL_ENV: 'prod' });

describe('query run', () => {
  // The third target never answers: each run waits its --wait out, long enough (5 s) for the
  // polls that bring the two answers on a loaded machine.
  it('sends the targets as osctrl lists, streams one item per node answer, and says who did not answer', async () => {
    const r = await cli.run(
      [
        'query',
        'run',
        'SELECT * FROM os_version',
        '--target',
        'platform:ubuntu,tag:web',
        '--target',
        'web-1',
        '--target',
        '0D5E3B8C-1111-4222-8333-444455556666',
        '--wait',
        '5s',
        '--json',
      ],
      { env: env() },
    );
    expect(r.exitCode).toBe(9); // incomplete: a target did not answer, one answered with an error
    // The expiry is the wait plus a minute (in seconds for fleetctl's server, whole hours for osctrl's exp_hours).
    expect(bodies.at(-1)).toEqual({
      query: 'SELECT * FROM os_version',
      platform_list: ['ubuntu'],
      tag_list: ['web'],
      host_list: ['web-1'],
      uuid_list: ['0D5E3B8C-1111-4222-8333-444455556666'],
      exp_hours: 1,
      expire_seconds: 65,
    });
    const items = JSON.parse(r.stdout);
    expect(items.map((i: { uuid: string }) => i.uuid)).toEqual(['AAAA', 'BBBB']);
    expect(r.stderr).toMatch(/Query q_1 started on 3 nodes in prod/);
    expect(r.stderr).toMatch(
      /error: 1 of 3 targets did not answer \(not within 5s\); 1 of 2 answered with an error; the query was stopped/,
    );
    expect(actions.at(-1)).toBe('queries complete q_1'); // stopped on the server when the command ended
    expect(r.stderr).not.toMatch(/answered,/); // no progress line when stderr is not a terminal
  });

  it('table/csv: one line per row with its node; an error answer is a line on stderr', async () => {
    const r = await cli.run(['query', 'run', 'SELECT * FROM os_version', '--wait', '5s', '-o', 'csv'], { env: env() });
    expect(r.exitCode).toBe(9);
    expect(r.stdout).toBe('node,name,version\nweb-1,Ubuntu,22.04\n');
    expect(r.stderr).toMatch(/db-1: error: no such table: nope/);
  });

  it('at a terminal: a table with the node column and an answered/expected progress line', async () => {
    const p = runInPty(cli, ['query', 'run', 'SELECT * FROM os_version', '--wait', '5s'], env());
    await p.expect(/\d\/3 answered/);
    const { exitCode, output } = await p.done();
    expect(exitCode).toBe(9);
    expect(output).toMatch(/NODE\s+NAME\s+VERSION/);
    expect(output).toMatch(/web-1\s+Ubuntu\s+22\.04/);
  });

  it("a streamed table at a terminal: NODE sized from the targets' hostnames, later longer values fit, nothing cut", async () => {
    // 130 columns, as in the report of issue 20 (hostnames were cut with half the terminal unused).
    const p = runInPty(cli, ['query', 'run', 'SELECT * FROM wide', '--wait', '30s'], env(), { cols: 130 });
    const { exitCode, output } = await p.done();
    expect(exitCode).toBe(0);
    const lines = output.split('\n');
    const header = lines.find((l) => l.startsWith('NODE'))!;
    expect(header).toMatch(new RegExp(`^NODE {${LONG_HOST.length - 4 + 2}}NAME`)); // NODE as wide as the longest target hostname
    expect(output).toContain(LONG_HOST);
    expect(output).toContain(LONG_PATH); // the spare width went to the columns: the later, longer path is whole
    expect(output).not.toContain('…');
  });

  it('a --fields typo in a machine format exits 2 before a query is started', async () => {
    const n = bodies.length;
    const r = await cli.run(['query', 'run', 'SELECT 1', '--json', '--fields', 'uuid,hostnme'], { env: env() });
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/unknown field "hostnme"; valid fields: id, created_at, uuid, hostname/);
    expect(bodies.length).toBe(n);
  });

  it('bad targets exit 2 before any request', async () => {
    const n = bodies.length;
    for (const t of ['all,tag:x', 'colour:red', 'tag:']) {
      const r = await cli.run(['query', 'run', 'SELECT 1', '--target', t], { env: env() });
      expect(r.exitCode, t).toBe(2);
    }
    expect(bodies.length).toBe(n);
  });
});

describe('carves run and download', () => {
  it('run prints the carve name on stdout; download writes a checked archive', async () => {
    const run = await cli.run(['carves', 'run', '/etc/hosts', '--target', 'web-1', '--wait', '5s'], { env: env() });
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toBe('carve_1\n');
    expect(bodies.at(-1)).toEqual({ path: '/etc/hosts', host_list: ['web-1'], exp_hours: 1, expire_seconds: 65 });
    const file = join(dir, 'a.tar');
    const dl = await cli.run(['carves', 'download', 'carve_1', '-O', file], { env: env() });
    expect(dl.exitCode).toBe(0);
    expect(readFileSync(file)).toEqual(archive);
    expect(dl.stderr).toMatch(/1500 bytes, 2 blocks/);
    const again = await cli.run(['carves', 'download', 'carve_1', '-O', file], { env: env() });
    expect(again.exitCode).toBe(6);
  });

  it('download never writes through a planted DEST.partial symlink, and the archive is 0600 (issue 18)', async () => {
    const victim = join(dir, 'victim.txt');
    writeFileSync(victim, 'keep me\n');
    const file = join(dir, 'planted.tar');
    symlinkSync(victim, `${file}.partial`);
    const dl = await cli.run(['carves', 'download', 'carve_1', '-O', file], { env: env() });
    expect(dl.exitCode).toBe(0);
    expect(readFileSync(victim, 'utf8')).toBe('keep me\n');
    expect(readFileSync(file)).toEqual(archive);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(existsSync(`${file}.partial`)).toBe(false);
  });

  it('an archive whose size differs from the carve is refused and not left on disk', async () => {
    archiveBytes = archive.subarray(0, 900);
    try {
      const file = join(dir, 'short.tar');
      const dl = await cli.run(['carves', 'download', 'carve_1', '-O', file], { env: env() });
      expect(dl.exitCode).toBe(1);
      expect(dl.stderr).toMatch(/900 bytes received, the node announced 1500/);
      expect(existsSync(file)).toBe(false);
      expect(existsSync(`${file}.partial`)).toBe(false);
    } finally {
      archiveBytes = archive;
    }
  });
});
