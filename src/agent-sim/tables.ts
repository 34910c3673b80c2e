// How a simulated agent answers a distributed query: a handful of osquery tables with rows
// that fit the host, the columns named in a simple SELECT list, and osquery's error status
// for anything else ("no such table"), so a typo in a live query looks as it would on a fleet.
import type { SimHost } from './hosts.js';

export type Row = Record<string, string>;

export type Answer = { kind: 'rows'; rows: Row[] } | { kind: 'error'; message: string } | { kind: 'carve'; path: string };

const PROCESS_NAMES: Record<string, string[]> = {
  linux: ['systemd', 'sshd', 'osqueryd', 'nginx', 'postgres', 'cron', 'rsyslogd'],
  darwin: ['launchd', 'osqueryd', 'WindowServer', 'Finder', 'mds', 'Dock'],
  windows: ['System', 'smss.exe', 'osqueryd.exe', 'explorer.exe', 'svchost.exe', 'lsass.exe'],
};

const family = (h: SimHost) => (h.platform === 'darwin' ? 'darwin' : h.platform === 'windows' ? 'windows' : 'linux');

function tableRows(table: string, h: SimHost, now: number): Row[] | undefined {
  switch (table) {
    case 'os_version':
      return [h.osVersion];
    case 'system_info':
      return [h.systemInfo];
    case 'osquery_info':
      return [h.osqueryInfo];
    case 'platform_info':
      return h.platformInfo ? [h.platformInfo] : [];
    case 'uptime': {
      const s = Math.max(0, Math.floor(now / 1000) - h.startTime);
      return [
        {
          days: String(Math.floor(s / 86400)),
          hours: String(Math.floor(s / 3600) % 24),
          minutes: String(Math.floor(s / 60) % 60),
          seconds: String(s % 60),
          total_seconds: String(s),
        },
      ];
    }
    case 'time': {
      const d = new Date(now);
      return [{ unix_time: String(Math.floor(now / 1000)), datetime: d.toISOString().replace(/\.\d+Z$/, 'Z'), timezone: 'UTC' }];
    }
    case 'processes':
      return PROCESS_NAMES[family(h)].map((name, i) => ({
        pid: String(i === 0 ? 1 : 100 + i * 37),
        name,
        path: family(h) === 'windows' ? `C:\\Windows\\System32\\${name}` : `/usr/sbin/${name}`,
        cmdline: name,
        state: 'S',
        parent: String(i === 0 ? 0 : 1),
        uid: i < 3 ? '0' : '1000',
        resident_size: String(4_000_000 + i * 1_234_567),
        start_time: String(h.startTime + i),
      }));
    case 'users': {
      const users =
        family(h) === 'windows'
          ? [
              ['Administrator', '500'],
              ['alice', '1001'],
            ]
          : [
              ['root', '0'],
              ['daemon', '1'],
              ['alice', '1000'],
              ['bob', '1001'],
            ];
      return users.map(([username, uid]) => ({
        uid: uid,
        gid: uid,
        username: username,
        description: '',
        directory: family(h) === 'windows' ? `C:\\Users\\${username}` : username === 'root' ? '/root' : `/home/${username}`,
        shell: family(h) === 'windows' ? 'C:\\Windows\\system32\\cmd.exe' : '/bin/bash',
        uuid: '',
      }));
    }
    case 'listening_ports': {
      // What the processes above listen on (osquery's listening_ports, on every platform).
      const ports: [string, string, string][] =
        family(h) === 'windows'
          ? [
              ['lsass.exe', '445', '0.0.0.0'],
              ['svchost.exe', '135', '0.0.0.0'],
            ]
          : family(h) === 'darwin'
            ? [['launchd', '22', '0.0.0.0']]
            : [
                ['sshd', '22', '0.0.0.0'],
                ['nginx', '443', '0.0.0.0'],
                ['postgres', '5432', '127.0.0.1'],
              ];
      const procs = tableRows('processes', h, now)!;
      return ports.map(([name, port, address]) => ({
        pid: procs.find((p) => p.name === name)?.pid ?? '1',
        port,
        protocol: '6',
        family: '2',
        address,
        fd: '3',
        socket: String(10_000 + Number(port)),
        path: '',
        net_namespace: '0',
      }));
    }
    case 'interface_addresses':
      return [
        { interface: 'lo', address: '127.0.0.1', mask: '255.0.0.0', type: 'manual' },
        {
          interface: family(h) === 'darwin' ? 'en0' : 'eth0',
          address: `10.${h.systemInfo.hardware_serial.charCodeAt(0) % 250}.${h.systemInfo.hardware_serial.charCodeAt(1) % 250}.${h.systemInfo.hardware_serial.charCodeAt(2) % 250}`,
          mask: '255.255.0.0',
          type: 'dhcp',
        },
      ];
    default:
      return undefined;
  }
}

/** The path of a carve query (osquery's `SELECT * FROM carves WHERE carve=1 AND path = '...'`), if it is one. */
export function carvePath(sql: string): string | undefined {
  if (!/\bfrom\s+carves\b/i.test(sql) || !/\bcarve\s*=\s*1\b/i.test(sql)) return undefined;
  const m = /\bpath\s*(?:=|like)\s*'((?:[^']|'')*)'/i.exec(sql);
  return m ? m[1].replace(/''/g, "'") : undefined;
}

/** The answer of host `h` to `sql`. */
export function answer(sql: string, h: SimHost, now = Date.now()): Answer {
  const path = carvePath(sql);
  if (path !== undefined) return { kind: 'carve', path };
  const m = /^\s*select\s+([\s\S]+?)\s+from\s+([A-Za-z_][A-Za-z0-9_]*)/i.exec(sql);
  if (!m) return { kind: 'error', message: 'simulated agent: only SELECT ... FROM <table> queries are answered' };
  const table = m[2].toLowerCase();
  const rows = tableRows(table, h, now);
  if (!rows) return { kind: 'error', message: `no such table: ${table}` };
  const list = m[1].trim();
  if (list === '*') return { kind: 'rows', rows };
  const cols = list.split(',').map((c) => c.trim());
  if (!cols.every((c) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(c))) return { kind: 'rows', rows };
  const unknown = cols.find((c) => !(c in rows[0]));
  if (unknown) return { kind: 'error', message: `no such column: ${unknown}` };
  return { kind: 'rows', rows: rows.map((r) => Object.fromEntries(cols.map((c) => [c, r[c]]))) };
}
