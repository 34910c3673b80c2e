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
import { sql } from 'kysely';
import type { Deps } from '../context.js';
import { Periodic } from '../lib/periodic.js';

export interface Checkin {
  bytes: number;
  ip?: string;
  configHash?: string;
  daemonHash?: string;
  /** osquery's config_valid as the node last reported it ("0" / "1"), when it did. */
  configValid?: boolean;
  /** A config fetch (issue 22): config_fetched_at becomes this check-in's time. */
  configFetched?: boolean;
}

interface Pending {
  bytes: number;
  lastSeen: string;
  ip?: string;
  configHash?: string;
  daemonHash?: string;
  configValid?: boolean;
  configFetchedAt?: string;
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
    } else {
      p.ip ??= c.ip;
      p.configHash ??= c.configHash;
      p.daemonHash ??= c.daemonHash;
      p.configValid ??= c.configValid;
      p.configFetchedAt ??= c.configFetchedAt;
    }
  }

  /** Writes everything pending in one transaction; on failure it is pending again (and thrown). */
  private async write(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    try {
      await this.deps.db.transaction().execute(async (trx) => {
        for (const [id, p] of batch) {
          await trx
            .updateTable('nodes')
            .set((eb) => ({
              bytes_received: eb('bytes_received', '+', p.bytes),
              // Only forward: a replica flushing an older check-in after another's newer one.
              last_seen: sql<string>`case when last_seen is null or last_seen < ${p.lastSeen} then ${p.lastSeen} else last_seen end`,
              ...(p.ip ? { ip_address: p.ip } : {}),
              ...(p.configHash ? { config_hash: p.configHash } : {}),
              ...(p.daemonHash ? { daemon_hash: p.daemonHash } : {}),
              ...(p.configValid !== undefined ? { config_valid: p.configValid ? 1 : 0 } : {}),
              ...(p.configFetchedAt ? { config_fetched_at: p.configFetchedAt } : {}),
            }))
            .where('id', '=', id)
            .execute();
        }
      });
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
