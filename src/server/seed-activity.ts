// Demo queries, carves, log sinks and audit history (--dev). Deterministic (seeded PRNG) and
// relative to "now", like the rest of the demo fleet. Every carve_status and every carve file
// status appears in every environment, so `fleetctl carves` has something to show for each.
// dev gets no sinks of its own: `fleetctl sinks clone --from prod --to dev` works without
// --overwrite in the demo.
import type { Kysely } from 'kysely';
import type { DB } from './store/schema.js';
import { CarveFileStatuses, LogTypes, Severities, type LogType, type Severity } from '../api/index.js';
import { prng, pick, uuidFrom, type Rand } from './seed-random.js';
import { tarOne } from '../lib/tar.js';

const HOUR = 3600_000;
/**
 * Smaller than osquery's (300,000 bytes by default, 5 MB in our flags) so the demo's small
 * archives come in several blocks, and a carve still in progress has some of them.
 */
const BLOCK_SIZE = 4096;

type FileStatus = (typeof CarveFileStatuses)[number];

interface DemoQuery {
  name: string;
  query: string;
  state: 'active' | 'completed' | 'expired' | 'deleted';
  ageHours: number;
}

const QUERIES: DemoQuery[] = [
  { name: 'osquery_versions', query: 'SELECT version, build_platform FROM osquery_info;', state: 'active', ageHours: 1 },
  {
    name: 'listening_ports',
    query: 'SELECT pid, port, protocol, address FROM listening_ports WHERE port < 1024;',
    state: 'active',
    ageHours: 5,
  },
  { name: 'logged_in_users', query: 'SELECT user, host, time FROM logged_in_users;', state: 'active', ageHours: 20 },
  { name: 'kernel_modules', query: 'SELECT name, size, status FROM kernel_modules;', state: 'completed', ageHours: 50 },
  { name: 'usb_devices', query: 'SELECT vendor, model, serial FROM usb_devices;', state: 'expired', ageHours: 100 },
  { name: 'chrome_extensions', query: 'SELECT name, identifier, version FROM chrome_extensions;', state: 'deleted', ageHours: 150 },
];

interface DemoCarve {
  name: string;
  path: string;
  flags: 'active' | 'completed' | 'expired' | 'deleted';
  /** Status of each file; none means the carve has not produced files yet (ACTIVE). */
  files: FileStatus[];
  /** Files (by index) already archived. */
  archived?: number[];
  ageHours: number;
  creator: string;
}

const CARVES: DemoCarve[] = [
  { name: 'carve_auth_log', path: '/var/log/auth.log', flags: 'active', files: [], ageHours: 0.5, creator: 'carver' },
  {
    name: 'carve_bash_history',
    path: '/root/.bash_history',
    flags: 'active',
    files: ['QUERIED', 'SCHEDULED', 'IN PROGRESS', 'IN PROGRESS', 'COMPLETED'],
    ageHours: 3,
    creator: 'carver',
  },
  {
    name: 'carve_tmp_payload',
    path: '/tmp/.x/payload.bin',
    flags: 'active',
    files: ['SCHEDULED', 'COMPLETED'],
    ageHours: 9,
    creator: 'admin',
  },
  {
    name: 'carve_etc_hosts',
    path: '/etc/hosts',
    flags: 'completed',
    files: ['COMPLETED', 'COMPLETED', 'COMPLETED'],
    archived: [0],
    ageHours: 30,
    creator: 'carver',
  },
  {
    name: 'carve_crontab',
    path: '/etc/crontab',
    flags: 'expired',
    files: ['COMPLETED', 'IN PROGRESS', 'QUERIED'],
    ageHours: 80,
    creator: 'admin',
  },
  { name: 'carve_ssh_keys', path: '/root/.ssh/authorized_keys', flags: 'deleted', files: ['COMPLETED'], ageHours: 120, creator: 'carver' },
];

const hex = (r: Rand, n: number) => Array.from({ length: n }, () => Math.floor(r() * 16).toString(16)).join('');

async function seedQueriesAndCarves(db: Kysely<DB>, envId: number, now: number, r: Rand): Promise<void> {
  const nodes = await db
    .selectFrom('nodes')
    .select(['uuid', 'hostname', 'platform_bucket'])
    .where('environment_id', '=', envId)
    .where('platform_bucket', '=', 'linux')
    .orderBy('id')
    .limit(50)
    .execute();
  if (nodes.length === 0) return;

  for (const q of QUERIES) {
    const created = now - q.ageHours * HOUR;
    const expected = 20 + Math.floor(r() * 200);
    const executions = q.state === 'active' ? Math.floor(expected * r()) : expected;
    await db
      .insertInto('queries')
      .values({
        name: q.name,
        query: q.query,
        path: '',
        type: 'query',
        target: 'platform:linux',
        targets: JSON.stringify([{ type: 'platform', value: 'linux' }]),
        creator: pick(r, ['admin', 'querier']),
        environment_id: envId,
        active: q.state === 'active' ? 1 : 0,
        completed: q.state === 'completed' ? 1 : 0,
        deleted: q.state === 'deleted' ? 1 : 0,
        expired: q.state === 'expired' ? 1 : 0,
        hidden: 0,
        protected: 0,
        errors: Math.floor(r() * 3),
        executions,
        expected,
        expiration: new Date(created + 24 * HOUR).toISOString(),
        extra_data: '',
        created_at: new Date(created).toISOString(),
        updated_at: new Date(created + HOUR / 2).toISOString(),
      })
      .execute();
  }

  for (const c of CARVES) {
    const created = now - c.ageHours * HOUR;
    // Distinct nodes: one file per targeted node.
    const start = Math.floor(r() * nodes.length);
    const targets = Array.from({ length: Math.max(2, c.files.length) }, (_, i) => nodes[(start + i * 7) % nodes.length]);
    const { id } = await db
      .insertInto('queries')
      .values({
        name: c.name,
        query: `SELECT * FROM carves WHERE path LIKE '${c.path}' AND carve = 1;`,
        path: c.path,
        type: 'carve',
        target: targets.map((n) => `uuid:${n.uuid}`).join(','),
        targets: JSON.stringify(targets.map((n) => ({ type: 'uuid', value: n.uuid }))),
        creator: c.creator,
        environment_id: envId,
        active: c.flags === 'active' ? 1 : 0,
        completed: c.flags === 'completed' ? 1 : 0,
        deleted: c.flags === 'deleted' ? 1 : 0,
        expired: c.flags === 'expired' ? 1 : 0,
        hidden: 0,
        protected: 0,
        errors: 0,
        executions: c.files.length,
        expected: targets.length,
        expiration: new Date(created + 24 * HOUR).toISOString(),
        extra_data: '',
        created_at: new Date(created).toISOString(),
        updated_at: new Date(created + HOUR / 4).toISOString(),
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    for (const [i, status] of c.files.entries()) {
      // A real archive of the file as the node would send it (a ustar of one file), stored as
      // blocks like an agent's upload, so `fleetctl carves download` works on the demo's carves.
      const node = targets[i % targets.length];
      const fileCreated = created + (i + 1) * 60_000;
      const archive = tarOne(c.path, demoFileContent(c.path, node.hostname, r), Math.floor(fileCreated / 1000));
      const totalBlocks = Math.ceil(archive.length / BLOCK_SIZE);
      const completedBlocks =
        status === 'COMPLETED' ? totalBlocks : status === 'IN PROGRESS' ? Math.min(totalBlocks - 1, 1 + Math.floor(r() * totalBlocks)) : 0;
      const sessionId = hex(r, 20);
      await db
        .insertInto('carve_files')
        .values({
          uuid: node.uuid,
          query_id: id,
          carve_id: uuidFrom(r),
          session_id: sessionId,
          path: c.path,
          status,
          archived: c.archived?.includes(i) ? 1 : 0,
          block_size: BLOCK_SIZE,
          carve_size: archive.length,
          total_blocks: totalBlocks,
          completed_blocks: completedBlocks,
          created_at: new Date(fileCreated).toISOString(),
          completed_at: status === 'COMPLETED' ? new Date(fileCreated + 5 * 60_000).toISOString() : '',
        })
        .execute();
      for (let b = 0; b < completedBlocks; b++) {
        const data = archive.subarray(b * BLOCK_SIZE, (b + 1) * BLOCK_SIZE).toString('base64');
        await db.insertInto('carve_blocks').values({ session_id: sessionId, block_id: b, data }).execute();
      }
    }
  }
}

/** What the carved file might hold on that node: a few KB of plausible text. */
function demoFileContent(path: string, hostname: string, r: Rand): Buffer {
  const lines = [`# ${path} on ${hostname} (fleetctl demo carve)`];
  if (path === '/etc/hosts')
    lines.push(
      '127.0.0.1\tlocalhost',
      '::1\tlocalhost ip6-localhost',
      `10.0.${Math.floor(r() * 250)}.${1 + Math.floor(r() * 250)}\t${hostname}`,
    );
  const filler = 40 + Math.floor(r() * 400);
  for (let i = 0; i < filler; i++) lines.push(`${i}\t${hex(r, 32)}`);
  return Buffer.from(`${lines.join('\n')}\n`);
}

interface DemoSink {
  name: string;
  type: string;
  source: string;
  info: string;
  config: Record<string, unknown>;
  enabled?: boolean;
}

// The demo's sinks must work (issue 20: its splunk, kafka, syslog and http sinks pointed at hosts
// that do not exist and wrote 3 error rows a minute into the audit log). Enabled: the file sinks,
// which write into the server's --sink-dir; the others show what a real fleet configures and are
// seeded disabled, saying why, so enabling one is a deliberate step.
const NOT_HERE = ' (disabled in the demo: no such service here)';
const GLOBAL_SINKS: DemoSink[] = [
  {
    name: 'local-file',
    type: 'file',
    source: 'result',
    info: 'Query results to a rotated local file',
    config: { path: 'results.log', max_size_mb: 100, max_files: 5 },
  },
  {
    name: 'central-syslog',
    type: 'syslog',
    source: 'status',
    info: `Agent status logs to the central syslog${NOT_HERE}`,
    config: { url: 'udp://syslog.internal:514', facility: 'local3' },
    enabled: false,
  },
];

const ENV_SINKS: Record<string, DemoSink[]> = {
  prod: [
    {
      name: 'splunk-hec',
      type: 'splunk',
      source: 'result',
      info: `Results to Splunk HTTP Event Collector${NOT_HERE}`,
      config: { url: 'https://splunk.example.com:8088', index: 'osquery', token_env: 'SPLUNK_HEC_TOKEN' },
      enabled: false,
    },
    {
      name: 'kafka-queries',
      type: 'kafka',
      source: 'query',
      info: `On-demand query results to Kafka${NOT_HERE}`,
      config: { brokers: ['kafka-1.internal:9092', 'kafka-2.internal:9092'], topic: 'osquery-queries', compression: 'gzip' },
      enabled: false,
    },
    {
      name: 'http-status',
      type: 'http',
      source: 'status',
      info: `Status logs to the log gateway${NOT_HERE}`,
      config: { url: 'https://logs.example.com/osquery/status', method: 'POST', timeout_seconds: 10 },
      enabled: false,
    },
    {
      name: 'prod-status-file',
      type: 'file',
      source: 'status',
      info: 'Status logs of prod to a local file',
      config: { path: 'prod-status.log' },
    },
    {
      name: 'prod-queries-file',
      type: 'file',
      source: 'query',
      info: 'Live query results of prod to a local file',
      config: { path: 'prod-queries.log' },
    },
  ],
  staging: [
    {
      name: 'elastic-results',
      type: 'elastic',
      source: 'result',
      info: 'Results to the staging Elasticsearch',
      config: { url: 'https://es.staging.internal:9200', index: 'osquery-staging' },
      enabled: false,
    },
  ],
};

async function seedSinks(db: Kysely<DB>, envIds: Record<string, number>, now: number, r: Rand): Promise<void> {
  const scopes: [number, DemoSink[]][] = [[0, GLOBAL_SINKS]];
  for (const [envName, sinks] of Object.entries(ENV_SINKS)) if (envIds[envName] !== undefined) scopes.push([envIds[envName], sinks]);
  for (const [envId, sinks] of scopes) {
    for (const [order, s] of sinks.entries()) {
      const created = new Date(now - (30 + order) * 24 * HOUR).toISOString();
      const exports = s.enabled === false ? 0 : 1_000 + Math.floor(r() * 90_000);
      await db
        .insertInto('log_sinks')
        .values({
          name: s.name,
          type: s.type,
          source: s.source,
          info: s.info,
          enabled: s.enabled === false ? 0 : 1,
          environment_id: envId,
          sort_order: order,
          config: JSON.stringify(s.config),
          bytes_sent: exports * (400 + Math.floor(r() * 800)),
          exports_count: exports,
          created_at: created,
          updated_at: new Date(now - order * 24 * HOUR - 6 * HOUR).toISOString(),
        })
        .execute();
    }
  }
}

interface DemoAudit {
  hoursAgo: number;
  user: string;
  env?: string;
  type: LogType;
  severity?: Severity;
  line: string;
  ip: string;
  service?: string;
}

function auditHistory(r: Rand): DemoAudit[] {
  const node = (env: string, role: string) => ({ uuid: uuidFrom(r), hostname: `${env}-${role}-${String(2000 + Math.floor(r() * 900))}` });
  const n1 = node('prod', 'web');
  const n2 = node('prod', 'laptop');
  const n3 = node('staging', 'build');
  const n4 = node('dev', 'worker');
  const W = Severities.warning;
  const L = LogTypes;
  return [
    { hoursAgo: 160, user: 'admin', env: 'prod', type: L.login, line: 'login ok: admin to prod', ip: '10.0.0.5' },
    { hoursAgo: 159.5, user: 'admin', type: L.user, line: 'user carver added', ip: '10.0.0.5' },
    { hoursAgo: 159, user: 'admin', type: L.setting, line: 'setting admin/inactive_hours changed from 48 to 72', ip: '10.0.0.5' },
    { hoursAgo: 150, user: 'prod-admin', env: 'prod', type: L.login, line: 'login ok: prod-admin to prod', ip: '10.0.4.21' },
    { hoursAgo: 149.8, user: 'prod-admin', env: 'prod', type: L.tag, line: 'tag pci added in prod', ip: '10.0.4.21' },
    { hoursAgo: 149.5, user: 'prod-admin', env: 'prod', type: L.tag, line: 'tag pci applied to 180 nodes in prod', ip: '10.0.4.21' },
    {
      hoursAgo: 140,
      user: 'mallory',
      env: 'prod',
      type: L.login,
      severity: W,
      line: 'failed login for "mallory" to prod',
      ip: '203.0.113.77',
    },
    {
      hoursAgo: 139.9,
      user: 'mallory',
      env: 'prod',
      type: L.login,
      severity: W,
      line: 'failed login for "mallory" to prod',
      ip: '203.0.113.77',
    },
    {
      hoursAgo: 139.8,
      user: 'admin',
      env: 'prod',
      type: L.login,
      severity: W,
      line: 'failed login for "admin" to prod',
      ip: '203.0.113.77',
    },
    { hoursAgo: 130, user: 'analyst', env: 'prod', type: L.login, line: 'login ok: analyst to prod', ip: '10.0.7.3' },
    {
      hoursAgo: 129.7,
      user: 'analyst',
      type: L.visit,
      severity: W,
      line: 'denied GET /api/v1/users: this needs a super-admin',
      ip: '10.0.7.3',
    },
    { hoursAgo: 120, user: 'carver', env: 'prod', type: L.login, line: 'login ok: carver to prod', ip: '10.0.9.14' },
    {
      hoursAgo: 119.8,
      user: 'carver',
      env: 'prod',
      type: L.carve,
      line: 'carve carve_ssh_keys deleted (environment prod)',
      ip: '10.0.9.14',
    },
    { hoursAgo: 110, user: 'prod-admin', env: 'prod', type: L.login, line: 'login ok: prod-admin to prod', ip: '10.0.4.21' },
    {
      hoursAgo: 109.6,
      user: 'prod-admin',
      env: 'prod',
      type: L.node,
      line: `node ${n1.uuid} (${n1.hostname}) deleted from prod`,
      ip: '10.0.4.21',
    },
    {
      hoursAgo: 109.5,
      user: 'prod-admin',
      env: 'prod',
      type: L.node,
      line: `node ${n2.uuid} (${n2.hostname}) deleted from prod`,
      ip: '10.0.4.21',
    },
    { hoursAgo: 100, user: 'ci-bot', env: 'staging', type: L.login, line: 'login ok: ci-bot to staging', ip: '10.1.0.50' },
    { hoursAgo: 99.9, user: 'ci-bot', env: 'staging', type: L.environment, line: 'enrollment of staging rotated', ip: '10.1.0.50' },
    {
      hoursAgo: 99.8,
      user: 'ci-bot',
      env: 'staging',
      type: L.node,
      line: `node ${n3.uuid} (${n3.hostname}) deleted from staging`,
      ip: '10.1.0.50',
    },
    { hoursAgo: 90, user: 'dev-user', env: 'dev', type: L.login, line: 'login ok: dev-user to dev', ip: '192.168.10.23' },
    {
      hoursAgo: 89.9,
      user: 'dev-user',
      env: 'prod',
      type: L.visit,
      severity: W,
      line: 'denied GET /api/v1/nodes/prod: this needs user access to environment prod',
      ip: '192.168.10.23',
    },
    { hoursAgo: 80, user: 'admin', env: 'prod', type: L.login, line: 'login ok: admin to prod', ip: '10.0.0.5' },
    {
      hoursAgo: 79.8,
      user: 'admin',
      type: L.environment,
      line: 'log sink 2 "central-syslog" (syslog, status) created in global',
      ip: '10.0.0.5',
    },
    {
      hoursAgo: 79.5,
      user: 'admin',
      env: 'staging',
      type: L.environment,
      line: 'intervals of staging set: config 300, log 600, query 60',
      ip: '10.0.0.5',
    },
    {
      hoursAgo: 79.2,
      user: 'admin',
      env: 'dev',
      type: L.setting,
      line: 'setting admin/node_dashboard changed from false to true (environment dev)',
      ip: '10.0.0.5',
    },
    { hoursAgo: 60, user: 'querier', env: 'prod', type: L.login, line: 'login ok: querier to prod', ip: '10.0.8.2' },
    {
      hoursAgo: 59.5,
      user: 'querier',
      env: 'prod',
      type: L.query,
      line: 'query kernel_modules completed (environment prod)',
      ip: '10.0.8.2',
    },
    { hoursAgo: 48, user: 'carver', env: 'staging', type: L.login, line: 'login ok: carver to staging', ip: '10.0.9.14' },
    {
      hoursAgo: 47.8,
      user: 'carver',
      env: 'staging',
      type: L.carve,
      line: 'carve carve_etc_hosts completed (environment staging)',
      ip: '10.0.9.14',
    },
    {
      hoursAgo: 47.7,
      user: 'carver',
      env: 'staging',
      type: L.carve,
      line: 'carve carve_etc_hosts: 1 completed file archived (environment staging)',
      ip: '10.0.9.14',
    },
    {
      hoursAgo: 30,
      user: 'prod-admin',
      env: 'prod',
      type: L.login,
      severity: W,
      line: 'failed login for "prod-admin" to prod',
      ip: '10.0.4.21',
    },
    { hoursAgo: 29.9, user: 'prod-admin', env: 'prod', type: L.login, line: 'login ok: prod-admin to prod', ip: '10.0.4.21' },
    { hoursAgo: 29.5, user: 'prod-admin', env: 'prod', type: L.tag, line: 'tag quarantine edited in prod', ip: '10.0.4.21' },
    {
      hoursAgo: 29.4,
      user: 'prod-admin',
      env: 'prod',
      type: L.tag,
      line: 'tag quarantine applied to 3 nodes in prod',
      ip: '10.0.4.21',
      service: 'admin',
    },
    { hoursAgo: 20, user: 'admin', env: 'dev', type: L.login, line: 'login ok: admin to dev', ip: '10.0.0.5' },
    {
      hoursAgo: 19.8,
      user: 'admin',
      env: 'dev',
      type: L.node,
      line: `node ${n4.uuid} (${n4.hostname}) deleted from dev`,
      ip: '10.0.0.5',
      service: 'admin',
    },
    { hoursAgo: 19.5, user: 'admin', type: L.user, line: 'user dev-user updated', ip: '10.0.0.5', service: 'admin' },
    { hoursAgo: 6, user: 'analyst', env: 'staging', type: L.login, line: 'login ok: analyst to staging', ip: '10.0.7.3' },
    {
      hoursAgo: 5.9,
      user: 'analyst',
      env: 'staging',
      type: L.visit,
      severity: W,
      line: 'denied POST /api/v1/tags/staging/add: this needs admin access to environment staging',
      ip: '10.0.7.3',
    },
    { hoursAgo: 2, user: 'ci-bot', env: 'staging', type: L.login, line: 'login ok: ci-bot to staging', ip: '10.1.0.50' },
    { hoursAgo: 1.5, user: 'admin', type: L.setting, line: 'setting tls/accelerated_seconds changed from 5 to 10', ip: '10.0.0.5' },
  ];
}

async function seedAudit(db: Kysely<DB>, envIds: Record<string, number>, now: number, r: Rand): Promise<void> {
  const envs = await db.selectFrom('environments').select(['id', 'uuid', 'name']).execute();
  const byName = new Map(envs.map((e) => [e.name, e]));
  // Oldest first: ids then follow time, which is the order the audit list relies on.
  const rows = auditHistory(r)
    .filter((a) => !a.env || envIds[a.env] !== undefined)
    .sort((a, b) => b.hoursAgo - a.hoursAgo)
    .map((a) => {
      const env = a.env ? byName.get(a.env) : undefined;
      return {
        created_at: new Date(now - a.hoursAgo * HOUR).toISOString(),
        env_uuid: env?.uuid ?? '',
        environment_id: env?.id ?? 0,
        line: a.line,
        log_type: a.type,
        severity: a.severity ?? Severities.info,
        service: a.service ?? 'api',
        source_ip: a.ip,
        username: a.user,
      };
    });
  await db.insertInto('audit_logs').values(rows).execute();
}

export async function seedActivity(db: Kysely<DB>, envIds: Record<string, number>, opts: { now: Date }): Promise<void> {
  const now = opts.now.getTime();
  const r = prng(4242);
  await db.transaction().execute(async (trx) => {
    for (const envId of Object.values(envIds)) await seedQueriesAndCarves(trx, envId, now, r);
    await seedSinks(trx, envIds, now, r);
    await seedAudit(trx, envIds, now, r);
  });
}
