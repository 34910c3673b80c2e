// Issue 20, point 8: the small things a gh/kubectl/Fleet DM user trips over, end to end against
// `fleetctl server --dev`: help on stdout, `version`, `auth login`, hints for foreign spellings,
// --fields checked against the schema, "never" in piped output.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cli, DEV_PASSWORD, type ServerProcess } from '../helpers/cli.js';
import { startAdminSession } from '../helpers/admin-cli.js';
import pkg from '../../package.json' with { type: 'json' };

let server: ServerProcess;
let cli: Cli;
const fresh: Cli[] = [];
const newCli = () => {
  const c = new Cli();
  fresh.push(c);
  return c;
};

beforeAll(async () => {
  ({ server, cli } = await startAdminSession());
});

afterAll(async () => {
  cli?.cleanup();
  for (const c of fresh) c.cleanup();
  await server?.stop();
});

describe('help and version', () => {
  it('bare `fleetctl` prints the help on stdout and exits 0', async () => {
    const r = await newCli().run([]);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/^Usage: fleetctl /);
    expect(r.stdout).toMatch(/^ {2}nodes +List, inspect and delete/m);
    expect(r.stderr).toBe('');
  });

  it('`fleetctl version` prints the version (-o json: an object)', async () => {
    const r = await newCli().run(['version']);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe(`fleetctl ${pkg.version} (node ${process.version}, ${process.platform}-${process.arch})\n`);
    const j = await newCli().run(['version', '-o', 'json']);
    expect(JSON.parse(j.stdout)).toEqual({
      version: pkg.version,
      node: process.version,
      platform: `${process.platform}-${process.arch}`,
      server: null,
    });
  });
});

describe('auth login and auth logout, as gh spells them', () => {
  it('log in and out like the top-level verbs', async () => {
    const c = newCli();
    const login = await c.run(['auth', 'login', '--url', server.url, '--env', 'prod', '--username', 'analyst', '--password-stdin'], {
      input: DEV_PASSWORD,
    });
    expect(login.exitCode, login.stderr).toBe(0);
    expect(login.stderr).toMatch(/Logged in to .* as analyst/);
    expect((await c.run(['auth', 'status'])).exitCode).toBe(0);
    const out = await c.run(['auth', 'logout']);
    expect(out.exitCode, out.stderr).toBe(0);
    expect((await c.run(['auth', 'status'])).exitCode).toBe(4);
  });
});

describe('spellings from kubectl and Fleet DM get a hint naming our command (exit 2)', () => {
  it.each([
    [['get', 'hosts'], 'fleetctl nodes list'],
    [['get', 'host', 'web-1'], 'fleetctl nodes show web-1'],
    [['get', 'queries'], 'fleetctl query list'],
    [['config', 'use-context', 'staging'], 'fleetctl config use staging'],
    [['config', 'get-contexts'], 'fleetctl config list'],
    [['query', '--query', 'SELECT 1', '--hosts', 'web-1'], 'fleetctl query run "SQL" --target HOST'],
  ])('%j', async (args, hint) => {
    const r = await newCli().run(args);
    expect(r.exitCode).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(`hint: ${hint}`);
  });
});

describe('--fields is checked against the schema, not the data', () => {
  it('a field below tags is refused even when the listed nodes carry no tags, before any request (exit 2)', async () => {
    // Never-seen nodes of the demo carry no tags; a dead server proves no request is needed.
    const dead = await newCli().run(['nodes', 'list', '--fields', 'hostname,tags.nope'], {
      env: { FLEETCTL_URL: 'http://127.0.0.1:9', FLEETCTL_TOKEN: 'x', FLEETCTL_ENV: 'prod' },
    });
    expect(dead.exitCode).toBe(2);
    expect(dead.stderr).toMatch(/unknown field "tags\.nope"; valid fields: tags\.id, tags\.name, /);
    const untagged = await cli.run(['nodes', 'list', '--status', 'inactive', '--limit', '3', '--fields', 'hostname,tags.nope']);
    expect(untagged.exitCode).toBe(2);
    const ok = await cli.run(['nodes', 'list', '--limit', '3', '--fields', 'hostname,tags.name,health.status']);
    expect(ok.exitCode, ok.stderr).toBe(0);
    expect(ok.stdout.split('\n')[0]).toBe('HOSTNAME\tTAGS.NAME\tHEALTH'); // a declared column keeps its header
  });

  it("a computed column (audit TYPE) is a valid field; a misspelt one lists the schema's fields", async () => {
    expect((await cli.run(['audit', 'list', '--limit', '2', '--fields', 'type,line'])).exitCode).toBe(0);
    const bad = await cli.run(['audit', 'list', '--limit', '2', '--fields', 'lin']);
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toMatch(/unknown field "lin"; valid fields: .*line/);
  });
});

describe('"never" for the zero time outside JSON', () => {
  it('piped tables, csv and piped show views say never; JSON keeps 0001-01-01T00:00:00Z', async () => {
    const json = JSON.parse((await cli.run(['nodes', 'list', '--all', '--json', '--fields', 'uuid,last_seen'])).stdout) as {
      uuid: string;
      last_seen: string;
    }[];
    const never = json.find((n) => n.last_seen.startsWith('0001-01-01'));
    expect(never).toBeDefined();
    const tsv = await cli.run(['nodes', 'list', '--all', '--fields', 'uuid,last_seen']);
    expect(tsv.stdout).toContain(`${never!.uuid}\tnever\n`);
    expect(tsv.stdout).not.toContain('0001-01-01');
    const csv = await cli.run(['nodes', 'list', '--all', '-o', 'csv', '--fields', 'uuid,last_seen']);
    expect(csv.stdout).toContain(`${never!.uuid},never\n`);
    const show = await cli.run(['nodes', 'show', never!.uuid]);
    expect(show.stdout).toMatch(/^last_seen\tnever$/m);
    expect(show.stdout).not.toContain('0001-01-01');
  });
});

describe('security filters (issue 20): --risk and --health on the server, in tags apply, and names from stdin', () => {
  interface N {
    uuid: string;
    hostname: string;
    posture: { risk_level: string };
    health: { status: string };
    tags: { name: string }[];
  }
  const nodes = async (args: string[]) => JSON.parse((await cli.run(['nodes', 'list', '--all', '--json', ...args])).stdout) as N[];

  it('nodes list --risk high and --health unhealthy list exactly those nodes (checked against every node)', async () => {
    const all = await nodes([]);
    const high = await nodes(['--risk', 'high']);
    expect(high.length).toBeGreaterThan(0);
    expect(high.map((n) => n.uuid).sort()).toEqual(
      all
        .filter((n) => n.posture.risk_level === 'high')
        .map((n) => n.uuid)
        .sort(),
    );
    const sick = await nodes(['--health', 'unhealthy', '--platform', 'windows']);
    expect(sick.every((n) => n.health.status === 'unhealthy')).toBe(true);
    const bad = await cli.run(['nodes', 'list', '--risk', 'severe']);
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toMatch(/Allowed choices are low, medium, high, unknown/);
  });

  it('tags apply --risk high tags every high-risk node, in one command', async () => {
    expect((await cli.run(['tags', 'add', 'risk-review'])).exitCode).toBe(0);
    const r = await cli.run(['tags', 'apply', 'risk-review', '--risk', 'high']);
    expect(r.exitCode, r.stderr).toBe(0);
    const high = await nodes(['--risk', 'high']);
    expect(r.stderr).toBe(`Tagged ${high.length} nodes with risk-review in prod\n`);
    expect((await nodes(['--tag', 'risk-review'])).map((n) => n.uuid).sort()).toEqual(high.map((n) => n.uuid).sort());
  });

  it('tags apply TAG - reads node names from stdin (one or more a line); nothing changes when one is unknown', async () => {
    expect((await cli.run(['tags', 'add', 'from-stdin'])).exitCode).toBe(0);
    const some = (await nodes(['--health', 'unhealthy'])).slice(0, 5);
    const input = `${some[0].uuid}\n${some[1].hostname} ${some[2].uuid}\n# a comment\n\n${some[3].hostname},${some[4].hostname}\n`;
    const r = await cli.run(['tags', 'apply', 'from-stdin', '-'], { input });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).toBe('Tagged 5 nodes with from-stdin in prod\n');
    expect((await nodes(['--tag', 'from-stdin'])).map((n) => n.uuid).sort()).toEqual(some.map((n) => n.uuid).sort());
    const typo = await cli.run(['tags', 'apply', 'from-stdin', '-'], { input: `${some[0].hostname}\nno-such-host-zz\n` });
    expect(typo.exitCode).toBe(3);
    expect(typo.stderr).toMatch(/no node "no-such-host-zz" in prod; nothing changed/);
    const empty = await cli.run(['tags', 'apply', 'from-stdin', '-'], { input: '\n' });
    expect(empty.exitCode).toBe(3);
    expect((await cli.run(['tags', 'apply', 'from-stdin', '-', some[0].hostname], { input: '' })).exitCode).toBe(2);
  });
});
