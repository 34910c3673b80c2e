// The demo fleet of `fleetctl server --dev`: environments, users at every level, thousands of
// nodes across platforms and check-in ages, and tags. Deterministic (seeded PRNG), so demos and
// docs show the same fleet every time, but relative to "now" so active nodes stay active.
import type { Kysely } from 'kysely';
import type { DB, NewNode } from './store/schema.js';
import { hashPassword, randomHex } from './lib/crypto.js';
import { platformBucket, versionKey } from './services/fleet/node-health.js';
import { seedAuthExtras } from './seed-auth.js';
import { seedActivity } from './seed-activity.js';
import { prng, pick, uuidFrom, type Rand } from './seed-random.js';
import { createEnvironment } from './services/environments/environment-admin.js';

/** Tests and benches build environments with the same function the server uses. */
export { createEnvironment };

export interface DemoUser {
  username: string;
  description: string;
  admin?: boolean;
  service?: boolean;
  access: Record<string, Partial<Record<'user' | 'query' | 'carve' | 'admin', boolean>>>;
}

export const DEMO_ENVIRONMENTS = [
  { name: 'prod', nodes: 1200, uuid: '5c2fd3c7-8d7e-4b4f-9c55-6a1e1f5b0a01' },
  { name: 'staging', nodes: 600, uuid: '5c2fd3c7-8d7e-4b4f-9c55-6a1e1f5b0a02' },
  { name: 'dev', nodes: 400, uuid: '5c2fd3c7-8d7e-4b4f-9c55-6a1e1f5b0a03' },
] as const;

export const DEMO_USERS: DemoUser[] = [
  { username: 'prod-admin', description: 'env admin of prod', access: { prod: { admin: true } } },
  { username: 'analyst', description: 'read-only on prod and staging', access: { prod: { user: true }, staging: { user: true } } },
  { username: 'querier', description: 'query access on prod', access: { prod: { user: true, query: true } } },
  {
    username: 'carver',
    description: 'carve access on prod and staging',
    access: { prod: { user: true, carve: true }, staging: { user: true, carve: true } },
  },
  { username: 'dev-user', description: 'read-only on dev', access: { dev: { user: true } } },
  { username: 'ci-bot', description: 'service account, env admin of staging', service: true, access: { staging: { admin: true } } },
];

const PLATFORMS: { platform: string; versions: string[]; weight: number }[] = [
  { platform: 'ubuntu', versions: ['20.04', '22.04', '24.04'], weight: 30 },
  { platform: 'debian', versions: ['11', '12'], weight: 10 },
  { platform: 'centos', versions: ['7', '8'], weight: 5 },
  { platform: 'rhel', versions: ['8.9', '9.4'], weight: 7 },
  { platform: 'amzn', versions: ['2', '2023'], weight: 6 },
  { platform: 'darwin', versions: ['13.6', '14.5', '15.1'], weight: 20 },
  { platform: 'windows', versions: ['10.0.19045', '10.0.22631'], weight: 17 },
  { platform: 'freebsd', versions: ['13.2', '14.1'], weight: 3 },
  { platform: 'chrome', versions: ['126', '128'], weight: 2 },
];
// Most of the fleet on the newest release, a tail on older ones (the osquery_outdated signal).
const OSQUERY_VERSIONS = [
  '5.9.1',
  '5.10.2',
  '5.11.0',
  '5.12.1',
  '5.12.2',
  '5.13.1',
  '5.13.1',
  '5.13.1',
  '5.13.1',
  '5.13.1',
  '5.13.1',
  '5.13.1',
];
const ROLES = ['web', 'db', 'api', 'cache', 'worker', 'build', 'laptop', 'desktop', 'vpn', 'bastion'];
const COUNTRIES = ['US', 'DE', 'GB', 'FR', 'JP', 'BR', 'IN', 'CA'];
const USERS = ['alice', 'bob', 'carol', 'dave', 'erin', 'frank', 'grace', 'heidi', 'ivan', 'judy'];

function weightedPlatform(r: Rand) {
  const total = PLATFORMS.reduce((s, p) => s + p.weight, 0);
  let x = r() * total;
  for (const p of PLATFORMS) if ((x -= p.weight) < 0) return p;
  return PLATFORMS[0];
}

/**
 * Seconds since the last check-in: most nodes minutes to hours, some days, some months, a few
 * never. None within the last 5 minutes: a seeded node has no agent behind it, so it must never
 * look online (seen within 3 distributed intervals, 3 minutes for the demo's 60 s), or `query run
 * --exit` would wait for it. The live ones are `--dev-agents`.
 */
function lastSeenAgeSeconds(r: Rand): number | null {
  const x = r();
  if (x < 0.55) return 300 + Math.floor(r() * (3600 * 2 - 300)); // 5 minutes to 2 hours
  if (x < 0.7) return Math.floor(3600 * 2 + r() * 3600 * 60); // 2 h to 62 h: still active
  if (x < 0.85) return Math.floor(3600 * 80 + r() * 86400 * 12); // 3 to 16 days
  if (x < 0.98) return Math.floor(86400 * 20 + r() * 86400 * 160); // 3 weeks to 6 months
  return null; // never checked in
}

/** A demo node: its row, and what its check-ins would have left in node_seen. */
export type DemoNode = NewNode & { last_seen: string | null; bytes_received: number };

function demoNode(r: Rand, envName: string, envId: number, i: number, now: number): DemoNode {
  const p = weightedPlatform(r);
  const version = pick(r, p.versions);
  const osq = pick(r, OSQUERY_VERSIONS);
  const role = pick(r, ROLES);
  const age = lastSeenAgeSeconds(r);
  const created = now - (age ?? 0) * 1000 - Math.floor(r() * 86400 * 365) * 1000;
  const lastSeen = age === null ? null : new Date(now - age * 1000).toISOString();
  const hostname = `${envName}-${role}-${String(i + 1).padStart(4, '0')}`;
  const ip = `10.${envId}.${Math.floor(i / 250)}.${(i % 250) + 1}`;
  const localname =
    p.platform === 'darwin'
      ? `${pick(r, USERS)}s-MacBook-Pro`
      : p.platform === 'windows'
        ? `DESKTOP-${randomHex(3).toUpperCase()}`
        : `ip-${ip.replaceAll('.', '-')}`;
  const serial = randomHex(6).toUpperCase();
  const uuid = uuidFrom(r);
  const cores = pick(r, [2, 4, 8, 16]);
  const memory = String(pick(r, [4, 8, 16, 32, 64]) * 1024 ** 3);
  const osName =
    {
      ubuntu: 'Ubuntu',
      debian: 'Debian GNU/Linux',
      centos: 'CentOS Linux',
      rhel: 'Red Hat Enterprise Linux',
      amzn: 'Amazon Linux',
      darwin: 'macOS',
      windows: 'Microsoft Windows',
      freebsd: 'FreeBSD',
      chrome: 'ChromeOS',
    }[p.platform] ?? p.platform;
  const [major = '', minor = '', patch = ''] = version.split('.');
  const systemInfo = {
    bios: {
      address: '0xe8000',
      date: '03/14/2024',
      revision: '1.12',
      size: '65536',
      vendor: pick(r, ['Dell Inc.', 'LENOVO', 'HP', 'Apple Inc.', 'SeaBIOS']),
      version: `1.${Math.floor(r() * 20)}.0`,
      volume_size: '0',
    },
    os: {
      codename: '',
      major,
      minor,
      name: osName,
      patch,
      platform: p.platform,
      platform_like: p.platform === 'ubuntu' ? 'debian' : '',
      version,
    },
    osquery: {
      build_distro: p.platform,
      build_platform: platformBucket(p.platform),
      config_valid: r() < 0.97 ? '1' : '0',
      extensions: 'active',
      start_time: String(Math.floor((now - 86400_000) / 1000)),
      version: osq,
    },
    system: {
      computer_name: hostname,
      cpu_brand: pick(r, ['Intel(R) Xeon(R) Gold 6248R', 'AMD EPYC 7763', 'Apple M2', 'Intel(R) Core(TM) i7-1185G7']),
      cpu_logical_cores: String(cores * 2),
      cpu_physical_cores: String(cores),
      cpu_subtype: '',
      cpu_type: 'x86_64',
      hardware_model: pick(r, ['PowerEdge R650', 'ThinkPad X1', 'MacBookPro18,3', 'HVM domU']),
      hardware_serial: serial,
      hardware_vendor: pick(r, ['Dell Inc.', 'LENOVO', 'Apple Inc.', 'Xen']),
      hardware_version: '',
      local_hostname: localname,
      physical_memory: memory,
    },
  };
  return {
    uuid,
    node_key: randomHex(20),
    hostname,
    localname,
    ip_address: ip,
    country_code: pick(r, COUNTRIES),
    platform: p.platform,
    platform_bucket: platformBucket(p.platform),
    platform_version: version,
    osquery_user: p.platform === 'windows' ? 'SYSTEM' : 'root',
    osquery_version: osq,
    osquery_version_key: versionKey(osq),
    cpu: systemInfo.system.cpu_brand,
    memory,
    hardware_serial: serial,
    config_hash: randomHex(20),
    daemon_hash: randomHex(20),
    extra_data: '{}',
    bytes_received: Math.floor(r() * 5e8),
    environment_id: envId,
    user_id: 0,
    username: pick(r, USERS),
    last_seen: lastSeen,
    uptime_seconds: age === null ? 0 : Math.floor(r() * 86400 * 40),
    config_valid: systemInfo.osquery.config_valid === '1' ? 1 : 0,
    system_info: JSON.stringify(systemInfo),
    created_at: new Date(created).toISOString(),
    updated_at: lastSeen ?? new Date(created).toISOString(),
  };
}

/** The nodes row of a demo node (last_seen and bytes_received go to node_seen). */
function nodeRow(n: DemoNode): NewNode {
  const row: Partial<DemoNode> = { ...n };
  delete row.last_seen;
  delete row.bytes_received;
  return row as NewNode;
}

export async function insertNodes(db: Kysely<DB>, nodes: DemoNode[]): Promise<void> {
  // SQLite caps bound variables per statement; 200 rows of ~30 columns stays well under it.
  await db.transaction().execute(async (trx) => {
    for (let i = 0; i < nodes.length; i += 200) {
      const batch = nodes.slice(i, i + 200);
      const ids = await trx.insertInto('nodes').values(batch.map(nodeRow)).returning(['id', 'uuid']).execute();
      const idOf = new Map(ids.map((r) => [r.uuid, r.id]));
      // Their node_seen rows (made by the insert trigger) get the demo's last check-ins.
      await trx
        .insertInto('node_seen')
        .values(
          batch.map((n) => ({
            node_id: idOf.get(n.uuid)!,
            environment_id: n.environment_id,
            platform_bucket: n.platform_bucket ?? '',
            config_valid: n.config_valid ?? 1,
            osquery_version_key: n.osquery_version_key ?? '',
            last_seen: n.last_seen ?? '',
            bytes_received: n.bytes_received,
          })),
        )
        .onConflict((oc) =>
          oc
            .column('node_id')
            .doUpdateSet((eb) => ({ last_seen: eb.ref('excluded.last_seen'), bytes_received: eb.ref('excluded.bytes_received') })),
        )
        .execute();
    }
  });
}

export function generateNodes(seed: number, envName: string, envId: number, count: number, now: number): DemoNode[] {
  const r = prng(seed);
  return Array.from({ length: count }, (_, i) => demoNode(r, envName, envId, i, now));
}

export interface DemoSummary {
  environments: { name: string; uuid: string; nodes: number }[];
  users: DemoUser[];
  /** More banner text (e.g. the MFA user's TOTP secret and recovery codes). */
  extra: string;
}

export const DEMO_NODES_DEFAULT = DEMO_ENVIRONMENTS.reduce((s, e) => s + e.nodes, 0);

/** Nodes per demo environment for a fleet of `total` nodes (same proportions as the default). */
export function demoNodeCounts(total: number): Record<string, number> {
  const counts: Record<string, number> = {};
  let left = total;
  DEMO_ENVIRONMENTS.forEach((e, i) => {
    const n = i === DEMO_ENVIRONMENTS.length - 1 ? left : Math.round((total * e.nodes) / DEMO_NODES_DEFAULT);
    counts[e.name] = n;
    left -= n;
  });
  return counts;
}

export async function seedDemo(
  db: Kysely<DB>,
  opts: { now: Date; password: string; hostname: string; nodes?: number },
): Promise<DemoSummary> {
  const now = opts.now;
  const ts = now.toISOString();
  const envIds: Record<string, number> = {};
  const counts = demoNodeCounts(opts.nodes ?? DEMO_NODES_DEFAULT);
  let seed = 1;
  for (const e of DEMO_ENVIRONMENTS) {
    // Enrollment open until someone closes it, as every new environment (issue 27).
    const id = await createEnvironment(db, e.name, { uuid: e.uuid, hostname: opts.hostname, now });
    envIds[e.name] = id;
    await insertNodes(db, generateNodes(seed++, e.name, id, counts[e.name], now.getTime()));
  }

  const hash = await hashPassword(opts.password);
  for (const u of DEMO_USERS) {
    const { id } = await db
      .insertInto('users')
      .values({
        username: u.username,
        fullname: u.description,
        email: `${u.username}@example.com`,
        password_hash: hash,
        admin: u.admin ? 1 : 0,
        service: u.service ? 1 : 0,
        api: 1,
        totp_secret: null,
        totp_pending_secret: null,
        totp_last_step: 0,
        created_at: ts,
        updated_at: ts,
        last_login_at: null,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    for (const [envName, lv] of Object.entries(u.access)) {
      await db
        .insertInto('user_env_access')
        .values({
          user_id: id,
          environment_id: envIds[envName],
          user_level: lv.user ? 1 : 0,
          query_level: lv.query ? 1 : 0,
          carve_level: lv.carve ? 1 : 0,
          admin_level: lv.admin ? 1 : 0,
        })
        .execute();
    }
  }

  await seedTags(db, envIds, now);
  await seedActivity(db, envIds, { now });
  const extra = await seedAuthExtras(db, { now, password: opts.password });
  return {
    environments: DEMO_ENVIRONMENTS.map((e) => ({ name: e.name, uuid: e.uuid, nodes: counts[e.name] })),
    users: DEMO_USERS,
    extra,
  };
}

const DEMO_TAGS = [
  { name: 'pci', description: 'In PCI scope', color: '#d9534f', icon: 'fas fa-credit-card' },
  { name: 'servers', description: 'Server fleet', color: '#5bc0de', icon: 'fas fa-server' },
  { name: 'laptops', description: 'Employee laptops', color: '#5cb85c', icon: 'fas fa-laptop' },
  { name: 'quarantine', description: 'Isolated pending investigation', color: '#f0ad4e', icon: 'fas fa-biohazard' },
];

async function seedTags(db: Kysely<DB>, envIds: Record<string, number>, now: Date) {
  const ts = now.toISOString();
  const r = prng(99);
  for (const [envName, envId] of Object.entries(envIds)) {
    const nodes = await db.selectFrom('nodes').select(['id', 'hostname']).where('environment_id', '=', envId).execute();
    for (const t of DEMO_TAGS) {
      const { id } = await db
        .insertInto('tags')
        .values({
          ...t,
          environment_id: envId,
          tag_type: 6,
          custom_tag: 'tag',
          auto_tag: 0,
          cohort: 0,
          created_by: 'admin',
          created_at: ts,
          updated_at: ts,
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      const matches = nodes.filter((n) =>
        t.name === 'servers'
          ? /-(web|db|api|cache|worker|build|bastion)-/.test(n.hostname)
          : t.name === 'laptops'
            ? /-(laptop|desktop)-/.test(n.hostname)
            : t.name === 'pci'
              ? envName === 'prod' && r() < 0.15
              : r() < 0.01,
      );
      for (let i = 0; i < matches.length; i += 400) {
        await db
          .insertInto('node_tags')
          .values(matches.slice(i, i + 400).map((n) => ({ node_id: n.id, tag_id: id })))
          .execute();
      }
    }
  }
}
