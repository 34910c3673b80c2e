// Check-in batching (issue 13): every agent request updates its node's last_seen, bytes
// received and hashes, but not with a database write per request. Check-ins collect in memory
// and are written in one transaction every `intervalMs` or as soon as `maxNodes` nodes wait,
// and once more when the server stops (start.ts drains this service).
//
// What a kill -9 loses: the check-ins of the last interval (a second by default) — a last_seen
// a second older than it should be and the bytes of those requests. The node's next check-in
// sets last_seen again, so health and activity (hours of granularity) are unaffected.
// With N replicas each keeps its own pending map: bytes are added (never overwritten) and
// last_seen only moves forward, so concurrent flushes from several replicas stay correct.
import { sql } from 'kysely';
import type { Deps } from '../context.js';

export interface Checkin {
  bytes: number;
  ip?: string;
  configHash?: string;
  daemonHash?: string;
  /** A config fetch (issue 22): config_fetched_at becomes this check-in's time. */
  configFetched?: boolean;
}

interface Pending {
  bytes: number;
  lastSeen: string;
  ip?: string;
  configHash?: string;
  daemonHash?: string;
  configFetchedAt?: string;
}

export class CheckinBatcher {
  private pending = new Map<number, Pending>();
  private timer?: NodeJS.Timeout;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly deps: Deps,
    private readonly opts: { intervalMs: number; maxNodes: number } = { intervalMs: 1000, maxNodes: 500 },
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.flush(), this.opts.intervalMs);
    this.timer.unref();
  }

  record(nodeId: number, c: Checkin): void {
    const p = this.pending.get(nodeId);
    const lastSeen = this.deps.now().toISOString();
    if (p) {
      p.bytes += c.bytes;
      p.lastSeen = lastSeen;
      if (c.ip) p.ip = c.ip;
      if (c.configHash) p.configHash = c.configHash;
      if (c.daemonHash) p.daemonHash = c.daemonHash;
      if (c.configFetched) p.configFetchedAt = lastSeen;
    } else {
      this.pending.set(nodeId, { bytes: c.bytes, ip: c.ip, configHash: c.configHash, daemonHash: c.daemonHash, lastSeen, configFetchedAt: c.configFetched ? lastSeen : undefined });
    }
    if (this.pending.size >= this.opts.maxNodes) void this.flush();
  }

  /** Writes everything pending in one transaction; flushes never overlap. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.write()).catch((e) => console.error('check-in flush failed:', e));
    return this.flushing;
  }

  private async write(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
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
            ...(p.configFetchedAt ? { config_fetched_at: p.configFetchedAt } : {}),
          }))
          .where('id', '=', id)
          .execute();
      }
    });
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.flush();
  }
}
