// Enrollment and node lookup for the agent door (issue 13): the node row is built from the
// host_details osquery sends at enroll (system_info, os_version, osquery_info, platform_info).
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Deps } from '../../context.js';
import type { CompiledQuery, QueryResult } from 'kysely';
import type { EnvironmentRow, NodeRow } from '../../store/schema.js';
import { NEVER } from '../../../api/index.js';
import { platformBucket, versionKey } from '../fleet/node-health.js';

const obj = (v: unknown): Record<string, unknown> => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {});
/**
 * A short single-line text from agent input (hostile input must not bloat rows or break lines).
 * NULs go (osquery pads cpu_brand with them: 40 NULs after "AMD EPYC"), other control characters
 * become spaces, and the ends are trimmed (issue 26).
 */
const str = (v: unknown, max = 255): string =>
  typeof v === 'string' || typeof v === 'number' ? String(v).replace(/\0+/g, '').replace(/[\x01-\x1f\x7f]/g, ' ').trim().slice(0, max) : '';

/** host_details as stored: each group's values as text, NULs removed (osquery's padding), at most 64 KiB in all. */
function cleanGroup(v: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(obj(v)).slice(0, 200)) out[k.slice(0, 128)] = typeof x === 'string' ? x.replace(/\0+/g, '').trim() : x;
  return out;
}

function secretMatches(given: unknown, secret: string): boolean {
  if (typeof given !== 'string') return false;
  const a = Buffer.from(given.trim());
  const b = Buffer.from(secret);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Why enrolls are refused: the kind (a metrics label, issue 27) and the audited words. */
export type EnrollRefusal = { reason: 'closed' | 'secret' | 'expired' | 'identifier'; text: string };

/** Why an enroll is refused, or undefined when it may go on. */
export function enrollRefusal(env: EnvironmentRow, secret: unknown, now: Date): EnrollRefusal | undefined {
  if (!env.accept_enrolls) return { reason: 'closed', text: 'environment does not accept enrolls' };
  if (!secretMatches(secret, env.secret)) return { reason: 'secret', text: 'wrong enroll secret' };
  if (env.enroll_expire && env.enroll_expire !== NEVER && new Date(env.enroll_expire) <= now) return { reason: 'expired', text: 'enroll secret expired' };
  return undefined;
}

/** What the agent door keeps of an enrolled node (agent/state.ts's AgentNode). */
export type EnrolledNode = Pick<NodeRow, 'id' | 'uuid' | 'hostname' | 'environment_id' | 'ip_address' | 'details_at'>;

/**
 * Creates (or re-keys) the node for host_identifier and returns its new node key and row, or
 * undefined when refused (an identifier that is not one, or a node of another environment).
 * One statement (an upsert that re-keys only within the environment), run by `write`: the agent
 * door's group commit (store/write-group.ts).
 */
export async function enrollNode(
  deps: Deps,
  env: EnvironmentRow,
  identifier: unknown,
  details: unknown,
  ip: string,
  write: (q: CompiledQuery) => Promise<QueryResult<unknown>> = (q) => deps.db.executeQuery(q),
): Promise<{ key: string; node: EnrolledNode } | undefined> {
  const d = obj(details);
  const sys = obj(d.system_info);
  const os = obj(d.os_version);
  const osq = obj(d.osquery_info);
  const uuid = (str(identifier, 64) || str(sys.uuid, 64)).toLowerCase();
  if (!/^[a-z0-9][a-z0-9._:-]*$/.test(uuid)) return undefined;
  const platform = str(os.platform, 64) || str(osq.build_platform, 64) || 'unknown';
  const version = str(os.version, 64);
  const osqueryVersion = str(osq.version, 64);
  const hostname = str(sys.hostname) || str(sys.computer_name) || uuid;
  const nodeKey = randomBytes(20).toString('hex');
  const ts = deps.now().toISOString();
  // osquery's platform_info table is the BIOS; the other parts keep osquery's table names.
  const systemInfo = { bios: cleanGroup(d.platform_info), os: cleanGroup(os), osquery: cleanGroup(osq), system: cleanGroup(sys) };
  const values = {
    node_key: nodeKey,
    hostname,
    localname: str(sys.local_hostname) || str(sys.computer_name) || hostname,
    ip_address: str(ip, 64),
    platform,
    platform_bucket: platformBucket(platform),
    platform_version: version,
    osquery_version: osqueryVersion,
    osquery_version_key: versionKey(osqueryVersion),
    cpu: str(sys.cpu_brand),
    memory: str(sys.physical_memory, 32),
    hardware_serial: str(sys.hardware_serial),
    config_hash: str(osq.config_hash, 128),
    daemon_hash: '',
    environment_id: env.id,
    last_seen: ts,
    config_valid: str(osq.config_valid) === '0' ? 0 : 1,
    // What its flags say, as far as the server knows (the environment's); each config fetch then
    // says what it was told (issue 26: "online" follows each node's cadence).
    distributed_interval: env.query_interval,
    distributed_interval_told: env.query_interval,
    system_info: JSON.stringify(systemInfo).slice(0, 64 * 1024),
    // The details just reported: the next detail refresh is one interval away (node-details.ts).
    details_at: ts,
    updated_at: ts,
  };
  // A UUID belongs to one environment: enrolling it from another returns no row.
  const upsert = deps.db
    .insertInto('nodes')
    // osquery's enroll says nothing of the user it runs as: unknown (''), not assumed to be root (issue 26).
    .values({ ...values, uuid, country_code: '', osquery_user: str(osq.user), extra_data: '{}', bytes_received: 0, user_id: 0, username: '', uptime_seconds: 0, created_at: ts })
    .onConflict((oc) => oc.column('uuid').doUpdateSet(values).where('nodes.environment_id', '=', env.id))
    .returning(['id', 'uuid', 'hostname', 'environment_id', 'ip_address', 'details_at'])
    .compile();
  const node = (await write(upsert)).rows[0] as EnrolledNode | undefined;
  return node ? { key: nodeKey, node } : undefined;
}

export async function nodeByKey(deps: Deps, env: EnvironmentRow, key: unknown): Promise<NodeRow | undefined> {
  if (typeof key !== 'string' || key.length === 0 || key.length > 128) return undefined;
  const n = await deps.db.selectFrom('nodes').selectAll().where('node_key', '=', key).executeTakeFirst();
  return n && n.environment_id === env.id ? n : undefined;
}
