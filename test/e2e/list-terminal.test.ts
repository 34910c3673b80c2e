// Long list exports and empty lists, as a user sees them at a real terminal (pseudo-terminal):
// a progress line on stderr while `--all` writes to a file, nothing extra when stderr is piped,
// and "No X in Y." when a list is empty.
import { existsSync, readFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { BIN, Cli, baseEnv, type ServerProcess } from '../helpers/cli.js';
import { startAdminSession } from '../helpers/admin-cli.js';
import { KEY, Terminal, alive, descendants } from '../fixtures/terminal.js';
import type { Node } from '../../src/api/index.js';

let server: ServerProcess;
let cli: Cli;
let dir: string;

beforeAll(async () => {
  ({ server, cli } = await startAdminSession());
  dir = mkdtempSync(join(tmpdir(), 'fleetctl-export-'));
});

afterAll(async () => {
  cli?.cleanup();
  rmSync(dir, { recursive: true, force: true });
  await server?.stop();
});

// Pages of 50: a couple of dozen requests (the per-user rate limit is 1,200 a minute). The
// progress line normally waits a second; the tests make it show from the start.
const EXPORT = ['nodes', 'list', '--all', '--page-size', '50', '-o', 'json'];
const NOW = { FLEETCTL_PROGRESS_DELAY_MS: '0' };

describe('--all export', () => {
  it('at a terminal with stdout in a file: a progress line on stderr, cleared at the end; the file is the whole list', async () => {
    const file = join(dir, 'nodes.json');
    const t = new Terminal([`$FLEETCTL ${EXPORT.join(' ')} > ${file}`], {
      configDir: cli.configDir,
      shell: true,
      env: { CI: undefined, ...NOW },
    });
    await t.waitFor(/Fetched [\d,]+ of [\d,]+ nodes \([\d,]+\/s\)/);
    expect(await t.exitCode()).toBe(0);
    const nodes = JSON.parse(readFileSync(file, 'utf8')) as Node[];
    const total = Number((await cli.run(['stats', '--jq', '.environments[] | select(.name == "prod") | .total'])).stdout);
    expect(nodes).toHaveLength(total);
    expect(new Set(nodes.map((n) => n.uuid)).size).toBe(total);
    expect(t.text()).toMatch(new RegExp(`of ${total.toLocaleString('en-US')} nodes`));
  });

  it('piped: stderr stays empty', async () => {
    const r = await cli.run(EXPORT, { env: NOW });
    expect(r.exitCode).toBe(0);
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout).length).toBeGreaterThan(100);
  });

  it('under CI, even at a terminal, no progress', async () => {
    const file = join(dir, 'ci.json');
    const t = new Terminal([`$FLEETCTL ${EXPORT.join(' ')} > ${file} && echo done`], {
      configDir: cli.configDir,
      shell: true,
      env: { CI: 'true', ...NOW },
    });
    expect(await t.exitCode()).toBe(0);
    expect(t.text().trim()).toBe('done');
  });
});

describe('empty lists at a terminal say so', () => {
  it.each([
    [['nodes', 'list', '-q', 'no-such-node-zz'], 'No nodes in prod match.'],
    [['carves', 'list', '-q', 'no-such-carve-zz'], 'No carves in prod match.'],
    [['audit', 'list', '-q', 'no-such-entry-zz'], 'No audit entries match.'],
  ])('%j', async (args, message) => {
    const t = new Terminal(args, { configDir: cli.configDir });
    expect(await t.exitCode()).toBe(0);
    expect(t.text().trim()).toBe(message);
  });

  it('whole lists too: config list before any login', async () => {
    const fresh = new Cli();
    const t = new Terminal(['config', 'list'], { configDir: fresh.configDir });
    expect(await t.exitCode()).toBe(0);
    expect(t.text().trim()).toBe('No profiles yet: `fleetctl login` creates one.');
    fresh.cleanup();
  });
});

describe('nodes show', () => {
  it('at a terminal: a grouped, readable view; piped or -o json: the raw record', async () => {
    const raw = JSON.parse((await cli.run(['nodes', 'show', 'prod-web-0013', '-o', 'json'])).stdout) as Node;
    const t = new Terminal(['nodes', 'show', 'prod-web-0013'], { configDir: cli.configDir });
    expect(await t.exitCode()).toBe(0);
    const screen = t.text();
    const lines = screen.trimEnd().split('\n');
    expect(lines[0]).toBe('prod-web-0013');
    expect(lines.filter((l) => /^[A-Z]\w+$/.test(l))).toEqual(['Identity', 'Status', 'System', 'Tags']);
    expect(screen).toMatch(new RegExp(`^  UUID +${raw.uuid}$`, 'm'));
    expect(screen).toMatch(new RegExp(`^  Health +${raw.health.status}`, 'm'));
    expect(screen).toMatch(/^ {2}Uptime +(\d+ (day|hour|minute)s?( \d+ (hour|minute)s?)?|unknown)$/m);
    expect(screen).toMatch(new RegExp(`^  Tags +${raw.tags.length ? raw.tags.map((x) => x.name).join(', ') : 'none'}$`, 'm'));
    expect(screen).not.toMatch(/system_info|uptime\.seconds|volume_size/);
    expect(lines.length).toBeLessThan(35);

    const piped = await cli.run(['nodes', 'show', 'prod-web-0013']);
    expect(piped.stdout).toMatch(new RegExp(`^uuid\\t${raw.uuid}$`, 'm'));
  });
});

describe('tables keep identifiers whole at any width', () => {
  const uuid = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;
  const screen = async (args: string[], cols: number) => {
    const t = new Terminal(args, { configDir: cli.configDir, cols, env: { COLUMNS: String(cols) } });
    expect(await t.exitCode()).toBe(0);
    return t.text();
  };

  it('nodes list at 80 columns: whole UUIDs and hostnames, fewer columns; a UUID from the screen pastes into nodes show', async () => {
    const raw = JSON.parse((await cli.run(['nodes', 'list', '--json'])).stdout) as Node[];
    const text = await screen(['nodes', 'list'], 80);
    const header = text.split('\n')[0];
    expect(header).toMatch(/^UUID +HOSTNAME +IP/);
    expect(header).not.toMatch(/TAGS|OSQUERY/);
    expect(text).not.toContain('…');
    const shown = text.match(uuid)!;
    expect(shown.slice(0, raw.length)).toEqual(raw.map((n) => n.uuid));
    for (const n of raw) expect(text).toContain(n.hostname);
    for (const line of text
      .trimEnd()
      .split('\n')
      .slice(0, raw.length + 1))
      expect(line.length).toBeLessThanOrEqual(80);
    const pasted = await cli.run(['nodes', 'show', shown[0], '--json']);
    expect(JSON.parse(pasted.stdout).uuid).toBe(raw[0].uuid);
  });

  it('at 200 columns every column shows; -o wide shows every column at 80 too', async () => {
    expect((await screen(['nodes', 'list'], 200)).split('\n')[0]).toMatch(
      /^UUID +HOSTNAME +PLATFORM +OSQUERY +IP +HEALTH +LAST SEEN +TAGS$/,
    );
    expect((await screen(['nodes', 'list', '-o', 'wide'], 80)).split('\n')[0]).toMatch(
      /^UUID +HOSTNAME +PLATFORM +OSQUERY +IP +HEALTH +LAST SEEN +TAGS$/,
    );
  });

  it('carves, users and stats at 80 columns: whole names, access lists and UUIDs', async () => {
    const carves = JSON.parse((await cli.run(['carves', 'list', '--json'])).stdout) as { name: string }[];
    const ct = await screen(['carves', 'list'], 80);
    for (const c of carves) expect(ct).toContain(c.name);
    const users = (await cli.run(['users', 'list', '--fields', 'username,access', '--no-headers'])).stdout
      .trim()
      .split('\n')
      .map((l) => l.split('\t'));
    const ut = await screen(['users', 'list'], 80);
    for (const [name, access] of users) expect(ut).toMatch(new RegExp(`^${name} .*${access.replace(/[()+]/g, '\\$&')}`, 'm'));
    const envs = JSON.parse((await cli.run(['stats', '--json'])).stdout).environments as { uuid: string }[];
    const st = await screen(['stats', '-o', 'table'], 80);
    for (const e of envs) expect(st).toContain(e.uuid);
    expect(st).not.toContain('…');
  });
});

describe('--time', () => {
  it('tables show relative times by default, the local clock with --time local, the raw value with --time rfc3339', async () => {
    const raw = JSON.parse((await cli.run(['nodes', 'list', '--limit', '3', '--json'])).stdout) as Node[];
    const text = async (extra: string[]) => {
      const t = new Terminal(['nodes', 'list', '--limit', '3', '--fields', 'hostname,last_seen', ...extra], { configDir: cli.configDir });
      expect(await t.exitCode()).toBe(0);
      return t.text();
    };
    expect(await text([])).toMatch(/ago|just now|never/);
    const local = await text(['--time', 'local']);
    expect(local).toMatch(/^\S+ +\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/m);
    const rfc = await text(['--time', 'rfc3339']);
    for (const n of raw) expect(rfc).toContain(n.last_seen);
  });

  it('audit list --follow shows clock times, not "just now" on every line', async () => {
    const t = new Terminal(['audit', 'list', '--follow', '--limit', '3', '--fields', 'created_at,line'], { configDir: cli.configDir });
    await t.waitFor(/\d{4}-\d\d-\d\d \d\d:\d\d:\d\d/);
    t.kill();
    expect(t.text()).not.toMatch(/just now|ago/);
  });
});

describe('--watch and the pager', () => {
  it('--watch redraws the list in place at a terminal until Ctrl-C', async () => {
    const t = new Terminal(['nodes', 'list', '--limit', '2', '--fields', 'hostname', '--watch', '300ms'], { configDir: cli.configDir });
    await t.waitFor(/Every 300ms: fleetctl nodes list/);
    await t.waitFor(/Every 300ms: fleetctl nodes list/); // a second frame
    t.type('\x03');
    expect(await t.exitCode()).toBe(130);
  });

  it('--watch piped prints each refresh in full, one after another', async () => {
    // Stopped (Ctrl-C) once the second refresh has arrived, however long the machine takes for it.
    const proc = execa('node', [BIN, 'stats', '--jq', '.total_nodes', '--watch', '200ms'], {
      env: baseEnv(cli.configDir),
      extendEnv: false,
      reject: false,
      buffer: false,
      stdin: 'ignore',
    });
    let out = '';
    await new Promise<void>((resolve, reject) => {
      proc.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.split('\n').length > 2) resolve();
      });
      void proc.then((r) => reject(new Error(`fleetctl exited (${r.exitCode}) before two refreshes: ${out}`)));
    });
    proc.kill('SIGINT');
    expect((await proc).exitCode).toBe(130);
    const lines = out.trim().split('\n');
    expect(lines.length).toBeGreaterThanOrEqual(2);
    expect(new Set(lines).size).toBe(1);
  });

  const lessUnder = (pid: number) => descendants(pid).filter((p) => p.comm === 'less');

  it('a stream (audit list --follow) never goes through the pager, even with PAGER=less', async () => {
    const t = new Terminal(['audit', 'list', '--follow', '--limit', '3', '--interval', '200ms'], {
      configDir: cli.configDir,
      env: { FLEETCTL_PAGER: undefined, PAGER: 'less' },
    });
    await t.waitFor(/Following new audit entries every 200ms/);
    expect(lessUnder(t.pid)).toEqual([]);
    expect(t.text()).toMatch(/^ID +TIME +USER/m); // the entries are on the terminal itself
    t.type(KEY.ctrlC);
    expect(await t.exitCode()).toBe(130);
  });

  it('Ctrl-C while the default pager (less) shows a long list: fleetctl exits 130 and no less is left running', async () => {
    // Under a shell that outlives fleetctl, as at a user's prompt (were fleetctl the terminal's
    // session leader, its exit would hang up a leftover less and hide the bug).
    const t = new Terminal([`trap 'echo' INT; $FLEETCTL nodes list --page-size 300; echo "FLEETCTL-EXITED $?"; sleep 30`], {
      configDir: cli.configDir,
      shell: true,
      env: { FLEETCTL_PAGER: undefined, PAGER: undefined, LESS: undefined },
    });
    await t.waitFor(/HOSTNAME/); // less is showing the table
    const pager = lessUnder(t.pid)[0];
    expect(pager, `no less under fleetctl; terminal:\n${t.text()}`).toBeDefined();
    t.type(KEY.ctrlC);
    await t.waitFor(/FLEETCTL-EXITED 130/);
    expect(alive(pager.pid)).toBe(false);
    t.kill();
  });

  it('long tables at a terminal go through FLEETCTL_PAGER; --no-pager skips it; the footer waits for the pager', async () => {
    const pager = join(dir, 'pager.sh');
    const marked = join(dir, 'paged.txt');
    writeFileSync(pager, `#!/bin/sh\ncat > ${marked}\necho PAGER-DONE\n`, { mode: 0o755 });
    const t = new Terminal(['nodes', 'list', '--page-size', '5'], { configDir: cli.configDir, env: { FLEETCTL_PAGER: pager } });
    expect(await t.exitCode()).toBe(0);
    expect(readFileSync(marked, 'utf8')).toMatch(/^UUID +HOSTNAME/);
    expect(t.text()).toMatch(/PAGER-DONE\n.*Showing 1-5 of/s);
    rmSync(marked);
    const direct = new Terminal(['nodes', 'list', '--page-size', '5', '--no-pager'], {
      configDir: cli.configDir,
      env: { FLEETCTL_PAGER: pager },
    });
    expect(await direct.exitCode()).toBe(0);
    expect(direct.text()).toMatch(/^UUID +HOSTNAME/m);
    expect(existsSync(marked)).toBe(false);
  });
});

describe('bulk changes', () => {
  it('tags apply over a filter shows progress at a terminal, then the summary', async () => {
    expect((await cli.run(['tags', 'add', 'bulk-progress'])).exitCode).toBe(0);
    const t = new Terminal(['tags', 'apply', 'bulk-progress', '--status', 'active'], {
      configDir: cli.configDir,
      env: { CI: undefined, ...NOW },
    });
    await t.waitFor(/Tagged [\d,]+ of [\d,]+ nodes \([\d,]+\/s\)/);
    expect(await t.exitCode()).toBe(0);
    expect(t.text()).toMatch(/Tagged \d+ nodes with bulk-progress in prod/);
    const piped = await cli.run(['tags', 'apply', 'bulk-progress', '--status', 'inactive'], { env: NOW });
    expect(piped.stderr).toMatch(/^Tagged \d+ nodes with bulk-progress in prod\n$/);
  });
});
