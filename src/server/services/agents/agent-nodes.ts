// Enrollment and node lookup for the agent door (issue 13): the node row is built from the
// host_details osquery sends at enroll (system_info, os_version, osquery_info, platform_info).
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Deps } from '../../context.js';
import { CompiledQuery, type QueryResult } from 'kysely';
import type { EnvironmentRow, NodeRow } from '../../store/schema.js';
import { writeInTransaction } from '../../store/db.js';
import { NEVER } from '../../../api/index.js';
import { platformBucket, versionKey } from '../fleet/node-health.js';
import { detailColumns, detailText, mergedSystemInfo } from './node-details.js';

const obj = (v: unknown): Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
const str = detailText;

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
  if (env.enroll_expire && env.enroll_expire !== NEVER && new Date(env.enroll_expire) <= now)
    return { reason: 'expired', text: 'enroll secret expired' };
  return undefined;
}

/** What the agent door keeps of an enrolled node (agent/state.ts's AgentNode). */
export type EnrolledNode = Pick<NodeRow, 'id' | 'uuid' | 'hostname' | 'environment_id' | 'ip_address' | 'details_at' | 'created_at'>;

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
  write: (statements: CompiledQuery[]) => Promise<QueryResult<unknown>[]> = (statements) => writeInTransaction(deps.db, statements),
): Promise<{ key: string; node: EnrolledNode } | undefined> {
  const d = obj(details);
  const sys = obj(d.system_info);
  const os = obj(d.os_version);
  const osq = obj(d.osquery_info);
  const uuid = (str(identifier, 64) || str(sys.uuid, 64)).toLowerCase();
  if (!/^[a-z0-9][a-z0-9._:-]*$/.test(uuid)) return undefined;
  // The columns host details decide, read as the detail refresh reads them (node-details.ts).
  const cols = detailColumns({ system_info: sys, os_version: os, osquery_info: osq });
  const hostname = cols.hostname || uuid;
  const platform = cols.platform || 'unknown';
  const nodeKey = randomBytes(20).toString('hex');
  const ts = deps.now().toISOString();
  const values = {
    node_key: nodeKey,
    hostname,
    localname: cols.localname || hostname,
    ip_address: str(ip, 64),
    platform,
    platform_bucket: platformBucket(platform),
    platform_version: cols.platform_version ?? '',
    osquery_version: cols.osquery_version ?? '',
    osquery_version_key: versionKey(cols.osquery_version ?? ''),
    cpu: cols.cpu ?? '',
    memory: cols.memory ?? '',
    hardware_serial: cols.hardware_serial ?? '',
    config_hash: str(osq.config_hash, 128),
    daemon_hash: '',
    environment_id: env.id,
    config_valid: str(osq.config_valid) === '0' ? 0 : 1,
    // What its flags say, as far as the server knows (the environment's); each config fetch then
    // says what it was told (issue 26: "online" follows each node's cadence).
    distributed_interval: env.query_interval,
    distributed_interval_told: env.query_interval,
    system_info: mergedSystemInfo('{}', { platform_info: d.platform_info ?? {}, os_version: os, osquery_info: osq, system_info: sys }),
    // The details just reported: the next detail refresh is one interval away (node-details.ts).
    details_at: ts,
    updated_at: ts,
  };
  // A UUID belongs to one environment: enrolling it from another returns no row.
  const upsert = deps.db
    .insertInto('nodes')
    // osquery's enroll says nothing of the user it runs as: unknown (''), not assumed to be root (issue 26).
    .values({
      ...values,
      uuid,
      country_code: '',
      osquery_user: str(osq.user),
      extra_data: '{}',
      user_id: 0,
      username: '',
      uptime_seconds: 0,
      created_at: ts,
    })
    .onConflict((oc) => oc.column('uuid').doUpdateSet(values).where('nodes.environment_id', '=', env.id))
    .returning(['id', 'uuid', 'hostname', 'environment_id', 'ip_address', 'details_at', 'created_at'])
    .compile();
  // Seen now, in the same transaction (the node_seen row is the insert trigger's); a re-enroll
  // may bring back a node unseen for days, so the counts move (checkins.ts moves them only on
  // such a crossing).
  const seen = deps.db
    .updateTable('node_seen')
    .set({ last_seen: ts })
    .where('node_id', '=', (eb) => eb.selectFrom('nodes').select('id').where('uuid', '=', uuid).where('environment_id', '=', env.id))
    .compile();
  // One counter per statement, in ascending id: the order every writer locks them in
  // (store/migration-lock-order.ts), so two enrollments never deadlock.
  const bump = (id: number) => CompiledQuery.raw(`update node_generation set generation = generation + 1 where id = ${id}`, []);
  const [upserted] = await write([upsert, seen, bump(1), bump(2)]);
  const node = upserted?.rows[0] as EnrolledNode | undefined;
  return node ? { key: nodeKey, node } : undefined;
}

export async function nodeByKey(
  deps: Deps,
  env: EnvironmentRow,
  key: unknown,
): Promise<Omit<NodeRow, 'last_seen' | 'bytes_received' | 'config_fetched_at'> | undefined> {
  if (typeof key !== 'string' || key.length === 0 || key.length > 128) return undefined;
  const n = await deps.db.selectFrom('nodes').selectAll().where('node_key', '=', key).executeTakeFirst();
  return n && n.environment_id === env.id ? n : undefined;
}
