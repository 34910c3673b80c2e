// `fleetctl stats` at a terminal: totals, a per-environment table and platform bars.
import type { DashboardStats, EnvironmentStats, PlatformCounts } from '../../api/index.js';
import type { IO } from '../../io.js';
import { colorsFor, printList, relativeTime, safeText, type Colors, type Column } from '../../output/index.js';

const PLATFORM_KEYS = ['linux', 'darwin', 'windows', 'other'] as const satisfies readonly (keyof PlatformCounts)[];

/** Per-environment rows: the columns of the piped TSV / csv (and, minus uuid, of the dashboard). */
export const ENV_STATS_COLUMNS: Column<EnvironmentStats>[] = [
  { key: 'name', header: 'ENVIRONMENT', id: true },
  { key: 'uuid', header: 'UUID', id: true },
  { key: 'total', header: 'TOTAL', kind: 'number' },
  { key: 'active', header: 'ACTIVE', kind: 'number' },
  { key: 'inactive', header: 'INACTIVE', kind: 'number', drop: 1 },
  { key: 'active_queries', header: 'QUERIES', kind: 'number', drop: 2 },
  { key: 'active_carves', header: 'CARVES', kind: 'number', drop: 3 },
  // Platform counts go first on a narrow terminal (the dashboard's bars show them too).
  ...PLATFORM_KEYS.map((p, i): Column<EnvironmentStats> => ({
    key: `platform_counts.${p}`,
    header: p.toUpperCase(),
    kind: 'number',
    drop: 4 + PLATFORM_KEYS.length - i,
  })),
  { key: 'enrollment', header: 'ENROLLMENT', drop: 9 },
];

// The dashboard says enrollment in a line of its own, only when a window is closing or closed.
const DASHBOARD_ENV_COLUMNS = ENV_STATS_COLUMNS.filter((c) => c.key !== 'uuid' && c.key !== 'enrollment');

const EIGHTHS = ['', '▏', '▎', '▍', '▌', '▋', '▊', '▉'];

/** A bar of `value / max` of `width` cells, in eighths of a cell. */
export function bar(value: number, max: number, width: number): string {
  if (max <= 0 || value <= 0 || width <= 0) return '';
  const eighths = Math.max(1, Math.round((value / max) * width * 8));
  return '█'.repeat(Math.floor(eighths / 8)) + EIGHTHS[eighths % 8];
}

const pct = (n: number, total: number) => (total > 0 ? `${((n / total) * 100).toFixed(1)}%` : '0.0%');
const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

function paintPlatform(c: Colors, p: (typeof PLATFORM_KEYS)[number]): (s: string) => string {
  const paints = {
    linux: (s: string) => c.yellow(s),
    darwin: (s: string) => c.cyan(s),
    windows: (s: string) => c.blue(s),
    other: (s: string) => c.magenta(s),
  };
  return paints[p];
}

export const MAX_BAR = 50;

/** `LABEL  ████▌   COUNT  PCT` lines, bars scaled so the largest platform fills the room left on the line. */
export function platformBars(counts: PlatformCounts, columns: number, c: Colors): string {
  const total = PLATFORM_KEYS.reduce((s, p) => s + counts[p], 0);
  const max = Math.max(...PLATFORM_KEYS.map((p) => counts[p]));
  const labelW = Math.max(...PLATFORM_KEYS.map((p) => p.length));
  const countW = Math.max(...PLATFORM_KEYS.map((p) => String(counts[p]).length));
  const pctW = 6; // "100.0%"
  // Capped: on a 200-column terminal a 180-cell bar is harder to compare, not easier.
  const barW = Math.min(MAX_BAR, Math.max(10, columns - labelW - countW - pctW - 3 * 2));
  return PLATFORM_KEYS.map((p) => {
    const b = bar(counts[p], max, barW);
    const pad = ' '.repeat(barW - [...b].length);
    return `${p.padEnd(labelW)}  ${paintPlatform(c, p)(b)}${pad}  ${String(counts[p]).padStart(countW)}  ${pct(counts[p], total).padStart(pctW)}\n`;
  }).join('');
}

/** The totals block. */
export function summaryText(s: DashboardStats, c: Colors): string {
  const w = String(s.total_nodes).length;
  return (
    `${c.bold('Nodes')}    ${String(s.total_nodes).padStart(w)} total   ${c.green(`${s.active_nodes} active`)} (${pct(s.active_nodes, s.total_nodes)})   ` +
    `${c.red(`${s.inactive_nodes} inactive`)} ${c.dim(`(no check-in for ${s.inactive_hours} h)`)}\n` +
    `${c.bold('Running')}  ${s.total_active_queries} active ${s.total_active_queries === 1 ? 'query' : 'queries'}, ${plural(s.total_active_carves, 'active carve')}\n`
  );
}

export async function printDashboard(io: IO, s: DashboardStats): Promise<void> {
  const c = colorsFor(io);
  io.out(`${summaryText(s, c)}`);
  // Issue 27: an enrollment window that is closing or closed is said here, where a rollout is watched.
  const shut = s.environments.filter((e) => e.enrollment === 'closing' || e.enrollment === 'closed');
  if (shut.length)
    io.out(
      `${c.bold('Enroll')}   ${shut.map((e) => `${safeText(e.name)} ${e.enrollment === 'closed' ? c.red('closed') : c.yellow(`closing ${relativeTime(e.enroll_expire)}`)}`).join(', ')}\n`,
    );
  io.out('\n');
  if (s.environments.length > 0) {
    await printList(io, { format: 'table' }, s.environments, DASHBOARD_ENV_COLUMNS);
    io.out('\n');
  }
  io.out(`${c.bold('Platforms')}\n${platformBars(s.platform_counts, io.columns, c)}`);
}
