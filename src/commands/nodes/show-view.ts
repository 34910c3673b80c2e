// `nodes show` at a terminal: the node as a person reads it, in groups (identity, status and
// health, system, tags), instead of 72 raw lines (`uptime.seconds`, `system_info.bios.volume_size`).
// The raw record stays behind -o json / yaml, --fields and piped output.
import type { Node } from '../../api/index.js';
import { cellText, colorStatus, isNever, relativeTime, tableTime, type Colors } from '../../output/index.js';
import { severityName, statusText } from '../logs/rows.js';

const plural = (n: number, unit: string) => `${n} ${unit}${n === 1 ? '' : 's'}`;

export function uptimeText(u: Node['uptime']): string {
  if (!u || u.total_seconds <= 0) return 'unknown';
  if (u.days > 0) return `${plural(u.days, 'day')} ${plural(u.hours, 'hour')}`;
  if (u.hours > 0) return `${plural(u.hours, 'hour')} ${plural(u.minutes, 'minute')}`;
  return plural(u.minutes, 'minute');
}

function when(iso: string, now: Date): string {
  return isNever(iso) ? 'never' : `${cellText(iso)} (${relativeTime(iso, now)})`;
}

/** Joins the non-empty parts: `join(' ', 'Ubuntu', '', '22.04')` -> "Ubuntu 22.04". */
const join = (sep: string, ...parts: (string | undefined)[]) => parts.filter((p) => p && p.trim()).join(sep);

export function renderNodeView(n: Node, c: Colors, now = new Date()): string {
  const si = n.system_info;
  const health = join(': ', n.health.status, n.health.reason);
  const groups: [string, [string, string][]][] = [
    [
      'Identity',
      [
        ['UUID', n.uuid],
        ['Hostname', n.hostname],
        ['Local name', n.localname],
        ['IP address', n.ip_address],
        ['Environment', n.environment],
        ['Serial', n.hardware_serial],
      ],
    ],
    [
      'Status',
      [
        ['Last seen', when(n.last_seen, now)],
        ['Health', colorStatus(c, n.health.status, cellText(health))],
        ['Signals', cellText(n.health.signals)],
        ['Risk', colorStatus(c, n.posture.risk_level, cellText(n.posture.risk_level))],
        ['Uptime', uptimeText(n.uptime)],
        ['Enrolled', when(n.created_at, now)],
      ],
    ],
    [
      'System',
      [
        ['Platform', join(' ', n.platform, n.platform_version)],
        ['OS', join(' ', si?.os?.name, si?.os?.version)],
        ['osquery', join(', ', n.osquery_version, n.osquery_user && `runs as ${n.osquery_user}`)],
        [
          'Config',
          n.config_fetched_at === undefined
            ? n.config_hash
            : isNever(n.config_fetched_at)
              ? 'never fetched'
              : `${n.config_hash.slice(0, 12)}, fetched ${when(n.config_fetched_at, now)}`,
        ],
        ['CPU', join(', ', n.cpu, si?.system?.cpu_logical_cores && `${si.system.cpu_logical_cores} cores`)],
        ['Memory', n.memory],
        ['Hardware', join(' ', si?.system?.hardware_vendor, si?.system?.hardware_model)],
        ['Received', `${n.bytes_received.toLocaleString('en-US')} bytes`],
      ],
    ],
    ['Tags', [['Tags', cellText(n.tags) || 'none']]],
  ];
  const width = Math.max(...groups.flatMap(([, rows]) => rows.map(([k]) => k.length)));
  let text = `${c.bold(cellText(n.hostname || n.uuid))}\n`;
  for (const [title, rows] of groups) {
    const shown = rows.filter(([, v]) => v !== '');
    if (shown.length === 0) continue;
    text += `\n${c.bold(title)}\n`;
    for (const [k, v] of shown) text += `  ${k.padEnd(width)}  ${k === 'Health' || k === 'Risk' ? v : cellText(v)}\n`;
  }
  return text + statusProblems(n, c, now);
}

/** Issue 30: osquery's last warnings and errors from the node's status log, newest first. */
function statusProblems(n: Node, c: Colors, now: Date): string {
  if (n.status_problems === undefined) return '';
  if (n.status_problems.length === 0) return `\n${c.bold('Status log')}\n  no warnings or errors\n`;
  let text = `\n${c.bold('Status log')} (last warnings and errors)\n`;
  for (const l of n.status_problems) {
    const e = (typeof l.entry === 'object' && l.entry !== null ? l.entry : {}) as Record<string, unknown>;
    const sev = severityName(e.severity) ?? '';
    text += `  ${tableTime(l.received_at, now, 'local')}  ${colorStatus(c, sev, sev.padEnd(7))}  ${cellText(statusText(e))}\n`;
  }
  return text;
}
