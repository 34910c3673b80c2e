// Every command group of the built CLI against an osctrl 0.5.4 stand-in that answers from wire data
// recorded against the real osctrl-api with agents enrolled through osctrl-tls
// (test/helpers/osctrl-server.ts, test/fixtures/osctrl/recorded.json): what works gives the same
// output shape as against our server, what osctrl lacks is refused in one line (exit 8) before any
// request, and writes send what osctrl needs to really take effect (issue 19).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Cli } from '../helpers/cli.js';
import { OSCTRL_PASSWORD, OsctrlStandIn, PROD, DEV, RECORDED, rec } from '../helpers/osctrl-server.js';

let osctrl: OsctrlStandIn;
let cli: Cli;
const extra: Cli[] = [];

async function run(args: string[], input?: string, c: Cli = cli) {
  const before = osctrl.requests.length;
  const r = await c.run(args, { input });
  return { ...r, sent: osctrl.sent(before) };
}
async function loginAs(username: string, env = 'prod', password = OSCTRL_PASSWORD) {
  const c = new Cli();
  extra.push(c);
  const r = await run(['login', '--url', osctrl.url, '--env', env, '--username', username, '--password-stdin'], password, c);
  return { c, r };
}
const paths = (sent: Array<{ method: string; path: string }>) => sent.map((s) => `${s.method} ${s.path}`);

beforeAll(async () => {
  osctrl = new OsctrlStandIn();
  await osctrl.start();
  cli = (await loginAs('admin')).c;
});

afterAll(async () => {
  for (const c of extra) c.cleanup();
  await osctrl?.stop();
});

const refused = (r: { exitCode: number; stderr: string; sent: unknown[] }, feature: RegExp) => {
  expect(r.exitCode, r.stderr).toBe(8);
  expect(r.stderr).toMatch(feature);
  expect(r.stderr).toMatch(/not supported by this server \(osctrl 0\.5\.4/);
  expect(r.sent).toEqual([]);
};

describe('login, auth status, logout', () => {
  it('logs in once without the environment (no failed-login warning in osctrl), after checking the environment exists', async () => {
    const { c, r } = await loginAs('quinn');
    expect(r.exitCode, r.stderr).toBe(0);
    const logins = paths(r.sent).filter((x) => x.startsWith('POST /api/v1/login'));
    expect(logins).toEqual(['POST /api/v1/login']);
    expect(paths(r.sent).indexOf('GET /api/v1/login/environments')).toBeLessThan(paths(r.sent).indexOf('POST /api/v1/login'));
    const cfg = JSON.parse(readFileSync(join(c.configDir, 'config.json'), 'utf8'));
    expect(cfg.profiles.default.serverFlavor).toBe('osctrl');
    const bad = await loginAs('quinn', 'nope');
    expect(bad.r.exitCode).toBe(3);
    expect(bad.r.sent.some((s) => s.path.startsWith('/api/v1/login') && s.method === 'POST')).toBe(false);
    const wrong = await loginAs('quinn', 'prod', 'wrong-password');
    expect(wrong.r.exitCode).toBe(4);
    expect(wrong.r.stderr).toMatch(/invalid credentials/);
  });

  it('auth status verifies an osctrl token (--check exits 0)', async () => {
    const s = await run(['auth', 'status', '--check', '-o', 'json']);
    expect(s.exitCode, s.stderr).toBe(0);
    expect(JSON.parse(s.stdout)).toMatchObject({ server_flavor: 'osctrl', username: 'admin', logged_in: true, verified: true });
  });

  it('logout really ends the session: the token goes as the osctrl_token cookie, and is refused afterwards', async () => {
    const { c } = await loginAs('carla');
    const token = (await c.run(['auth', 'token'])).stdout.trim();
    const r = await run(['logout'], undefined, c);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/session ended on the server/);
    expect(r.sent.find((s) => s.path === '/api/v1/logout')!.cookie).toBe(`osctrl_token=${token}`);
    const after = await fetch(`${osctrl.url}/api/v1/users/me`, {
      headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
    });
    expect(after.status).toBe(401);
  });
});

describe('nodes enrolled through osctrl-tls (recorded: empty host fields left out)', () => {
  it('nodes list and show work, on both flavours: a missing optional field is never an error', async () => {
    const recorded = rec<{ items: Array<{ system_info: { bios: Record<string, string> } }> }>('GET /api/v1/nodes/prod 200').items;
    expect(recorded.some((n) => n.system_info.bios.address === undefined)).toBe(true); // what broke before
    const l = await run(['nodes', 'list', '-o', 'json']);
    expect(l.exitCode, l.stderr).toBe(0);
    const items = JSON.parse(l.stdout);
    expect(items.length).toBe(osctrl.nodes.length);
    expect(items[0]).toMatchObject({ tags: [], health: { status: '' }, system_info: { bios: { address: expect.any(String) } } });
    const f = await run(['nodes', 'list', '--server-flavor', 'fleet']);
    expect(f.exitCode, f.stderr).toBe(0);
    const host = osctrl.nodes[0].hostname;
    expect((await run(['nodes', 'show', host])).exitCode).toBe(0);
    const s = await run(['nodes', 'list', '--sort', 'hostname', '--order', 'desc']);
    expect(s.sent.at(-1)!.query).toMatchObject({ sort: 'hostname', dir: 'desc' });
  });

  it('nodes delete and tags apply act on enrolled nodes; tagging a node twice is said, not hidden', async () => {
    const [a, b] = osctrl.nodes;
    expect((await run(['tags', 'add', 'web'])).exitCode).toBe(0);
    const t = await run(['tags', 'apply', 'web', a.hostname, b.hostname]);
    expect(t.exitCode, t.stderr).toBe(0);
    expect(osctrl.tagged.filter((x) => x.tag === 'web').map((x) => x.uuid)).toEqual([a.uuid, b.uuid]);
    const again = await run(['tags', 'apply', 'web', a.hostname]);
    expect(again.exitCode).toBe(0);
    expect(again.stderr).toMatch(/1 of 1 node\(s\) already had tag web, or osctrl could not tag them/);
    expect(again.sent.at(-1)).toMatchObject({ method: 'POST', path: '/api/v1/nodes/prod/tag' });
    // a node without the recorded carve's file (the carve tests download it by its node)
    const last = osctrl.nodes.filter((n) => ![...osctrl.carveFiles.values()].flat().some((f) => f.uuid === n.uuid)).at(-1);
    const d = await run(['nodes', 'delete', last.hostname, '--yes']);
    expect(d.exitCode, d.stderr).toBe(0);
    expect(osctrl.nodes.some((n) => n.uuid === last.uuid)).toBe(false);
  });
});

describe('users: levels that work in osctrl', () => {
  it('users add --environment prod --level admin makes an env admin osctrl lets in (user row true)', async () => {
    const a = await run(['users', 'add', 'erika', '--environment', 'prod', '--level', 'admin', '--password-stdin'], 'erika-password-1');
    expect(a.exitCode, a.stderr).toBe(0);
    expect(osctrl.rowsOf('erika', PROD)).toEqual({ user: true, query: true, carve: true, admin: true });
    const { c } = await loginAs('erika', 'prod', 'erika-password-1');
    expect((await run(['tags', 'list'], undefined, c)).exitCode).toBe(0);
    expect((await run(['nodes', 'list'], undefined, c)).exitCode).toBe(0);
  });

  it('users edit --level query gives a user who can run queries and read nodes; --level none revokes', async () => {
    await run(['users', 'add', 'quentin', '--password-stdin'], 'quentin-password-1');
    const e = await run(['users', 'edit', 'quentin', '--environment', 'prod', '--level', 'query']);
    expect(e.exitCode, e.stderr).toBe(0);
    expect(e.sent.find((s) => s.path === '/api/v1/users/quentin/permissions')!.body).toEqual({
      env_uuid: PROD,
      access: { user: true, query: true, carve: false, admin: false },
    });
    const { c } = await loginAs('quentin', 'prod', 'quentin-password-1');
    const q = await run(['query', 'run', 'SELECT * FROM os_version', '--wait', '20s', '-o', 'json'], undefined, c);
    expect(q.exitCode, q.stderr).toBe(0);
    expect((await run(['nodes', 'list'], undefined, c)).exitCode).toBe(0);
    await run(['users', 'edit', 'quentin', '--environment', 'prod', '--level', 'none']);
    expect(osctrl.rowsOf('quentin', PROD)).toEqual({ user: false, query: false, carve: false, admin: false });
  });

  it('users list/show show the access osctrl checks (UUID rows; rows osctrl-cli stored under a name grant nothing)', async () => {
    const s = await run(['users', 'show', 'quinn', '-o', 'json']);
    expect(s.exitCode, s.stderr).toBe(0);
    expect(JSON.parse(s.stdout).environments).toEqual([
      { id: 1, name: 'prod', uuid: PROD, user: true, query: true, carve: false, admin: false },
    ]);
    expect((await run(['users', 'list'])).exitCode).toBe(0);
  });

  it('users remove of a missing user exits 3 and sends no remove; --api is refused', async () => {
    const r = await run(['users', 'remove', 'nosuchuser', '--yes']);
    expect(r.exitCode).toBe(3);
    expect(r.sent.some((s) => s.path.endsWith('/remove'))).toBe(false);
    refused(await run(['users', 'edit', 'quinn', '--api']), /^error: the API-access flag of users/);
    const bad = await run(['users', 'add', 'zed', '--environment', 'nope', '--password-stdin'], 'zed-password-1');
    expect(bad.exitCode).toBe(3);
    expect(osctrl.users.has('zed')).toBe(false);
  });

  it("a user who is not a super-admin never trips osctrl's denied-access audit with a map probe", async () => {
    const { c } = await loginAs('quinn');
    for (const args of [['env', 'list'], ['users', 'me'], ['audit', 'list'], ['stats']]) {
      const r = await run(args, undefined, c);
      expect(r.exitCode, `${args.join(' ')}: ${r.stderr}`).toBe(0);
      expect(r.sent.some((s) => s.path.startsWith('/api/v1/environments/map'))).toBe(false);
    }
  });
});

describe('the query group on osctrl', () => {
  let name = '';
  it('query run: a real expiry, answers streamed in our shape (table and json)', async () => {
    const r = await run(['query', 'run', 'SELECT * FROM os_version', '--wait', '20s', '-o', 'json']);
    name = /Query (query_[0-9a-f]+) started/.exec(r.stderr)?.[1] ?? '';
    expect(r.exitCode, r.stderr).toBe(0);
    // A real expiry in whole hours: osctrl stores 0 as "expired at year 1" and never hands the query out.
    expect(r.sent.find((s) => s.method === 'POST' && s.path === '/api/v1/queries/prod')!.body.exp_hours).toBeGreaterThanOrEqual(1);
    const answers = JSON.parse(r.stdout);
    expect(answers.length).toBe(osctrl.nodes.length);
    expect(answers[0]).toMatchObject({
      id: expect.any(Number),
      uuid: expect.any(String),
      hostname: expect.stringMatching(/-/),
      status: 0,
      rows: [expect.objectContaining({ platform: expect.any(String) })],
    });
    const t = await run(['query', 'results', name]);
    expect(t.exitCode).toBe(0);
    expect(t.stdout.split('\n')[0]).toMatch(/^NODE\t/);
    expect(t.stdout.trim().split('\n').length).toBe(osctrl.nodes.length + 1);
  });

  it('query list, show; show of an unknown name exits 3 (osctrl answers 200 with an empty record)', async () => {
    const l = await run(['query', 'list', '-o', 'json']);
    expect(l.exitCode, l.stderr).toBe(0);
    expect(l.sent.at(-1)!.path).toBe('/api/v1/queries/prod/list/all-full');
    expect(JSON.parse(l.stdout)[0]).toMatchObject({ name, status: 'COMPLETED' });
    const s = await run(['query', 'show', name, '-o', 'json']);
    expect(JSON.parse(s.stdout)).toMatchObject({ name, executions: osctrl.nodes.length });
    const u = await run(['query', 'show', 'query_nope']);
    expect(u.exitCode).toBe(3);
  });

  it('query cancel expires the query (osctrl has no cancel: it would answer 200 and change nothing)', async () => {
    const w = await run(['query', 'run', 'SELECT * FROM processes', '--wait', '0']);
    const q = /Query (query_[0-9a-f]+) started/.exec(w.stderr)![1];
    const c = await run(['query', 'cancel', q]);
    expect(c.exitCode, c.stderr).toBe(0);
    expect(c.sent.at(-1)!.path).toBe(`/api/v1/queries/prod/expire/${q}`);
    expect(osctrl.queries.find((x) => x.name === q).expired).toBe(true);
  });

  it('--target platform:linux reaches the Linux nodes (osctrl matches platform names exactly); kinds are not mixed', async () => {
    const linux = osctrl.nodes.filter((n) => ['ubuntu', 'debian', 'rhel'].includes(n.platform));
    const r = await run(['query', 'run', 'SELECT version FROM osquery_info', '--target', 'platform:linux', '--wait', '20s', '-o', 'json']);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.sent.find((s) => s.method === 'POST')!.body.platform_list).toEqual([...new Set(linux.map((n) => n.platform))]);
    expect(JSON.parse(r.stdout).length).toBe(linux.length);
    refused(
      await run(['query', 'run', 'SELECT * FROM uptime', '--target', 'platform:linux', '--target', 'tag:prod']),
      /targets of different kinds/,
    );
  });
});

describe('carves on osctrl', () => {
  it('carves run, show and download (size and blocks checked); archive is refused', async () => {
    const name = osctrl.carves[0].name;
    const s = await run(['carves', 'show', name, '-o', 'json']);
    expect(s.exitCode, s.stderr).toBe(0);
    expect(JSON.parse(s.stdout).files[0]).toMatchObject({ status: 'COMPLETED', total_blocks: 1 });
    const out = join(cli.configDir, 'carve.tar');
    const d = await run(['carves', 'download', name, '-O', out]);
    expect(d.exitCode, d.stderr).toBe(0);
    expect(readFileSync(out).length).toBe(JSON.parse(s.stdout).files[0].carve_size);
    // osctrl names a file's node by UUID only: the hostname comes from the node list, so --node HOST finds it.
    const file = JSON.parse(s.stdout).files[0];
    const host = osctrl.nodes.find((n) => n.uuid === file.uuid).hostname;
    expect(file.hostname).toBe(host);
    const byHost = await run(['carves', 'download', name, '--node', host, '-O', join(cli.configDir, 'by-host.tar')]);
    expect(byHost.exitCode, byHost.stderr).toBe(0);
    refused(await run(['carves', 'archive', name]), /carve archive/);
    const r = await run(['carves', 'run', '/etc/hosts', '--target', osctrl.nodes[0].hostname, '--wait', '0']);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.sent.find((x) => x.method === 'POST')!.body).toMatchObject({
      path: '/etc/hosts',
      exp_hours: 24,
      host_list: [osctrl.nodes[0].hostname],
    });
    expect(r.sent.find((x) => x.method === 'POST')!.body.expire_seconds).toBeUndefined(); // osctrl knows hours only
  });
});

describe('carves delete on osctrl (issue 29)', () => {
  it("is refused before any request: osctrl's delete marks the carve deleted and keeps its files, which it still serves; a carve osctrl marked deleted still downloads", async () => {
    const c = osctrl.carves.find((x) => osctrl.carveFiles.has(x.name)); // the recorded carve, uploaded
    const r = await run(['carves', 'delete', c.name, '--yes']);
    refused(
      r,
      /^error: deleting a carve's files \(osctrl's carve delete only marks the carve deleted: its files and blocks stay, and it still serves the archive\)/,
    );
    const was = c.deleted;
    c.deleted = true;
    try {
      const s = await run(['carves', 'show', c.name, '-o', 'json']);
      expect(JSON.parse(s.stdout).query.carve_status).toBe('DELETED');
      const out = join(cli.configDir, 'deleted.tar');
      const d = await run(['carves', 'download', c.name, '-O', out]);
      expect(d.exitCode, d.stderr).toBe(0);
      expect(readFileSync(out).length).toBe(JSON.parse(s.stdout).files[0].carve_size);
    } finally {
      c.deleted = was;
    }
  });
});

describe('tags, settings, audit, stats, env', () => {
  it('tags list counts what osctrl-tls tags every node with (env, platform) from the nodes, never makes one up; add/edit keep the type; show --nodes and unapply refuse before any request', async () => {
    const l = await run(['tags', 'list', '-o', 'json']);
    expect(l.exitCode).toBe(0);
    const counts = Object.fromEntries(
      (JSON.parse(l.stdout) as Array<{ name: string; node_count?: number }>).map((t) => [t.name, t.node_count]),
    );
    expect(counts.prod).toBe(osctrl.nodes.length);
    expect(counts[osctrl.nodes[0].platform]).toBe(osctrl.nodes.filter((n) => n.platform === osctrl.nodes[0].platform).length);
    expect(Object.values(counts).filter((n) => n === undefined).length).toBe(Object.keys(counts).length - 2); // the others: no count, never a made-up 0
    const t = await run(['tags', 'list']);
    expect(t.stdout).toMatch(new RegExp(`^prod\\t.*\\t${osctrl.nodes.length}$`, 'm'));
    expect((await run(['tags', 'add', 'pci-scope', '--description', 'PCI scope'])).exitCode).toBe(0);
    const dup = await run(['tags', 'add', 'pci-scope']);
    expect(dup.exitCode, dup.stderr).toBe(6); // osctrl: 409
    expect(dup.stderr).toMatch(/tag with that name already exists in this environment \(conflict, HTTP 409\)/);
    expect(osctrl.tags.find((t) => t.name === 'pci-scope').tag_type).toBe(6);
    expect((await run(['tags', 'edit', 'pci-scope', '--description', 'PCI DSS'])).exitCode).toBe(0);
    expect(osctrl.tags.find((t) => t.name === 'pci-scope')).toMatchObject({ description: 'PCI DSS', tag_type: 6 });
    refused(await run(['tags', 'show', 'pci-scope', '--nodes']), /listing nodes by tag/);
    refused(await run(['tags', 'unapply', 'pci-scope', osctrl.nodes[0].hostname]), /^error: removing a tag from nodes/);
  });

  it('settings list and set (global); --env refused', async () => {
    const l = await run(['settings', 'list', 'admin', '-o', 'json']);
    expect(l.exitCode, l.stderr).toBe(0);
    expect(JSON.parse(l.stdout)).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'inactive_hours', type: 'integer' })]));
    expect((await run(['settings', 'set', 'admin', 'inactive_hours', '48'])).exitCode).toBe(0);
    refused(await run(['settings', 'set', 'admin', 'inactive_hours', '24', '--env', 'prod']), /per-environment settings/);
  });

  it('audit list --user is exact (osctrl matches substrings), --env sends env_uuid; -q refused', async () => {
    const r = await run(['audit', 'list', '--user', 'admi', '-o', 'json']);
    expect(r.sent.at(-1)!.query.username).toBe('admi');
    expect(JSON.parse(r.stdout)).toEqual([]);
    const a = await run(['audit', 'list', '--user', 'admin', '-o', 'json']);
    expect(JSON.parse(a.stdout).length).toBeGreaterThan(0);
    const e = await run(['audit', 'list', '--env', 'dev', '-o', 'json']);
    expect(e.sent.at(-1)!.query.env_uuid).toBe(DEV);
    refused(await run(['audit', 'list', '-q', 'tag']), /audit search/);
  });

  it('stats, env list/map, enroll show remove.sh work', async () => {
    expect((await run(['stats', '-o', 'json'])).exitCode).toBe(0);
    const l = await run(['env', 'list', '-o', 'json']);
    expect((JSON.parse(l.stdout) as Array<{ name: string }>).map((e) => e.name).sort()).toEqual(['dev', 'prod']);
    const rm = await run(['enroll', 'show', 'dev', 'remove.sh']);
    expect(rm.exitCode, rm.stderr).toBe(0);
    expect(rm.sent.at(-1)!.path).toBe('/api/v1/environments/dev/remove/remove.sh');
  });
});

describe('what osctrl really does, said (issue 29)', () => {
  it('enroll rotate reads the secret back: osctrl keeps it, so it says so and exits 1', async () => {
    const r = await run(['enroll', 'rotate', 'dev', '--yes']);
    expect(r.exitCode, r.stderr).toBe(1);
    expect(r.stderr).toMatch(/^error: the enroll secret of dev was NOT rotated: osctrl renewed only the enroll path/);
    expect(r.stderr).toMatch(/to stop all enrolls into dev: fleetctl enroll expire dev --yes/);
    expect(paths(r.sent)).toEqual([
      'GET /api/v1/environments/dev/enroll/secret',
      'POST /api/v1/environments/dev/enroll/rotate',
      'GET /api/v1/environments/dev/enroll/secret',
    ]);
  });

  it('enroll expire stops enrolls on osctrl (its expiry ends only the enroll.sh links): accept_enrolls goes off, extend and notexpire turn it on', async () => {
    const x = await run(['enroll', 'expire', 'dev', '--yes']);
    expect(x.exitCode, x.stderr).toBe(0);
    expect(x.sent.filter((s) => s.method !== 'GET').map((s) => [s.method, s.path, s.body])).toEqual([
      ['POST', '/api/v1/environments/dev/enroll/expire', {}],
      ['PATCH', '/api/v1/environments/dev', { accept_enrolls: false }],
    ]);
    expect(osctrl.envViews.get(DEV)!.accept_enrolls).toBe(false);
    for (const action of ['extend', 'notexpire']) {
      const r = await run(['enroll', action, 'dev']);
      expect(r.exitCode, r.stderr).toBe(0);
      expect(r.sent.find((s) => s.method === 'PATCH')!.body).toEqual({ accept_enrolls: true });
    }
    expect(osctrl.envViews.get(DEV)!.accept_enrolls).toBe(true);
  });

  it('env list/show: an ended enroll expiry is not "closed" on osctrl (only accept_enrolls stops agents): open, the links said expired, no warning', async () => {
    const v = osctrl.envViews.get(DEV)!;
    const was = { enroll_expire: v.enroll_expire as unknown, accept_enrolls: v.accept_enrolls as unknown };
    try {
      Object.assign(v, { enroll_expire: '2020-01-02T03:04:05Z', accept_enrolls: true });
      const show = await run(['env', 'show', 'dev']);
      expect(show.exitCode, show.stderr).toBe(0);
      expect(show.stdout).toMatch(
        /enrollment\s+open until closed \(the enroll\.sh\/enroll\.ps1 links expired .+ ago; agents with the secret enroll either way\)/,
      );
      expect(show.stderr).toBe('');
      const list = await run(['env', 'list']);
      expect(list.stdout.split('\n').find((l) => l.startsWith('dev\t'))).toMatch(/\topen\t2020-01-02T03:04:05Z$/);
      expect(list.stderr).not.toMatch(/refused/);
      v.accept_enrolls = false;
      expect((await run(['env', 'show', 'dev'])).stdout).toMatch(/enrollment\s+closed \(enrolls turned off\)/);
    } finally {
      Object.assign(v, was);
    }
  });

  it("env create/edit check osctrl's own filters before any request: no port in the agent host (exit 8), a name of [a-z0-9_-] (exit 2)", async () => {
    const port = await run(['env', 'create', 'lab', '--agent-host', 'tls.example.com:8443']);
    refused(port, /^error: an agent host with a port \(--agent-host HOST:PORT\)/);
    expect(port.stderr).toMatch(
      /hint: osctrl's API takes a host name only, and its agents then connect on port 443: give --agent-host tls\.example\.com with osctrl-tls on 443/,
    );
    refused(await run(['env', 'edit', 'dev', '--agent-host', '127.0.0.1:26443']), /^error: an agent host with a port/);
    for (const args of [
      ['env', 'create', 'lab.eu', '--agent-host', 'tls.example.com'],
      ['env', 'create', 'lab', '--agent-host', 'tls_example.com'],
      ['env', 'edit', 'dev', '--name', 'dev eu'],
    ]) {
      const r = await run(args);
      expect(r.exitCode, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(/^error: invalid (environment name|agent host) "[^"]+" for osctrl: /);
      expect(r.sent).toEqual([]);
    }
  });

  it('env create, edit and delete go through as the real osctrl-api took them (recorded): type and icon sent, 409 for a taken name, the options carry the intervals', async () => {
    const c = await run(['env', 'create', 'lab', '--agent-host', '127.0.0.1', '--query', '30']);
    expect(c.exitCode, c.stderr).toBe(0);
    expect(c.sent[0]).toMatchObject({
      method: 'POST',
      path: '/api/v1/environments',
      body: { name: 'lab', hostname: '127.0.0.1', type: 'osquery', icon: 'server' },
    });
    expect(paths(c.sent)).toContain('PATCH /api/v1/environments/config/' + osctrl.envs.find((e) => e.Name === 'lab')!.UUID);
    expect(c.stdout).toMatch(/^name\s+lab$/m);
    expect(c.stdout).toMatch(/^query_interval\s+30$/m);
    expect(c.stdout).toMatch(/^enrollment\s+open until closed$/m);
    expect(c.stderr).toMatch(/Created environment lab\. Enroll hosts with: fleetctl enroll show lab enroll\.sh/);
    const taken = await run(['env', 'create', 'lab', '--agent-host', '127.0.0.1']);
    expect(taken.exitCode).toBe(6);
    expect(taken.stderr).toMatch(/^error: environment with that name already exists \(conflict, HTTP 409\)/);
    const { c: quinn } = await loginAs('quinn');
    const denied = await run(['env', 'create', 'lab2', '--agent-host', '127.0.0.1'], undefined, quinn);
    expect(denied.exitCode).toBe(5);
    const e = await run(['env', 'edit', 'lab', '--name', 'lab-b', '--no-enroll']);
    expect(e.exitCode, e.stderr).toBe(0);
    expect(e.stdout).toMatch(/^name\s+lab-b$/m);
    expect(e.stdout).toMatch(/^enrollment\s+closed/m);
    const d = await run(['env', 'delete', 'lab-b', '--yes']);
    expect(d.exitCode, d.stderr).toBe(0);
    expect(d.stderr).toMatch(/^Environment lab-b deleted with 0 nodes\.$/m);
    expect(paths(d.sent).at(-1)).toMatch(/^DELETE \/api\/v1\/environments\/[0-9a-f-]{36}$/);
    expect((await run(['env', 'show', 'lab-b'])).exitCode).toBe(3);
    expect(osctrl.envs.map((x) => x.Name).sort()).toEqual(['dev', 'prod']);
  });

  it('a password change says the sessions stay valid until they expire (users passwd, users edit), and they do', async () => {
    const { c } = await loginAs('bob', 'dev');
    const p = await run(['users', 'passwd', '--password-stdin'], `${OSCTRL_PASSWORD}\nbob-new-password-1\n`, c);
    expect(p.exitCode, p.stderr).toBe(0);
    expect(p.stderr).toMatch(/password changed/);
    expect(p.stderr).toMatch(/your sessions, this one included, stay valid until they expire/);
    expect(p.stderr).not.toMatch(/have ended/);
    expect((await run(['users', 'me'], undefined, c)).exitCode).toBe(0);
    const e = await run(['users', 'edit', 'bob', '--password-stdin'], OSCTRL_PASSWORD);
    expect(e.exitCode, e.stderr).toBe(0);
    expect(e.stderr).toMatch(
      /osctrl keeps bob's session: a token issued before the change stays valid until it expires \(to end it now: fleetctl api DELETE \/api\/v1\/users\/bob\/token\)/,
    );
    expect((await run(['users', 'me'], undefined, c)).exitCode).toBe(0);
  });

  it("env intervals reach osctrl's agents through the options (its API leaves the flags); a config interval is refused before any request", async () => {
    const r = await run(['env', 'intervals', 'prod', '--query', '45', '--log', '90']);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(paths(r.sent)).toEqual([
      'PATCH /api/v1/environments/intervals/prod',
      'GET /api/v1/environments/config/prod',
      'PATCH /api/v1/environments/config/prod',
    ]);
    const options = JSON.parse((r.sent.at(-1)!.body as { options: string }).options) as Record<string, unknown>;
    expect(options).toMatchObject({ distributed_interval: 45, logger_tls_period: 90 });
    refused(await run(['env', 'intervals', 'prod', '--config', '600']), /^error: a configuration refresh interval \(--config\)/);
    refused(await run(['env', 'create', 'lab', '--agent-host', '127.0.0.1', '--config', '60']), /--config/);
  });

  it('users add, users edit and users passwd check the password policy before any request', async () => {
    for (const args of [
      ['users', 'add', 'shorty', '--password-stdin'],
      ['users', 'edit', 'quinn', '--password-stdin'],
    ]) {
      const r = await run(args, 'short');
      expect(r.exitCode, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(/^error: the new password must be at least 8 characters; nothing was changed/);
      expect(r.sent).toEqual([]);
    }
    const p = await run(['users', 'passwd', '--password-stdin'], `${OSCTRL_PASSWORD}\nshort\n`);
    expect(p.exitCode).toBe(2);
    expect(p.sent.filter((s) => s.method === 'POST')).toEqual([]);
    expect(osctrl.users.has('shorty')).toBe(false);
  });
});

describe('rules of the real osctrl-api the stand-in follows (issue 29)', () => {
  it('removing yourself: osctrl answers 400 and keeps you (exit 1, its message)', async () => {
    const r = await run(['users', 'remove', 'admin', '--yes']);
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toMatch(/error removing user \(bad_request, HTTP 400\)/);
    expect(osctrl.users.has('admin')).toBe(true);
  });

  it('query show has the targets osctrl recorded for the run', async () => {
    const host = osctrl.nodes[1].hostname;
    const w = await run(['query', 'run', 'SELECT * FROM processes', '--target', host, '--wait', '0', '--detach']);
    expect(w.exitCode, w.stderr).toBe(0);
    const name = /query_[0-9a-f]{32}/.exec(w.stderr + w.stdout)![0];
    const s = await run(['query', 'show', name, '-o', 'json']);
    expect(JSON.parse(s.stdout).targets).toEqual([{ type: 'host', value: host }]);
    const all = await run(['query', 'run', 'SELECT * FROM processes', '--wait', '0', '--detach']);
    const n2 = /query_[0-9a-f]{32}/.exec(all.stderr + all.stdout)![0];
    expect(JSON.parse((await run(['query', 'show', n2, '-o', 'json'])).stdout).targets).toEqual([{ type: 'environment', value: 'prod' }]);
  });

  it('users edit --environment gets the permissions reply in its recorded shape (the access stored)', async () => {
    await run(['users', 'add', 'perry', '--password-stdin'], 'perry-password-1');
    const before = osctrl.requests.length;
    const e = await run(['users', 'edit', 'perry', '--environment', 'dev', '--level', 'carve']);
    expect(e.exitCode, e.stderr).toBe(0);
    const sent = osctrl.sent(before).find((x) => x.path === '/api/v1/users/perry/permissions');
    expect(sent!.body).toEqual({ env_uuid: DEV, access: { user: true, query: false, carve: true, admin: false } });
    const reply = await fetch(`${osctrl.url}/api/v1/users/perry/permissions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${(await cli.run(['auth', 'token'])).stdout.trim()}` },
      body: JSON.stringify(sent!.body),
    });
    expect(Object.keys((await reply.json()) as object)).toEqual(Object.keys(rec('POST /api/v1/users/{user}/permissions 200')));
  });
});

describe('the recorded wire data', () => {
  it('holds no secret: tokens, CSRF tokens, node keys, enroll secrets and secret paths, passwords are scrubbed', () => {
    const text = readFileSync(join(import.meta.dirname, '../fixtures/osctrl/recorded.json'), 'utf8');
    expect(text).not.toMatch(/eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+/);
    const parsed = (t: string | null | undefined) => {
      try {
        return JSON.parse(t ?? 'null');
      } catch {
        return null;
      }
    };
    const walk = (v: unknown, key = ''): void => {
      if (Array.isArray(v)) v.forEach((x) => walk(x));
      else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) walk(x, k);
      else if (
        typeof v === 'string' &&
        /^(token|csrf_token|node_key|password|new_password|current_password|secret|enroll_secret_path|remove_secret_path)$/.test(key) &&
        v
      ) {
        expect(v, key).toMatch(/^REDACTED-/);
      }
    };
    for (const x of Object.values(RECORDED)) {
      walk(parsed(x.body));
      walk(parsed(x.request));
    }
    // and it covers what the CLI uses: enrolled nodes, live query answers, a carve, tags, users of each kind, the errors
    for (const k of [
      'GET /api/v1/nodes/prod 200',
      'GET /api/v1/queries/prod/results/{query} 200 (os_version)',
      'GET /api/v1/queries/prod/{query} 200 (targets)',
      'GET /api/v1/carves/prod/archive/{carve} 200',
      'GET /api/v1/tags/prod 200',
      'GET /api/v1/users/quinn/permissions 200',
      'POST /api/v1/users/{user}/permissions 200',
      'POST /api/v1/logout 200',
      'POST /api/v1/tags/prod/add 409',
      'POST /api/v1/users/{user}/remove 400',
      'POST /api/v1/login 429',
      'GET /api/v1/users/me 401',
      'GET /api/v1/users 403',
      'POST /api/v1/nope 405',
      'GET /error 500',
    ]) {
      expect(RECORDED[k], k).toBeDefined();
    }
  });

  it('bodies are the bytes osctrl sent: Go key order (struct order, not sorted), no trailing newline', () => {
    const node = RECORDED['GET /api/v1/nodes/prod/node/{node} 200'].body!;
    expect(node.startsWith('{"id":')).toBe(true);
    expect(node.indexOf('"uuid"')).toBeLessThan(node.indexOf('"platform"'));
    expect(node.endsWith('\n')).toBe(false);
    expect(RECORDED['GET /api/v1/nope 404'].body).toBe('404 page not found\n');
  });
});

describe('refused groups and errors', () => {
  it('sinks (show included) and mfa management are refused in one line before any request', async () => {
    refused(await run(['sinks', 'list']), /^error: log sinks/);
    refused(await run(['sinks', 'show', '1']), /^error: log sinks/);
    refused(await run(['mfa', 'totp', 'setup']), /^error: MFA/);
    refused(await run(['mfa', 'webauthn', 'list']), /^error: MFA/);
    expect((await run(['mfa', 'status', '-o', 'json'])).exitCode).toBe(0);
  });

  it('an answer of the wrong type is one clear line (exit 1, hint --debug), never a TypeError', async () => {
    // Told the server is this API, fleetctl reads osctrl's map entries ({Name, UUID, ID}) as ours: no name, no uuid.
    const m = await cli.run(['env', 'map', '--server-flavor', 'fleet']);
    expect(m.exitCode).toBe(1);
    expect(m.stderr).toMatch(
      /^error: unexpected answer from the server: .*(name|uuid) is missing\nhint: run the command again with --debug/,
    );
  });

  it('errors without code get one from the status; text bodies are trimmed', async () => {
    const r = await run(['nodes', 'show', 'no-such-node']);
    expect(r.exitCode).toBe(3);
    expect(r.stderr).toMatch(/node not found \(not_found, HTTP 404\)/);
    const t = await run(['api', 'GET', '/api/v1/nope']);
    expect(t.stderr).toMatch(/404 page not found \(not_found, HTTP 404\)\n/);
    const e = await run(['env', 'show', 'nope']);
    expect(e.exitCode).toBe(3);
    expect(e.stderr).toMatch(/environment not found \(not_found, HTTP 404\)/);
    const p = await run(['users', 'passwd', '--password-stdin'], 'not-the-password\nsome-new-password\n');
    expect(p.exitCode).toBe(5);
    expect(p.stderr).toMatch(/current password is incorrect \(forbidden, HTTP 403\)/);
  });
});
