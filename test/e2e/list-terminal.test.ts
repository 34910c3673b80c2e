// Long list exports and empty lists, as a user sees them at a real terminal (pseudo-terminal):
// a progress line on stderr while `--all` writes to a file, nothing extra when stderr is piped,
// and "No X in Y." when a list is empty.
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cli, type ServerProcess } from '../helpers/cli.js';
import { startAdminSession } from '../helpers/admin-cli.js';
import { Terminal } from '../fixtures/terminal.js';
import type { Node } from '../../src/api/index.js';

let server: ServerProcess;
let cli: Cli;
let dir: string;

beforeAll(async () => {
  ({ server, cli } = await startAdminSession());
  dir = mkdtempSync(join(tmpdir(), 'fleetctl-export-'));
}, 90_000);

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
    const t = new Terminal([`$FLEETCTL ${EXPORT.join(' ')} > ${file}`], { configDir: cli.configDir, shell: true, env: { CI: undefined, ...NOW } });
    await t.waitFor(/Fetched [\d,]+ of [\d,]+ nodes \([\d,]+\/s\)/, 60_000);
    expect(await t.exitCode(120_000)).toBe(0);
    const nodes = JSON.parse(readFileSync(file, 'utf8')) as Node[];
    const total = Number((await cli.run(['stats', '--jq', '.environments[] | select(.name == "prod") | .total'])).stdout);
    expect(nodes).toHaveLength(total);
    expect(new Set(nodes.map((n) => n.uuid)).size).toBe(total);
    expect(t.text()).toMatch(new RegExp(`of ${total.toLocaleString('en-US')} nodes`));
  }, 150_000);

  it('piped: stderr stays empty', async () => {
    const r = await cli.run(EXPORT, { env: NOW });
    expect(r.exitCode).toBe(0);
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout).length).toBeGreaterThan(100);
  }, 120_000);

  it('under CI, even at a terminal, no progress', async () => {
    const file = join(dir, 'ci.json');
    const t = new Terminal([`$FLEETCTL ${EXPORT.join(' ')} > ${file} && echo done`], { configDir: cli.configDir, shell: true, env: { CI: 'true', ...NOW } });
    expect(await t.exitCode(120_000)).toBe(0);
    expect(t.text().trim()).toBe('done');
  }, 150_000);
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
