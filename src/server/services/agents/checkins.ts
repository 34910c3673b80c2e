// Check-in batching (issue 13): every agent request updates its node's last_seen, bytes
// received and hashes, but not with a database write per request. Check-ins collect in memory
// and are written in one transaction every `intervalMs` or as soon as `maxNodes` nodes wait,
// and once more when the server stops (start.ts drains this service).
//
// A batch that cannot be written (database down or full) is merged back into what is pending
// and retried with a backoff (lib/periodic.ts): the check-ins an agent was answered for are
// written once the database is back, without a restart (issue 18). Pending is one entry per
// node, so it is bounded by the fleet however long the outage lasts.
//
// What a kill -9 loses: the check-ins of the last interval (a second by default) — a last_seen
// a second older than it should be and the bytes of those requests. The node's next check-in
// sets last_seen again, so health and activity (hours of granularity) are unaffected.
// With N replicas each keeps its own pending map: bytes are added (never overwritten) and
// last_seen only moves forward, so concurrent flushes from several replicas stay correct.
import { CompiledQuery } from 'kysely';
import type { Deps } from '../../context.js';
import type { Dialect } from '../../store/dialect.js';
import { Periodic } from '../../lib/periodic.js';
import { writeInTransaction } from '../../store/db.js';

/**
 * Rows per statement of a flush. Each transaction holds the database's write lock (every
 * process's writes wait for it) for about 20 us a row: after a mass enrollment a flush carries
 * every node's first config fetch, and 5,000 rows in one transaction held it 100-200 ms.
 */
const ROWS_PER_TRANSACTION = 1000;

export interface Checkin {
  bytes: number;
  ip?: string;
  configHash?: string;
  daemonHash?: string;
  /** osquery's config_valid as the node last reported it ("0" / "1"), when it did. */
  configValid?: boolean;
  /** A config fetch (issue 22): config_fetched_at becomes this check-in's time. */
  configFetched?: boolean;
  /** The distributed interval the node was just told (issue 26: its configuration's options). */
  distributedInterval?: number;
}

interface Pending {
  bytes: number;
  lastSeen: string;
  ip?: string;
  configHash?: string;
  daemonHash?: string;
  configValid?: boolean;
  configFetchedAt?: string;
  distributedInterval?: number;
}

/** The node columns a check-in may change: JSON key, nodes column, value (undefined: not sent). */
const NODE_COLUMNS: [key: string, column: string, value: (p: Pending) => string | number | undefined][] = [
  ['ip', 'ip_address', (p) => p.ip],
  ['ch', 'config_hash', (p) => p.configHash],
  ['dh', 'daemon_hash', (p) => p.daemonHash],
  ['cv', 'config_valid', (p) => (p.configValid === undefined ? undefined : p.configValid ? 1 : 0)],
  ['di', 'distributed_interval', (p) => p.distributedInterval],
];

/**
 * The distributed interval a config fetch told the node (issue 26): a longer one counts at once; a
 * shorter one from the second fetch that tells it, since after the first the node may still be
 * waiting out its old interval (osquery applies the new one after its current pause).
 */
const INTERVAL_SET =
  'distributed_interval = case when c.di is null then nodes.distributed_interval when c.di >= nodes.distributed_interval or nodes.distributed_interval_told = c.di then c.di else nodes.distributed_interval end, ' +
  'distributed_interval_told = coalesce(c.di, nodes.distributed_interval_told)';

/** The rows of a batch as the statements read them: a JSON array parameter, one text per statement. */
function rowsOf(dialect: Dialect, keys: [string, string][]): string {
  if (dialect === 'postgres') return `jsonb_to_recordset($1::jsonb) as c(${keys.map(([k, t]) => `${k} ${t}`).join(', ')})`;
  return `(select ${keys.map(([k]) => `value ->> '$.${k}' as ${k}`).join(', ')} from json_each(?)) as c`;
}

interface FlushSql {
  /** Moves the seen counter (9) when a node of the batch had not checked in since the horizon (second parameter). */
  crossing: string;
  /** last_seen (only forward), bytes added, config_fetched_at when fetched: node_seen. */
  seen: string;
  /** The node columns that changed value (address, config hash and validity, distributed interval): nodes, only the rows that differ. */
  node: string;
  /** The check-ins counter, once per batch (listed nodes show last_seen and bytes: store/node-index.ts). */
  checkins: string;
}

const statements = new Map<string, FlushSql>();

/**
 * The flush's statements for a dialect, prepared once: set-based over the batch's rows passed as
 * one JSON parameter. bytes are added, never set, and last_seen only moves forward: replicas and
 * workers flushing the same node in any order stay right.
 */
function flushSql(dialect: Dialect): FlushSql {
  let s = statements.get(dialect);
  if (s) return s;
  const differs = dialect === 'postgres' ? 'is distinct from' : 'is not';
  const p2 = dialect === 'postgres' ? '$2' : '?';
  const types: Record<string, string> = {
    id: 'int',
    b: 'bigint',
    s: 'text',
    cf: 'text',
    ip: 'text',
    ch: 'text',
    dh: 'text',
    cv: 'int',
    di: 'int',
  };
  const set = ([k, col]: (typeof NODE_COLUMNS)[number]) => (k === 'di' ? INTERVAL_SET : `${col} = coalesce(c.${k}, nodes.${col})`);
  const changes = ([k, col]: (typeof NODE_COLUMNS)[number]) =>
    k === 'di'
      ? `c.di is not null and (c.di ${differs} nodes.distributed_interval_told or c.di ${differs} nodes.distributed_interval)`
      : `c.${k} is not null and c.${k} ${differs} nodes.${col}`;
  const keys = (...ks: string[]): [string, string][] => ks.map((k) => [k, types[k] ?? 'text']);
  s = {
    crossing: `update node_generation set generation = generation + 1 where id = 9 and exists (select 1 from ${rowsOf(dialect, keys('id'))} join node_seen on node_seen.node_id = c.id where node_seen.last_seen < ${p2})`,
    seen:
      `update node_seen set bytes_received = node_seen.bytes_received + c.b, ` +
      `last_seen = case when node_seen.last_seen < c.s then c.s else node_seen.last_seen end, ` +
      `config_fetched_at = coalesce(c.cf, node_seen.config_fetched_at) from ${rowsOf(dialect, keys('id', 'b', 's', 'cf'))} where node_seen.node_id = c.id`,
    node:
      `update nodes set ${NODE_COLUMNS.map(set).join(', ')} ` +
      `from ${rowsOf(dialect, keys('id', ...NODE_COLUMNS.map(([k]) => k)))} where nodes.id = c.id and (${NODE_COLUMNS.map(changes).join(' or ')})`,
    checkins: 'update node_generation set generation = generation + 1 where id = 10',
  };
  statements.set(dialect, s);
  return s;
}

/**
 * The seen counter moves only for a node not seen for this long: the shortest window any cached
 * count compares last_seen with (online: 3 distributed intervals, at least 10 s; stale: 3 config
 * intervals; inactive: at least an hour). A node that checks in within it stays on the same side
 * of every cutoff, so no count changes.
 */
export function crossingWindowMs(minQueryInterval: number, minConfigInterval: number): number {
  return Math.max(10_000, Math.min(3 * minQueryInterval * 1000, 3 * minConfigInterval * 1000, 3_600_000));
}

export class CheckinBatcher {
  private pending = new Map<number, Pending>();
  private readonly task: Periodic;

  constructor(
    private readonly deps: Deps,
    private readonly opts: { intervalMs: number; maxNodes: number } = { intervalMs: 1000, maxNodes: 500 },
  ) {
    this.task = new Periodic('check-in flush', opts.intervalMs, () => this.write(), deps.faults);
  }

  start(): void {
    this.task.start();
  }

  /** Nodes whose check-ins wait to be written. */
  get size(): number {
    return this.pending.size;
  }

  record(nodeId: number, c: Checkin): void {
    const lastSeen = this.deps.now().toISOString();
    const { configFetched, ...rest } = c;
    this.merge(nodeId, { ...rest, lastSeen, ...(configFetched ? { configFetchedAt: lastSeen } : {}) });
    if (this.pending.size >= this.opts.maxNodes) this.task.trigger();
  }

  private merge(nodeId: number, c: Pending): void {
    const p = this.pending.get(nodeId);
    if (!p) {
      this.pending.set(nodeId, { ...c });
      return;
    }
    p.bytes += c.bytes;
    if (c.lastSeen >= p.lastSeen) {
      p.lastSeen = c.lastSeen;
      // The newer check-in's values win; an older batch merged back keeps the newer ones.
      if (c.ip) p.ip = c.ip;
      if (c.configHash) p.configHash = c.configHash;
      if (c.daemonHash) p.daemonHash = c.daemonHash;
      if (c.configValid !== undefined) p.configValid = c.configValid;
      if (c.configFetchedAt) p.configFetchedAt = c.configFetchedAt;
      if (c.distributedInterval !== undefined) p.distributedInterval = c.distributedInterval;
    } else {
      p.ip ??= c.ip;
      p.configHash ??= c.configHash;
      p.daemonHash ??= c.daemonHash;
      p.configValid ??= c.configValid;
      p.configFetchedAt ??= c.configFetchedAt;
      p.distributedInterval ??= c.distributedInterval;
    }
  }

  /**
   * Writes everything pending, at most ROWS_PER_TRANSACTION rows a transaction, through the
   * store's writer (on SQLite a thread of its own: the event loop never runs the flush): the
   * crossing check, node_seen for every node, nodes only for a value that changed (an address, a
   * new config hash or validity), the check-ins counter. On failure what was not written is
   * pending again (and thrown).
   */
  private async write(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    try {
      const sql = flushSql(this.deps.dialect);
      const write = this.deps.write ?? ((statements: CompiledQuery[]) => writeInTransaction(this.deps.db, statements));
      const windows = await this.deps.db
        .selectFrom('environments')
        .select((eb) => [eb.fn.min<number>('query_interval').as('q'), eb.fn.min<number>('config_interval').as('c')])
        .executeTakeFirst();
      const horizon = new Date(
        this.deps.now().getTime() - crossingWindowMs(Number(windows?.q ?? 60), Number(windows?.c ?? 300)),
      ).toISOString();
      const rows = [...batch].map(([id, p]) => {
        const row: Record<string, unknown> = { id, b: p.bytes, s: p.lastSeen, ...(p.configFetchedAt ? { cf: p.configFetchedAt } : {}) };
        for (const [key, , value] of NODE_COLUMNS) {
          const v = value(p);
          if (v !== undefined) row[key] = v;
        }
        return row;
      });
      while (rows.length > 0) {
        const chunk = rows.splice(0, ROWS_PER_TRANSACTION);
        const json = JSON.stringify(chunk);
        const changesNode = chunk.some((r) => NODE_COLUMNS.some(([key]) => r[key] !== undefined));
        await write([
          CompiledQuery.raw(sql.crossing, [json, horizon]),
          CompiledQuery.raw(sql.seen, [json]),
          ...(changesNode ? [CompiledQuery.raw(sql.node, [json])] : []),
          CompiledQuery.raw(sql.checkins, []),
        ]);
        for (const r of chunk) batch.delete(r.id as number);
      }
    } catch (e) {
      for (const [id, p] of batch) this.merge(id, p);
      throw e;
    }
  }

  /** Writes what is pending now, after any write under way (tests, shutdown); errors are reported, never thrown. */
  flush(): Promise<void> {
    return this.task.runNow().catch((e) => void this.deps.faults.report('check-in flush', e));
  }

  async stop(): Promise<void> {
    await this.task.stop();
  }
}
