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

/** The optional columns of a check-in: JSON key, nodes column, value (undefined: not changed). */
const OPTIONAL: [key: string, column: string, value: (p: Pending) => string | number | undefined][] = [
  ['ip', 'ip_address', (p) => p.ip],
  ['ch', 'config_hash', (p) => p.configHash],
  ['dh', 'daemon_hash', (p) => p.daemonHash],
  ['cv', 'config_valid', (p) => (p.configValid === undefined ? undefined : p.configValid ? 1 : 0)],
  ['cf', 'config_fetched_at', (p) => p.configFetchedAt],
  ['di', 'distributed_interval', (p) => p.distributedInterval],
];

/**
 * The distributed interval a config fetch told the node (issue 26): a longer one counts at once; a
 * shorter one from the second fetch that tells it, since after the first the node may still be
 * waiting out its old interval (osquery applies the new one after its current pause).
 */
const INTERVAL_SET =
  'distributed_interval = case when c.di >= nodes.distributed_interval or nodes.distributed_interval_told = c.di then c.di else nodes.distributed_interval end, ' +
  'distributed_interval_told = c.di';

const statements = new Map<string, string>();

/**
 * The statement for one shape (which optional columns its rows set). bytes are added, never set,
 * and last_seen only moves forward: replicas and workers flushing the same node in any order stay
 * right. Cached by shape: the texts are prepared once.
 */
function checkinSql(dialect: Dialect, mask: number): string {
  const key = `${dialect}:${mask}`;
  let text = statements.get(key);
  if (text) return text;
  const chosen = OPTIONAL.filter((_, i) => mask & (1 << i));
  const sets = [
    'bytes_received = nodes.bytes_received + c.b',
    'last_seen = case when nodes.last_seen is null or nodes.last_seen < c.s then c.s else nodes.last_seen end',
    ...chosen.map(([k, col]) => (k === 'di' ? INTERVAL_SET : `${col} = c.${k}`)),
  ].join(', ');
  if (dialect === 'postgres') {
    const types: Record<string, string> = { ip: 'text', ch: 'text', dh: 'text', cv: 'int', cf: 'text', di: 'int' };
    const cols = ['id int', 'b bigint', 's text', ...chosen.map(([k]) => `${k} ${types[k]}`)].join(', ');
    text = `update nodes set ${sets} from jsonb_to_recordset($1::jsonb) as c(${cols}) where nodes.id = c.id`;
  } else {
    const cols = ['id', 'b', 's', ...chosen.map(([k]) => k)].map((k) => `value ->> '$.${k}' as ${k}`).join(', ');
    // SQLite's UPDATE ... SET does not take the target's name before a column: plain names.
    text = `update nodes set ${sets.replaceAll('nodes.bytes_received', 'bytes_received')} from (select ${cols} from json_each(?)) as c where nodes.id = c.id`;
  }
  statements.set(key, text);
  return text;
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
   * Writes everything pending: one set-based statement per shape of check-in (most carry only
   * last_seen and bytes; a config fetch adds its hash and time, a new address the address), its
   * rows passed as one JSON parameter, so a flush of thousands of nodes costs a few statements
   * whose text never changes; at most ROWS_PER_TRANSACTION rows a transaction, through the
   * store's writer (on SQLite a thread of its own: the event loop never runs the flush). On
   * failure what was not written is pending again (and thrown).
   */
  private async write(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    try {
      const shapes = new Map<number, object[]>();
      for (const [id, p] of batch) {
        let mask = 0;
        const row: Record<string, unknown> = { id, b: p.bytes, s: p.lastSeen };
        OPTIONAL.forEach(([key, , value], i) => {
          const v = value(p);
          if (v !== undefined) {
            mask |= 1 << i;
            row[key] = v;
          }
        });
        let rows = shapes.get(mask);
        if (!rows) shapes.set(mask, (rows = []));
        rows.push(row);
      }
      const write = this.deps.write ?? ((statements: CompiledQuery[]) => writeInTransaction(this.deps.db, statements));
      for (const [mask, rows] of shapes) {
        while (rows.length > 0) {
          const chunk = rows.splice(0, ROWS_PER_TRANSACTION);
          await write([CompiledQuery.raw(checkinSql(this.deps.dialect, mask), [JSON.stringify(chunk)])]);
          for (const r of chunk) batch.delete((r as { id: number }).id);
        }
      }
    } catch (e) {
      for (const [id, p] of batch) this.merge(id, p);
      throw e;
    }
  }

  /** Writes what is pending now (tests, shutdown); errors are reported, never thrown. */
  flush(): Promise<void> {
    return this.write().catch((e) => void this.deps.faults.report('check-in flush', e));
  }

  async stop(): Promise<void> {
    await this.task.stop();
  }
}
