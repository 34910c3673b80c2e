import { describe, expect, it } from 'vitest';
import type { DashboardStats } from '../../src/api/index.js';
import { bar, MAX_BAR, platformBars, printDashboard } from '../../src/commands/stats/dashboard.js';
import { colorsFor } from '../../src/output/index.js';
import { memoryIO } from '../helpers/memory-io.js';

const stats: DashboardStats = {
  total_nodes: 2200,
  active_nodes: 1500,
  inactive_nodes: 700,
  inactive_hours: 72,
  total_active_queries: 3,
  total_active_carves: 1,
  platform_counts: { linux: 1200, darwin: 440, windows: 374, other: 186 },
  environments: [
    {
      uuid: 'u-dev',
      name: 'dev',
      active: 300,
      inactive: 100,
      total: 400,
      active_queries: 0,
      active_carves: 0,
      platform_counts: { linux: 200, darwin: 100, windows: 60, other: 40 },
      enrollment: 'open',
      enroll_expire: '0001-01-01T00:00:00Z',
    },
    {
      uuid: 'u-prod',
      name: 'prod',
      active: 1200,
      inactive: 600,
      total: 1800,
      active_queries: 3,
      active_carves: 1,
      platform_counts: { linux: 1000, darwin: 340, windows: 314, other: 146 },
      enrollment: 'open',
      enroll_expire: '0001-01-01T00:00:00Z',
    },
  ],
};

const ANSI = /\u001b\[[0-9;]*m/;

describe('bar', () => {
  it('fills the width for the maximum and scales others in eighths of a cell', () => {
    expect(bar(10, 10, 8)).toBe('████████');
    expect(bar(5, 10, 8)).toBe('████');
    expect(bar(1, 2, 1)).toBe('▌'); // half a cell = 4 eighths
    expect(bar(3, 8, 3)).toBe('█▏'); // 3/8 of 3 cells = 9 eighths
  });
  it('never draws a bar for zero and always a sliver for a small non-zero value', () => {
    expect(bar(0, 10, 20)).toBe('');
    expect(bar(1, 100000, 20)).toBe('▏');
    expect(bar(3, 0, 20)).toBe('');
  });
});

describe('platformBars', () => {
  it('scales the largest platform to the room left on the line, and keeps every line within the width', () => {
    for (const width of [40, 80, 132, 200]) {
      const lines = platformBars(stats.platform_counts, width, colorsFor({ color: false }))
        .trimEnd()
        .split('\n');
      expect(lines).toHaveLength(4);
      expect(lines.map((l) => l.split(/\s+/)[0])).toEqual(['linux', 'darwin', 'windows', 'other']);
      for (const l of lines) expect([...l].length).toBeLessThanOrEqual(width);
      const blocks = (l: string) => [...l].filter((ch) => '█▏▎▍▌▋▊▉'.includes(ch)).length;
      expect(blocks(lines[0])).toBe(Math.min(MAX_BAR, width - 7 - 4 - 6 - 6)); // label, count, percent, gaps; capped
      expect(blocks(lines[1])).toBeLessThan(blocks(lines[0]));
      expect(lines[0]).toMatch(/1200\s+54\.5%$/);
      expect(lines[3]).toMatch(/186\s+8\.5%$/);
    }
  });
  it('shows 0.0% and no bars for an empty fleet', () => {
    const text = platformBars({ linux: 0, darwin: 0, windows: 0, other: 0 }, 60, colorsFor({ color: false }));
    expect(text).not.toMatch(/[█▏▎▍▌▋▊▉]/);
    expect(text.match(/0\.0%/g)).toHaveLength(4);
  });
});

describe('printDashboard', () => {
  it('prints totals, one row per environment and the platform bars, without colors when io.color is off', async () => {
    const io = memoryIO({ tty: true, columns: 100, color: false });
    await printDashboard(io, stats);
    const out = io.stdoutText();
    expect(out).not.toMatch(ANSI);
    expect(out).toMatch(/Nodes\s+2200 total\s+1500 active \(68\.2%\)\s+700 inactive \(no check-in for 72 h\)/);
    expect(out).toContain('3 active queries, 1 active carve');
    expect(out).toMatch(/^ENVIRONMENT\s+TOTAL\s+ACTIVE\s+INACTIVE\s+QUERIES\s+CARVES\s+LINUX\s+DARWIN\s+WINDOWS\s+OTHER$/m);
    expect(out).toMatch(/^dev\s+400\s+300\s+100\s+0\s+0\s+200\s+100\s+60\s+40$/m);
    expect(out).toMatch(/^prod\s+1800\s+1200\s+600\s+3\s+1\s+1000\s+340\s+314\s+146$/m);
    expect(out).not.toContain('u-prod'); // uuids are for the piped rows
    expect(out).toMatch(/^Platforms$/m);
    expect(out).toMatch(/^linux\s+█+\s+1200\s+54\.5%$/m);
    for (const line of out.split('\n')) expect([...line].length).toBeLessThanOrEqual(100);
    expect(io.stderrText()).toBe('');
  });
  it('says an enrollment window that is closing or closed (issue 27), and nothing when all are open', async () => {
    const soon = new Date(Date.now() + 5 * 3600_000 + 60_000).toISOString();
    const io = memoryIO({ tty: true, columns: 100, color: false });
    await printDashboard(io, {
      ...stats,
      environments: [
        { ...stats.environments[0], enrollment: 'closing', enroll_expire: soon },
        { ...stats.environments[1], enrollment: 'closed' },
      ],
    });
    expect(io.stdoutText()).toMatch(/^Enroll\s+dev closing in 5 hours, prod closed$/m);
    const open = memoryIO({ tty: true, columns: 100, color: false });
    await printDashboard(open, stats);
    expect(open.stdoutText()).not.toContain('Enroll');
  });
  it('colors when io.color is on', async () => {
    const io = memoryIO({ tty: true, columns: 80, color: true });
    await printDashboard(io, stats);
    expect(io.stdoutText()).toMatch(ANSI);
  });
});
