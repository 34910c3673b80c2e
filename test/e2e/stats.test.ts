// `fleetctl stats` end to end against a real `fleetctl server --dev` process: data when piped or
// with -o, the dashboard in a terminal.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cli, type ServerProcess } from '../helpers/cli.js';
import { apiCall, runInPty, startAdminSession } from '../helpers/admin-cli.js';
import type { DashboardStats } from '../../src/api/index.js';

let server: ServerProcess;
let cli: Cli;
let token: string;

async function apiStats(t = token): Promise<DashboardStats> {
  const r = await apiCall(server.url, 'GET', '/api/v1/stats', { token: t });
  expect(r.status).toBe(200);
  return r.body as DashboardStats;
}

beforeAll(async () => {
  ({ server, cli, token } = await startAdminSession());
});

afterAll(async () => {
  cli?.cleanup();
  await server?.stop();
});

describe('stats', () => {
  it('-o json and yaml print the statistics object as the API returns it', async () => {
    const r = await cli.run(['stats', '-o', 'json']);
    expect(r.exitCode).toBe(0);
    expect(r.stderr).toBe('');
    const s = JSON.parse(r.stdout) as DashboardStats;
    expect(s).toEqual(await apiStats());
    expect(s.total_nodes).toBe(2200);
    expect(s.environments.map((e) => e.name)).toEqual(['dev', 'prod', 'staging']);
    const y = await cli.run(['stats', '-o', 'yaml']);
    expect(y.stdout).toMatch(/^total_nodes: 2200\n/);
    expect((await cli.run(['stats', '--jq', '.total_nodes'])).stdout).toBe('2200\n');
  });

  it('piped: one TSV row per environment; -o csv the same rows', async () => {
    const s = await apiStats();
    const r = await cli.run(['stats']);
    expect(r.exitCode).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe('ENVIRONMENT\tUUID\tTOTAL\tACTIVE\tINACTIVE\tQUERIES\tCARVES\tLINUX\tDARWIN\tWINDOWS\tOTHER\tENROLLMENT');
    expect(lines.slice(1)).toEqual(
      s.environments.map((e) =>
        [
          e.name,
          e.uuid,
          e.total,
          e.active,
          e.inactive,
          e.active_queries,
          e.active_carves,
          e.platform_counts.linux,
          e.platform_counts.darwin,
          e.platform_counts.windows,
          e.platform_counts.other,
          e.enrollment,
        ].join('\t'),
      ),
    );
    const csv = await cli.run(['stats', '-o', 'csv', '--fields', 'name,total']);
    expect(csv.stdout).toBe(`name,total\n${s.environments.map((e) => `${e.name},${e.total}`).join('\n')}\n`);
  });

  it('counts only the environments the caller can access', async () => {
    const dev = new Cli();
    await dev.login(server.url, 'dev-user', 'dev');
    const r = await dev.run(['stats', '--json']);
    const s = JSON.parse(r.stdout) as DashboardStats;
    expect(s.environments.map((e) => e.name)).toEqual(['dev']);
    expect(s.total_nodes).toBe(400);
    dev.cleanup();
  });

  it('draws the dashboard in a terminal: totals, the env table and platform bars', async () => {
    const s = await apiStats();
    const pty = runInPty(cli, ['stats']);
    const { exitCode, output } = await pty.done();
    expect(exitCode).toBe(0);
    expect(output).toMatch(new RegExp(`Nodes\\s+${s.total_nodes} total\\s+${s.active_nodes} active`));
    expect(output).toContain(`(no check-in for ${s.inactive_hours} h)`);
    expect(output).toMatch(/^ENVIRONMENT\s+TOTAL\s+ACTIVE/m);
    const prod = s.environments.find((e) => e.name === 'prod')!;
    expect(output).toMatch(new RegExp(`^prod\\s+${prod.total}\\s+${prod.active}\\s+${prod.inactive}\\s`, 'm'));
    expect(output).toMatch(new RegExp(`^linux\\s+█+[▏▎▍▌▋▊▉]?\\s+${s.platform_counts.linux}\\s+\\d+\\.\\d%$`, 'm'));
    for (const line of output.split('\n')) expect([...line].length).toBeLessThanOrEqual(200);
  });

  it('has examples in --help', async () => {
    expect((await cli.run(['stats', '--help'])).stdout).toMatch(/Examples:\n {2}\$ fleetctl stats/);
  });
});
