// Walking skeleton, end to end: the built fleetctl binary against a real server on 127.0.0.1
// (in this process, so the test can read what the server stored straight from its database).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { startTestServer, type TestServer } from '../helpers/api-server.js';
import { Cli } from '../helpers/cli.js';
import { Platforms, type Node } from '../../src/api/index.js';

let ts: TestServer;
let cli: Cli;
let prodId: number;

const cutoffIso = () => new Date(Date.now() - 72 * 3600_000).toISOString();

async function storedUuids(where: (q: any) => any = (q) => q): Promise<string[]> {
  const rows = await where(
    ts.server.deps.db
      .selectFrom('nodes')
      .innerJoin('node_seen', 'node_seen.node_id', 'nodes.id')
      .select('nodes.uuid')
      .where('nodes.environment_id', '=', prodId),
  ).execute();
  return rows.map((r: { uuid: string }) => r.uuid).sort();
}

async function listJson(args: string[]): Promise<Node[]> {
  const r = await cli.run(['nodes', 'list', ...args, '--json']);
  expect(r.stderr).toBe('');
  expect(r.exitCode).toBe(0);
  return JSON.parse(r.stdout) as Node[];
}

beforeAll(async () => {
  ts = await startTestServer();
  cli = new Cli();
  await cli.login(ts.url);
  prodId = (await ts.server.deps.db.selectFrom('environments').select('id').where('name', '=', 'prod').executeTakeFirstOrThrow()).id;
});

afterAll(async () => {
  cli?.cleanup();
  await ts?.close();
});

describe('login', () => {
  it('logs in with --password-stdin and reports where the token went', async () => {
    const c = new Cli();
    const r = await c.run(['login', '--url', ts.url, '--env', 'prod', '--username', 'admin', '--password-stdin'], {
      input: 'test-password-1\n',
    });
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/Logged in to http:\/\/127\.0\.0\.1:\d+ as admin/);
    expect(r.stderr).not.toContain('test-password-1');
    const status = await c.run(['auth', 'status', '--json']);
    expect(status.exitCode).toBe(0);
    const s = JSON.parse(status.stdout);
    expect(s).toMatchObject({ profile: 'default', url: ts.url, env: 'prod', username: 'admin', logged_in: true });
    expect(JSON.stringify(s)).not.toMatch(/eyJ/); // never the token
    c.cleanup();
  });

  it('exits 4 on a wrong password, and saves nothing', async () => {
    const c = new Cli();
    const r = await c.run(['login', '--url', ts.url, '--env', 'prod', '--username', 'admin', '--password-stdin'], {
      input: 'wrong-password',
    });
    expect(r.exitCode).toBe(4);
    expect(r.stderr).toMatch(/^error: invalid username or password \(unauthorized, HTTP 401\)/);
    expect(r.stdout).toBe('');
    const status = await c.run(['auth', 'status', '--json']);
    expect(status.exitCode).toBe(4);
    expect(JSON.parse(status.stdout).logged_in).toBe(false);
    c.cleanup();
  });

  it('exits 3 for an unknown environment', async () => {
    const c = new Cli();
    const r = await c.run(['login', '--url', ts.url, '--env', 'nope', '--username', 'admin', '--password-stdin'], {
      input: 'test-password-1',
    });
    expect(r.exitCode).toBe(3);
    expect(r.stderr).toMatch(/environment "nope" not found/);
    c.cleanup();
  });

  it('exits 2 without a terminal when the password flag is missing', async () => {
    const c = new Cli();
    const r = await c.run(['login', '--url', ts.url, '--env', 'prod', '--username', 'admin']);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/--password-stdin/);
    c.cleanup();
  });

  it('commands without a login exit 4 with a hint', async () => {
    const c = new Cli();
    const r = await c.run(['nodes', 'list', '--url', ts.url, '--env', 'prod']);
    expect(r.exitCode).toBe(4);
    expect(r.stderr).toMatch(/not logged in/);
    expect(r.stderr).toMatch(/fleetctl login/);
    c.cleanup();
  });

  it('a forged token (FLEETCTL_TOKEN) is refused with exit 4', async () => {
    const c = new Cli();
    const r = await c.run(['nodes', 'list', '--url', ts.url, '--env', 'prod'], {
      env: { FLEETCTL_TOKEN: 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhZG1pbiJ9.forged' },
    });
    expect(r.exitCode).toBe(4);
    expect(r.stderr).toMatch(/invalid token \(unauthorized, HTTP 401\)/);
    c.cleanup();
  });

  it('logout removes the token; the next command exits 4', async () => {
    const c = new Cli();
    await c.login(ts.url);
    const out = await c.run(['logout']);
    expect(out.exitCode).toBe(0);
    expect(out.stderr).toMatch(/Logged out of profile default/);
    const r = await c.run(['nodes', 'list']);
    expect(r.exitCode).toBe(4);
    c.cleanup();
  });
});

describe('nodes list', () => {
  it('shows the first page as TSV when piped, with headers', async () => {
    const r = await cli.run(['nodes', 'list']);
    expect(r.exitCode).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe('UUID\tHOSTNAME\tPLATFORM\tOSQUERY\tIP\tHEALTH\tLAST SEEN\tTAGS');
    expect(lines).toHaveLength(51); // header + default page size 50

    expect(r.stdout).not.toMatch(/\u001b\[/); // no colors when piped
  });

  it('--status active and inactive match what the server stored', async () => {
    const cutoff = cutoffIso();
    const active = await listJson(['--status', 'active', '--all']);
    const inactive = await listJson(['--status', 'inactive', '--all']);
    expect(active.map((n) => n.uuid).sort()).toEqual(await storedUuids((q) => q.where('last_seen', '>=', cutoff)));
    expect(inactive.map((n) => n.uuid).sort()).toEqual(
      await storedUuids((q) => q.where((eb: any) => eb.or([eb('last_seen', 'is', null), eb('last_seen', '<', cutoff)]))),
    );
    expect(active.length).toBeGreaterThan(100);
    expect(inactive.length).toBeGreaterThan(100);
    for (const n of inactive) expect(n.health.signals).toContain('inactive');
  });

  it('--platform buckets nodes as the contract says', async () => {
    let sum = 0;
    for (const p of Platforms) {
      const nodes = await listJson(['--platform', p, '--all', '--fields', 'uuid,platform']);
      const stored = await storedUuids((q) => q.where('nodes.platform_bucket', '=', p));
      expect(nodes.map((n) => n.uuid).sort()).toEqual(stored);
      sum += nodes.length;
    }
    expect(sum).toBe(1200);
    const darwin = await listJson(['--platform', 'darwin', '--limit', '5']);
    for (const n of darwin) expect(n.platform).toBe('darwin');
  });

  it('-q searches case-insensitively and treats % and _ literally', async () => {
    const nodes = await listJson(['-q', 'PROD-DB-', '--all']);
    expect(nodes.length).toBeGreaterThan(0);
    const stored = await ts.server.deps.db
      .selectFrom('nodes')
      .select('uuid')
      .where('environment_id', '=', prodId)
      .where(sql<boolean>`lower(hostname) like '%prod-db-%' or lower(localname) like '%prod-db-%'`)
      .execute();
    expect(nodes.map((n) => n.uuid).sort()).toEqual(stored.map((r) => r.uuid).sort());
    expect(await listJson(['-q', '%'])).toEqual([]);
    expect(await listJson(['-q', '_'])).toEqual([]);
  });

  it('sorts by every field in both orders, ties broken by id', async () => {
    const cases: [string, (n: Node) => string][] = [
      ['hostname', (n) => n.hostname],
      ['uuid', (n) => n.uuid],
      ['ip', (n) => n.ip_address],
      ['platform', (n) => n.platform],
      ['lastseen', (n) => n.last_seen],
    ];
    for (const [sort, key] of cases) {
      for (const order of ['asc', 'desc'] as const) {
        const nodes = await listJson(['--sort', sort, '--order', order, '--page-size', '200']);
        expect(nodes).toHaveLength(200);
        for (let i = 1; i < nodes.length; i++) {
          const [a, b] = [key(nodes[i - 1]), key(nodes[i])];
          const cmp = a < b ? -1 : a > b ? 1 : 0;
          if (order === 'asc') expect(cmp).toBeLessThanOrEqual(0);
          else expect(cmp).toBeGreaterThanOrEqual(0);
          if (cmp === 0) expect(order === 'asc' ? nodes[i - 1].id < nodes[i].id : nodes[i - 1].id > nodes[i].id).toBe(true);
        }
      }
    }
    // Default: last seen, newest first.
    const def = await listJson(['--limit', '20']);
    const sorted = [...def].sort((a, b) => (a.last_seen < b.last_seen ? 1 : a.last_seen > b.last_seen ? -1 : 0));
    expect(def.map((n) => n.uuid)).toEqual(sorted.map((n) => n.uuid));
  });

  it('--all returns every node exactly once, as one JSON array', async () => {
    const nodes = await listJson(['--all']);
    const uuids = nodes.map((n) => n.uuid);
    expect(new Set(uuids).size).toBe(uuids.length);
    expect([...uuids].sort()).toEqual(await storedUuids());
    // node_key is admin-only detail: never in list items.
    expect(nodes.some((n) => 'node_key' in n)).toBe(false);
  });

  it('--json items carry every field of api-spec 2.6', async () => {
    const [n] = await listJson(['--limit', '1']);
    for (const k of [
      'id',
      'uuid',
      'hostname',
      'localname',
      'ip_address',
      'platform',
      'osquery_version',
      'environment',
      'last_seen',
      'health',
      'posture',
      'tags',
      'uptime',
      'system_info',
    ])
      expect(n).toHaveProperty(k);
    expect(n.environment).toBe('prod');
    expect(Object.keys(n.system_info).sort()).toEqual(['bios', 'os', 'osquery', 'system']);
  });

  it('--limit stops after N nodes across pages; --page walks pages', async () => {
    expect(await listJson(['--limit', '7'])).toHaveLength(7);
    const p1 = await listJson(['--page', '1', '--page-size', '3', '--sort', 'hostname']);
    const p2 = await listJson(['--page', '2', '--page-size', '3', '--sort', 'hostname']);
    const both = await listJson(['--page-size', '6', '--sort', 'hostname']);
    expect([...p1, ...p2].map((n) => n.uuid)).toEqual(both.map((n) => n.uuid));
  });

  it('rejects bad flag values with exit 2 and usage', async () => {
    for (const args of [['--status', 'sleeping'], ['--platform', 'amiga'], ['--sort', 'color'], ['--page', '0'], ['--bogus']]) {
      const r = await cli.run(['nodes', 'list', ...args]);
      expect(r.exitCode, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(/error:/);
      expect(r.stdout).toBe('');
    }
  });
});

describe('nodes show and delete', () => {
  it('shows a node by hostname; its node_key (the agent credential) only with --show-secret, in every format', async () => {
    const row = await ts.server.deps.db
      .selectFrom('nodes')
      .select(['uuid', 'hostname', 'node_key'])
      .where('environment_id', '=', prodId)
      .executeTakeFirstOrThrow();
    const r = await cli.run(['nodes', 'show', row.hostname, '-o', 'json']);
    expect(r.exitCode).toBe(0);
    const node = JSON.parse(r.stdout) as Node;
    expect(node.uuid).toBe(row.uuid);
    expect('node_key' in node).toBe(false);
    for (const fmt of ['table', 'yaml', 'csv', 'jsonl']) {
      const out = await cli.run(['nodes', 'show', row.hostname, '-o', fmt]);
      expect(out.stdout, fmt).not.toContain(row.node_key);
    }
    const shown = await cli.run(['nodes', 'show', row.hostname, '-o', 'json', '--show-secret']);
    expect((JSON.parse(shown.stdout) as Node).node_key).toBe(row.node_key);
    const missing = await cli.run(['nodes', 'show', 'no-such-host']);
    expect(missing.exitCode).toBe(3);
    expect(missing.stderr).toMatch(/not found/);
  });

  it('the node names in the --help examples exist in the demo fleet, so the examples work as written', async () => {
    const help = (await cli.run(['nodes', '--help'])).stdout + (await cli.run(['nodes', 'show', '--help'])).stdout;
    const names = [...new Set(help.match(/\bprod-[a-z]+-\d{4}\b/g))];
    expect(names.length).toBeGreaterThan(0);
    for (const name of names) {
      const r = await cli.run(['nodes', 'show', name, '--jq', '.hostname']);
      expect({ name, exitCode: r.exitCode, stdout: r.stdout }).toEqual({ name, exitCode: 0, stdout: `${name}\n` });
    }
  });

  it('refuses to delete without --yes and without a terminal, and deletes nothing', async () => {
    const before = await storedUuids();
    const r = await cli.run(['nodes', 'delete', before[0]]);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/--yes/);
    expect(await storedUuids()).toEqual(before);
  });

  it('deletes with --yes, records an audit row, and a second delete exits 3', async () => {
    const [uuid] = await storedUuids();
    const r = await cli.run(['nodes', 'delete', uuid, '--yes']);
    expect(r.exitCode).toBe(0);
    expect(r.stderr).toMatch(new RegExp(`^Deleted node \\S+ \\(${uuid}\\)$`, 'm'));
    expect(await storedUuids()).not.toContain(uuid);
    const audit = await ts.server.deps.db.selectFrom('audit_logs').selectAll().where('line', 'like', `%${uuid}%`).execute();
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ username: 'admin', log_type: 3 });
    const again = await cli.run(['nodes', 'delete', uuid, '--yes']);
    expect(again.exitCode).toBe(3);
  });

  it('takes what nodes show takes: a hostname; the confirmation names the host; a bad name deletes nothing', async () => {
    const [a, b] = (await storedUuids()).slice(-2);
    const hostA = JSON.parse((await cli.run(['nodes', 'show', a, '--json'])).stdout).hostname as string;
    const hostB = JSON.parse((await cli.run(['nodes', 'show', b, '--json'])).stdout).hostname as string;

    const refused = await cli.run(['nodes', 'delete', hostA, hostB]);
    expect(refused.exitCode).toBe(2);
    expect(refused.stderr).toContain(`Delete 2 nodes from prod: ${hostA} (${a}), ${hostB} (${b}); pass --yes`);

    const typo = await cli.run(['nodes', 'delete', hostA, 'no-such-host-zz', '--yes']);
    expect(typo.exitCode).toBe(3);
    expect(await storedUuids()).toEqual(expect.arrayContaining([a, b]));

    const r = await cli.run(['nodes', 'delete', hostA, hostB, '--yes', '--json']);
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual([
      { uuid: a, hostname: hostA, deleted: true },
      { uuid: b, hostname: hostB, deleted: true },
    ]);
    expect(await storedUuids()).not.toContain(a);
    expect(await storedUuids()).not.toContain(b);
  });

  it('an env user may list but not delete (exit 5)', async () => {
    const c = new Cli();
    await c.login(ts.url, 'analyst');
    const [uuid] = await storedUuids();
    expect((await c.run(['nodes', 'list', '--limit', '1'])).exitCode).toBe(0);
    const r = await c.run(['nodes', 'delete', uuid, '--yes']);
    expect(r.exitCode).toBe(5);
    expect(r.stderr).toMatch(/forbidden/);
    expect(await storedUuids()).toContain(uuid);
    c.cleanup();
  });
});

describe('env map', () => {
  it('lists accessible environments by name, id or uuid', async () => {
    const r = await cli.run(['env', 'map', '--json']);
    expect(r.exitCode).toBe(0);
    const map = JSON.parse(r.stdout);
    expect(Object.keys(map).sort()).toEqual(['dev', 'prod', 'staging']);
    expect(map.prod).toMatchObject({ name: 'prod', id: prodId });
    const byId = JSON.parse((await cli.run(['env', 'map', 'id', '--json'])).stdout);
    expect(byId[String(prodId)].name).toBe('prod');
    const bad = await cli.run(['env', 'map', 'color']);
    expect(bad.exitCode).toBe(2);
  });

  it('shows only the environments of a restricted user', async () => {
    const c = new Cli();
    await c.login(ts.url, 'dev-user', 'dev');
    const map = JSON.parse((await c.run(['env', 'map', '--json'])).stdout);
    expect(Object.keys(map)).toEqual(['dev']);
    c.cleanup();
  });
});
