// `fleetctl tags ...` end to end: the built binary against a real `fleetctl server --dev` process;
// what the server stored is read back independently (raw API calls or other fleetctl commands).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cli, type ServerProcess } from '../helpers/cli.js';
import { apiCall, runInPty, startAdminSession } from '../helpers/admin-cli.js';
import type { Node, TagWithCount } from '../../src/api/index.js';

let server: ServerProcess;
let cli: Cli;
let token: string;

async function tags(env = 'prod'): Promise<TagWithCount[]> {
  const r = await apiCall(server.url, 'GET', `/api/v1/tags/${env}`, { token });
  expect(r.status).toBe(200);
  return r.body as TagWithCount[];
}
const tag = async (name: string, env = 'prod') => (await tags(env)).find((t) => t.name === name);

async function node(ref: string): Promise<Node> {
  const r = await apiCall(server.url, 'GET', `/api/v1/nodes/prod/node/${encodeURIComponent(ref)}`, { token });
  expect(r.status).toBe(200);
  return r.body as Node;
}

async function nodesJson(args: string[]): Promise<Node[]> {
  const r = await cli.run(['nodes', 'list', ...args, ...(args.includes('--limit') ? [] : ['--all']), '-o', 'json']);
  expect(r.exitCode).toBe(0);
  return JSON.parse(r.stdout) as Node[];
}

beforeAll(async () => {
  ({ server, cli, token } = await startAdminSession());
});

afterAll(async () => {
  cli?.cleanup();
  await server?.stop();
});

describe('tags show', () => {
  it('prints the one tag with its node count (-o json is the API object)', async () => {
    const r = await cli.run(['tags', 'show', 'pci', '-o', 'json']);
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual(await tag('pci'));
    const piped = await cli.run(['tags', 'show', 'pci']);
    expect(piped.exitCode).toBe(0);
    expect(piped.stdout).toMatch(/^name\tpci$/m);
    expect(piped.stdout).toMatch(new RegExp(`^node_count\\t${(await tag('pci'))!.node_count}$`, 'm'));
  });

  it('an unknown tag exits 3 naming it, with a hint', async () => {
    const r = await cli.run(['tags', 'show', 'no-such-tag']);
    expect(r.exitCode).toBe(3);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/no tag named "no-such-tag" in prod/);
    expect(r.stderr).toMatch(/fleetctl tags list/);
  });
});

describe('nodes by tag', () => {
  it('nodes list --tag pci --all --json returns exactly the tagged nodes; tags show --nodes the same', async () => {
    const all = await nodesJson([]);
    const tagged = all
      .filter((n) => n.tags.some((t) => t.name === 'pci'))
      .map((n) => n.uuid)
      .sort();
    expect(tagged.length).toBeGreaterThan(0);
    const r = await cli.run(['nodes', 'list', '--tag', 'pci', '--all', '--json']);
    expect(r.exitCode).toBe(0);
    expect((JSON.parse(r.stdout) as Node[]).map((n) => n.uuid).sort()).toEqual(tagged);
    const viaTag = await cli.run(['tags', 'show', 'pci', '--nodes', '--all', '--json']);
    expect((JSON.parse(viaTag.stdout) as Node[]).map((n) => n.uuid).sort()).toEqual(tagged);
    expect((await tag('pci'))!.node_count).toBe(tagged.length);
  });

  it('-o csv --fields hostname,tags.name gives the tag names; an unknown tag is an empty list', async () => {
    const csv = await cli.run(['nodes', 'list', '--tag', 'pci', '--limit', '3', '-o', 'csv', '--fields', 'hostname,tags.name']);
    const lines = csv.stdout.trim().split('\n');
    expect(lines[0]).toBe('hostname,tags.name');
    for (const l of lines.slice(1)) expect(l).toMatch(/^[^,]+,"?[^"]*\bpci\b/);
    const none = await cli.run(['nodes', 'list', '--tag', 'no-such-tag', '--json']);
    expect(none.exitCode).toBe(0);
    expect(JSON.parse(none.stdout)).toEqual([]);
  });
});

describe('tags list', () => {
  it('prints the API objects with node_count as JSON', async () => {
    const r = await cli.run(['tags', 'list', '-o', 'json']);
    expect(r.exitCode).toBe(0);
    expect(r.stderr).toBe('');
    const list = JSON.parse(r.stdout) as TagWithCount[];
    expect(list.map((t) => t.name)).toEqual((await tags()).map((t) => t.name));
    const servers = list.find((t) => t.name === 'servers')!;
    expect(servers).toMatchObject({ tag_type: 6, color: '#5bc0de' });
    expect(servers.node_count).toBe((await nodesJson([])).filter((n) => n.tags.some((t) => t.name === 'servers')).length);
  });

  it('piped: a TSV table with the type by name', async () => {
    const r = await cli.run(['tags', 'list', '--env', 'staging']);
    expect(r.exitCode).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe('NAME\tDESCRIPTION\tCOLOR\tTYPE\tNODES');
    expect(lines).toContainEqual(expect.stringMatching(/^pci\tIn PCI scope\t#d9534f\ttag\t\d+$/));
  });

  it('has examples in --help', async () => {
    for (const v of ['list', 'add', 'edit', 'remove', 'apply', 'unapply']) {
      const r = await cli.run(['tags', v, '--help']);
      expect(r.exitCode).toBe(0);
      expect(r.stdout).toMatch(/Examples:\n {2}\$ fleetctl tags /);
    }
  });

  it('the add examples and the apply/unapply examples that name nodes work as written against the demo fleet', async () => {
    let help = '';
    for (const v of [[], ['add'], ['apply'], ['unapply']]) help += (await cli.run(['tags', ...v, '--help'])).stdout;
    const examples = [
      ...new Set(
        help
          .split('\n')
          .map((l) => /^ {2}\$ fleetctl (tags (?:add|apply|unapply) .*)$/.exec(l)?.[1])
          .filter((l) => l !== undefined),
      ),
    ];
    const runnable = examples.filter((e) => e.startsWith('tags add') || /\bprod-[a-z]+-\d{4}\b/.test(e));
    expect(runnable.length).toBeGreaterThan(2);
    // Shell words: "double" or 'single' quoted, or bare.
    const argv = (line: string) => [...line.matchAll(/"([^"]*)"|'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2] ?? m[3]);
    for (const e of runnable.sort((a, b) => Number(b.startsWith('tags add')) - Number(a.startsWith('tags add')))) {
      const r = await cli.run(argv(e));
      expect({ e, exitCode: r.exitCode, stderr: r.stderr }).toMatchObject({ e, exitCode: 0 });
    }
    // Leave the fleet as the later tests expect it.
    for (const e of runnable.filter((x) => x.startsWith('tags add')))
      expect((await cli.run(['tags', 'remove', argv(e)[2], '--yes'])).exitCode).toBe(0);
  });
});

describe('tags add / edit', () => {
  it('creates a tag with the given fields and a custom type', async () => {
    const r = await cli.run([
      'tags',
      'add',
      'eu-west',
      '--description',
      'EU west region',
      '--color',
      '#12AB34',
      '--icon',
      'fas fa-globe',
      '--custom',
      'region eu-west',
    ]);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe('Created tag eu-west in prod\n');
    expect(await tag('eu-west')).toMatchObject({
      description: 'EU west region',
      color: '#12ab34',
      icon: 'fas fa-globe',
      tag_type: 4,
      custom_tag: 'region eu-west',
      node_count: 0,
    });
    const list = await cli.run(['tags', 'list', '--fields', 'name,type', '--no-headers']);
    expect(list.stdout).toContain('eu-west\tcustom: region eu-west\n');
  });

  it('exits 6 for a name that exists, and 2 for a bad color, changing nothing', async () => {
    const before = await tags();
    const dup = await cli.run(['tags', 'add', 'pci']);
    expect(dup.exitCode).toBe(6);
    expect(dup.stderr).toMatch(/^error: .*\(conflict, HTTP 409\)/);
    const bad = await cli.run(['tags', 'add', 'red', '--color', 'red']);
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toContain('expected a color as #rrggbb');
    expect(await tags()).toEqual(before);
  });

  it('edit changes only the fields given', async () => {
    await cli.run(['tags', 'add', 'to-edit', '--description', 'first', '--color', '#000000']);
    const r = await cli.run(['tags', 'edit', 'to-edit', '--color', '#ffffff', '-o', 'json']);
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ name: 'to-edit', env: 'prod' });
    expect(await tag('to-edit')).toMatchObject({ description: 'first', color: '#ffffff', tag_type: 6 });
    const none = await cli.run(['tags', 'edit', 'to-edit']);
    expect(none.exitCode).toBe(2);
    expect(none.stderr).toMatch(/nothing to change/);
    const missing = await cli.run(['tags', 'edit', 'no-such-tag', '--color', '#ffffff']);
    expect(missing.exitCode).toBe(3);
    // `update` is an alias, as for `users edit`.
    expect((await cli.run(['tags', 'update', 'to-edit', '--description', 'second'])).exitCode).toBe(0);
    expect(await tag('to-edit')).toMatchObject({ description: 'second', color: '#ffffff' });
  });
});

describe('tags apply / unapply', () => {
  it('applies by hostname, and `nodes show` then lists the tag', async () => {
    await cli.run(['tags', 'add', 'apply-host']);
    const [a, b] = (await nodesJson(['--sort', 'hostname', '--limit', '2'])).map((n) => n.hostname);
    const r = await cli.run(['tags', 'apply', 'apply-host', a, b]);
    expect(r.exitCode).toBe(0);
    expect(r.stderr).toBe('Tagged 2 nodes with apply-host in prod\n');
    const shown = await cli.run(['nodes', 'show', a, '-o', 'json']);
    expect((JSON.parse(shown.stdout) as Node).tags.map((t) => t.name)).toContain('apply-host');
    expect((await tag('apply-host'))?.node_count).toBe(2);
  });

  it('resolves UUIDs and local names too, and reports the count as JSON', async () => {
    await cli.run(['tags', 'add', 'apply-mixed']);
    const ns = await nodesJson(['--platform', 'linux', '--sort', 'hostname', '--limit', '3']);
    const r = await cli.run([
      'tags',
      'apply',
      'apply-mixed',
      ns[0].uuid.toUpperCase(),
      ns[1].localname,
      ns[2].hostname,
      ns[2].uuid,
      '-o',
      'json',
    ]);
    expect(r.exitCode).toBe(0);
    expect(r.stderr).toBe('');
    const out = JSON.parse(r.stdout);
    expect(out).toMatchObject({ tag: 'apply-mixed', env: 'prod', action: 'tag', count: 3 });
    expect([...out.uuids].sort()).toEqual(ns.map((n) => n.uuid).sort());
    for (const n of ns) expect((await node(n.uuid)).tags.map((t) => t.name)).toContain('apply-mixed');
  });

  it('exits 3 when one node is unknown, and tags none of them', async () => {
    await cli.run(['tags', 'add', 'apply-unknown']);
    const [known] = await nodesJson(['--sort', 'hostname', '--limit', '1']);
    const r = await cli.run(['tags', 'apply', 'apply-unknown', known.hostname, 'no-such-host-xyz']);
    expect(r.exitCode).toBe(3);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^error: no node "no-such-host-xyz" in prod; nothing changed\n/);
    expect((await tag('apply-unknown'))?.node_count).toBe(0);
    expect((await node(known.uuid)).tags.map((t) => t.name)).not.toContain('apply-unknown');
  });

  it('refuses an ambiguous local name, listing the candidate UUIDs, and tags nothing', async () => {
    await cli.run(['tags', 'add', 'apply-ambiguous']);
    const macs = await nodesJson(['-q', 'MacBook']);
    const counts = new Map<string, string[]>();
    for (const n of macs) counts.set(n.localname, [...(counts.get(n.localname) ?? []), n.uuid]);
    const [dupName, uuids] = [...counts.entries()].find(([, us]) => us.length > 1)!;
    const r = await cli.run(['tags', 'apply', 'apply-ambiguous', dupName]);
    expect(r.exitCode).toBe(6);
    expect(r.stderr).toContain(`"${dupName}" matches ${uuids.length} nodes in prod: `);
    const listed = r.stderr.match(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g) ?? [];
    expect(listed.length).toBe(Math.min(10, uuids.length));
    for (const u of listed) expect(uuids).toContain(u);
    if (uuids.length > 10) expect(r.stderr).toContain(` and ${uuids.length - 10} more`);
    expect(r.stderr).toMatch(/hint: name ambiguous nodes by UUID/);
    expect((await tag('apply-ambiguous'))?.node_count).toBe(0);
  });

  it('selects with --platform/--status across every page, and unapply takes the same selection', async () => {
    await cli.run(['tags', 'add', 'apply-select']);
    const expected = (await nodesJson(['--platform', 'darwin', '--status', 'inactive'])).map((n) => n.uuid).sort();
    expect(expected.length).toBeGreaterThan(0);
    const r = await cli.run(['tags', 'apply', 'apply-select', '--platform', 'darwin', '--status', 'inactive', '-o', 'json']);
    expect(r.exitCode).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.count).toBe(expected.length);
    expect([...out.uuids].sort()).toEqual(expected);
    expect((await tag('apply-select'))?.node_count).toBe(expected.length);

    const all = await cli.run(['tags', 'apply', 'apply-select', '--status', 'all']);
    expect(all.exitCode).toBe(0);
    expect(all.stderr).toBe('Tagged 1200 nodes with apply-select in prod\n'); // 1200 > one page and > one batch
    expect((await tag('apply-select'))?.node_count).toBe(1200);

    const un = await cli.run(['tags', 'unapply', 'apply-select', '-q', 'prod-']);
    expect(un.exitCode).toBe(0);
    expect(un.stderr).toBe('Removed tag apply-select from 1200 nodes in prod\n');
    expect((await tag('apply-select'))?.node_count).toBe(0);
  });

  it('refuses an empty selection, no nodes at all, and a mix of names and filters', async () => {
    const empty = await cli.run(['tags', 'apply', 'pci', '-q', 'matches-nothing-at-all']);
    expect(empty.exitCode).toBe(3);
    expect(empty.stderr).toBe('error: no nodes in prod match --search "matches-nothing-at-all"; nothing changed\n');
    const none = await cli.run(['tags', 'apply', 'pci']);
    expect(none.exitCode).toBe(2);
    expect(none.stderr).toMatch(/no nodes: name them/);
    const mix = await cli.run(['tags', 'apply', 'pci', 'prod-x', '--status', 'active']);
    expect(mix.exitCode).toBe(2);
  });

  it('exits 3 for an unknown tag, and 5 for a user who is not env admin', async () => {
    const [n] = await nodesJson(['--limit', '1']);
    const r = await cli.run(['tags', 'apply', 'no-such-tag', n.uuid]);
    expect(r.exitCode).toBe(3);
    const analyst = new Cli();
    await analyst.login(server.url, 'analyst');
    const denied = await analyst.run(['tags', 'apply', 'pci', n.uuid]);
    expect(denied.exitCode).toBe(5);
    expect(denied.stderr).toMatch(/forbidden, HTTP 403/);
    const list = await analyst.run(['tags', 'list', '-o', 'json']);
    expect(list.exitCode).toBe(0); // reading needs only user level
    analyst.cleanup();
  });
});

describe('tags remove', () => {
  it('without --yes and without a terminal exits 2 and keeps the tag', async () => {
    const r = await cli.run(['tags', 'remove', 'quarantine']);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(
      /refusing to proceed without confirmation: Delete tag quarantine from prod and untag its \d+ nodes?; pass --yes/,
    );
    expect(await tag('quarantine')).toBeDefined();
  });

  it('asks at a terminal: "n" keeps the tag', async () => {
    const pty = runInPty(cli, ['tags', 'remove', 'quarantine']);
    await pty.expect(/Delete tag quarantine from prod/);
    pty.line('n');
    const { exitCode, output } = await pty.done();
    expect(exitCode).toBe(1);
    expect(output).toMatch(/error: cancelled/);
    expect(await tag('quarantine')).toBeDefined();
  });

  it('with --yes deletes it and its node links', async () => {
    const tagged = (await tag('quarantine'))!.node_count;
    expect(tagged).toBeGreaterThan(0);
    const holder = (await nodesJson([])).find((n) => n.tags.some((t) => t.name === 'quarantine'))!;
    const r = await cli.run(['tags', 'remove', 'quarantine', '--yes']);
    expect(r.exitCode).toBe(0);
    expect(r.stderr).toBe('Deleted tag quarantine from prod\n');
    expect(await tag('quarantine')).toBeUndefined();
    expect((await node(holder.uuid)).tags.map((t) => t.name)).not.toContain('quarantine');
    const again = await cli.run(['tags', 'remove', 'quarantine', '--yes']);
    expect(again.exitCode).toBe(3);
  });
});
