// Synthetic machines: what osquery would report about itself at enrollment (host_details) and
// in its tables. Deterministic in (seed, index), so a rerun with the same seed is the same fleet.
import { createHash } from 'node:crypto';
import { hostname as osHostname } from 'node:os';

export interface SimHost {
  uuid: string;
  hostname: string;
  /** osquery's platform name as in os_version.platform (ubuntu, darwin, windows, ...). */
  platform: string;
  /** osquery's platform_type bit mask as sent at enrollment (as a decimal string). */
  platformType: string;
  osVersion: Record<string, string>;
  systemInfo: Record<string, string>;
  osqueryInfo: Record<string, string>;
  /** osquery's platform_info (the BIOS), absent where osquery cannot read SMBIOS (a virtual machine). */
  platformInfo?: Record<string, string>;
  startTime: number;
}

interface OsModel {
  platform: string;
  platformLike: string;
  platformType: string;
  name: string;
  version: string;
  major: string;
  minor: string;
  patch: string;
  codename: string;
  build?: string;
  prefix: string;
  vendor: string;
  model: string;
}

const MODELS: OsModel[] = [
  {
    platform: 'ubuntu',
    platformLike: 'debian',
    platformType: '9',
    name: 'Ubuntu',
    version: '22.04.4 LTS (Jammy Jellyfish)',
    major: '22',
    minor: '4',
    patch: '0',
    codename: 'jammy',
    prefix: 'web',
    vendor: 'Dell Inc.',
    model: 'PowerEdge R650',
  },
  {
    platform: 'debian',
    platformLike: '',
    platformType: '9',
    name: 'Debian GNU/Linux',
    version: '12 (bookworm)',
    major: '12',
    minor: '0',
    patch: '0',
    codename: 'bookworm',
    prefix: 'db',
    vendor: 'HPE',
    model: 'ProLiant DL360 Gen10',
  },
  {
    platform: 'rhel',
    platformLike: 'fedora',
    platformType: '9',
    name: 'Red Hat Enterprise Linux',
    version: '9.3 (Plow)',
    major: '9',
    minor: '3',
    patch: '0',
    codename: '',
    prefix: 'app',
    vendor: 'Lenovo',
    model: 'ThinkSystem SR630',
  },
  {
    platform: 'darwin',
    platformLike: 'darwin',
    platformType: '21',
    name: 'macOS',
    version: '14.4.1',
    major: '14',
    minor: '4',
    patch: '1',
    codename: 'Sonoma',
    build: '23E224',
    prefix: 'mac',
    vendor: 'Apple Inc.',
    model: 'MacBookPro18,3',
  },
  {
    platform: 'windows',
    platformLike: 'windows',
    platformType: '2',
    name: 'Microsoft Windows 11 Pro',
    version: '10.0.22631',
    major: '10',
    minor: '0',
    patch: '22631',
    codename: 'Microsoft Windows 11 Pro',
    build: '22631',
    prefix: 'win',
    vendor: 'LENOVO',
    model: '20XW004GUS',
  },
];

const OSQUERY_VERSIONS = ['5.12.1', '5.11.0', '5.10.2', '5.9.1'];

function bytes(seed: string, index: number, what: string): Buffer {
  return createHash('sha256').update(`${seed}\0${index}\0${what}`).digest();
}

function uuidFrom(b: Buffer): string {
  const h = b.toString('hex').toUpperCase();
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-A${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** The columns with a value: osquery leaves a column it did not fill out of the row. */
const present = (row: Record<string, string>) => Object.fromEntries(Object.entries(row).filter(([, v]) => v !== ''));

/** The index-th synthetic host of a fleet named by `seed`. */
export function syntheticHost(seed: string, index: number, now = Date.now()): SimHost {
  const r = bytes(seed, index, 'host');
  const m = MODELS[r[0] % MODELS.length];
  const uuid = uuidFrom(r);
  const site = ['fra', 'iad', 'sfo', 'sin'][r[1] % 4];
  const hostname = `${m.prefix}-${site}-${String(index + 1).padStart(5, '0')}-${r.toString('hex').slice(0, 4)}`;
  const osq = OSQUERY_VERSIONS[r[2] % OSQUERY_VERSIONS.length];
  const cores = [2, 4, 8, 16][r[3] % 4];
  const memory = String(cores * 4 * 1024 ** 3);
  const serial = r.toString('hex').slice(8, 20).toUpperCase();
  const startTime = Math.floor(now / 1000) - (r.readUInt32BE(4) % (30 * 86400));
  // Half the fleet are virtual machines (not the Macs): as real osquery there, the firmware and
  // board report no address, size, model or version, and those fields come as empty strings.
  const vm = m.platform !== 'darwin' && r[13] % 2 === 0;
  return {
    uuid,
    hostname,
    platform: m.platform,
    platformType: m.platformType,
    startTime,
    // As osquery 5.23 sends them (recorded, test/fixtures/osquery/enroll.json): a table's row has
    // only the columns it filled (no build or platform_like where the OS has none, no hardware
    // or board columns on a virtual machine whose SMBIOS osquery cannot read), and a table with no
    // row (platform_info on such a machine) is not sent at all (issue 26).
    osVersion: present({
      name: m.name,
      version: m.version,
      major: m.major,
      minor: m.minor,
      patch: m.patch,
      build: m.build ?? '',
      platform: m.platform,
      platform_like: m.platformLike,
      codename: m.codename,
      arch: m.platform === 'darwin' ? 'arm64' : 'x86_64',
      _id: m.platform === 'ubuntu' ? `${m.major}.${m.minor.padStart(2, '0')}` : m.major,
      pid_with_namespace: '0',
    }),
    systemInfo: {
      hostname,
      uuid,
      cpu_type: m.platform === 'darwin' ? 'arm64e' : 'x86_64',
      cpu_subtype: m.platform === 'darwin' ? '2' : '106',
      cpu_brand: m.platform === 'darwin' ? 'Apple M1 Pro' : 'Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz',
      cpu_physical_cores: String(cores),
      cpu_logical_cores: String(cores * 2),
      cpu_sockets: '1',
      cpu_microcode: m.platform === 'darwin' ? '' : '0xd0003a5',
      physical_memory: memory,
      hardware_model: vm ? '' : m.model,
      ...(vm
        ? {}
        : {
            hardware_vendor: m.vendor,
            hardware_version: '',
            hardware_serial: serial,
            board_vendor: m.vendor,
            board_model: '',
            board_version: '',
            board_serial: serial,
          }),
      computer_name: hostname,
      local_hostname: hostname,
    },
    osqueryInfo: {
      pid: String(1000 + (r.readUInt16BE(8) % 30000)),
      uuid,
      instance_id: uuidFrom(bytes(seed, index, 'instance')).toLowerCase(),
      version: osq,
      // At enrollment osquery has not loaded a config yet: config_valid "0" (as Fleet's load agent sends).
      config_hash: '',
      config_valid: '0',
      extensions: 'active',
      build_platform: m.platform,
      build_distro: m.platform === 'darwin' ? '10.14' : 'centos7',
      start_time: String(startTime),
      watcher: String(900 + (r[10] % 99)),
      platform_mask: m.platformType,
    },
    platformInfo: vm
      ? undefined
      : {
          vendor: m.vendor,
          version: `${1 + (r[11] % 3)}.${r[12] % 20}.0`,
          date: '03/14/2024',
          revision: '1.0',
          extra: '',
          address: '0xf0000',
          size: '16777216',
          volume_size: '0',
        },
  };
}

/** The machine the simulator runs on, for a single local agent (carves read its real files). */
export function localHost(seed: string, now = Date.now()): SimHost {
  const h = syntheticHost(seed, 0, now);
  const name = osHostname();
  return { ...h, hostname: name, systemInfo: { ...h.systemInfo, hostname: name, computer_name: name, local_hostname: name } };
}
