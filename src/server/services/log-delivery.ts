// Log delivery (issue 13): status and result logs from agents go to the environment's sinks
// and the global ones. Asynchronous, so a slow or failing sink never blocks an agent: each sink
// has a bounded queue drained by its own loop; when full, entries are dropped and counted.
// Drops and failures are audited at most once a minute per sink. Counters (bytes_sent,
// exports_count) are added to the sink rows by `flushCounters`, not per entry.
//
// The queues are in memory: a kill -9 loses what was queued but not yet delivered (at most
// QUEUE_LIMIT entries a sink); with N replicas each delivers what its own agents sent, and the
// counters are added, never overwritten.
import { appendFile } from 'node:fs/promises';
import type { Deps } from '../context.js';
import { Periodic } from '../lib/periodic.js';
import type { EnvironmentRow, LogSinkRow, NodeRow } from '../store/schema.js';
import { LogTypes, Severities } from '../../api/index.js';
import { writeAudit } from './audit.js';

export const QUEUE_LIMIT = 10_000;
const BATCH = 500;
const AUDIT_EVERY_MS = 60_000;

export interface LogEntry {
  environment: string;
  node_uuid: string;
  hostname: string;
  log_type: string;
  /** The scheduled (or live) query a result is of, as osquery names it (issue 22). */
  name?: string;
  received_at: string;
  entry: unknown;
}

/** The query name osquery puts in a result log entry (and live answers carry), if any. */
function queryName(entry: unknown): string | undefined {
  const n = typeof entry === 'object' && entry !== null ? (entry as { name?: unknown }).name : undefined;
  return typeof n === 'string' ? n.slice(0, 1024) : undefined;
}

interface SinkState {
  sink: LogSinkRow;
  queue: LogEntry[];
  /** The drain loop while it runs (one per sink), so stop() can wait for it. */
  draining?: Promise<void>;
  bytes: number;
  exports: number;
  drops: number;
  failures: number;
  lastError: string;
  lastAudit: number;
}

export class LogDelivery {
  private states = new Map<number, SinkState>();
  /** The counters' flush: a database that is down or full is retried with a backoff, never fatal. */
  private readonly task: Periodic;

  constructor(private readonly deps: Deps) {
    this.task = new Periodic('log sink counters', 1000, () => this.flushCounters(), deps.faults);
  }

  start(): void {
    this.task.start();
  }

  /**
   * Read on every delivery (a small indexed table), not cached: a sink added through the admin
   * API gets the very next log, on every replica, with no window in which entries go nowhere.
   */
  private sinksFor(envId: number, source: string): Promise<LogSinkRow[]> {
    return this.deps.db
      .selectFrom('log_sinks')
      .selectAll()
      .where('environment_id', 'in', [envId, 0])
      .where('source', '=', source)
      .where('enabled', '=', 1)
      .orderBy('environment_id')
      .orderBy('sort_order')
      .execute();
  }

  /** Queues entries for every matching sink; never waits for delivery. */
  async deliver(env: EnvironmentRow, node: NodeRow, logType: string, entries: unknown[]): Promise<void> {
    if (entries.length === 0) return;
    const sinks = await this.sinksFor(env.id, logType);
    const received_at = this.deps.now().toISOString();
    const lines = entries.map((entry): LogEntry => {
      const name = logType === 'status' ? undefined : queryName(entry);
      return { environment: env.name, node_uuid: node.uuid, hostname: node.hostname, log_type: logType, ...(name === undefined ? {} : { name }), received_at, entry };
    });
    for (const sink of sinks) {
      let st = this.states.get(sink.id);
      if (!st) {
        st = { sink, queue: [], bytes: 0, exports: 0, drops: 0, failures: 0, lastError: '', lastAudit: 0 };
        this.states.set(sink.id, st);
      }
      st.sink = sink;
      const room = QUEUE_LIMIT - st.queue.length;
      st.queue.push(...lines.slice(0, Math.max(0, room)));
      if (lines.length > room) st.drops += lines.length - Math.max(0, room);
      if (!st.draining) st.draining = this.drain(st).finally(() => (st!.draining = undefined));
    }
  }

  private async drain(st: SinkState): Promise<void> {
    while (st.queue.length > 0) {
      const batch = st.queue.splice(0, BATCH);
      try {
        // Read after the await: `st.bytes += await send()` would add to the value read before the
        // send, undoing a counter flush that ran meanwhile (bytes_sent counted 2-3 times).
        const sent = await send(st.sink, batch);
        st.bytes += sent;
        st.exports += 1;
      } catch (e) {
        st.failures += 1;
        st.drops += batch.length;
        st.lastError = (e as Error).message;
      }
    }
  }

  /** Adds the counters to the sink rows and audits drops (once a minute per sink). */
  async flushCounters(): Promise<void> {
    for (const st of this.states.values()) {
      if (st.bytes || st.exports) {
        const { bytes, exports } = st;
        st.bytes = 0;
        st.exports = 0;
        try {
          await this.deps.db
            .updateTable('log_sinks')
            .set((eb) => ({ bytes_sent: eb('bytes_sent', '+', bytes), exports_count: eb('exports_count', '+', exports) }))
            .where('id', '=', st.sink.id)
            .execute();
        } catch (e) {
          // Kept for the next flush: the counts are added, so a late write is still exact.
          st.bytes += bytes;
          st.exports += exports;
          throw e;
        }
      }
      if (st.drops && Date.now() - st.lastAudit >= AUDIT_EVERY_MS) {
        const drops = st.drops;
        st.drops = 0;
        try {
          const env = st.sink.environment_id ? await this.deps.db.selectFrom('environments').select(['id', 'uuid']).where('id', '=', st.sink.environment_id).executeTakeFirst() : null;
          await writeAudit(this.deps, {
            line: `log sink ${st.sink.name} dropped ${drops} entr${drops === 1 ? 'y' : 'ies'}${st.lastError ? `: ${st.lastError}` : ' (queue full or sink type without delivery)'}`,
            logType: LogTypes.environment,
            severity: Severities.error,
            service: 'tls',
            env: env ?? null,
          });
          st.lastAudit = Date.now();
        } catch (e) {
          st.drops += drops;
          throw e;
        }
      }
    }
  }

  /** Delivers what is queued (bounded by the sinks' own speed) and writes the counters. */
  async stop(): Promise<void> {
    await Promise.all([...this.states.values()].map((st) => st.draining));
    await this.task.stop();
  }
}

/** Sends one batch; returns the bytes sent. Types without delivery throw (counted as drops). */
async function send(sink: LogSinkRow, batch: LogEntry[]): Promise<number> {
  let config: Record<string, unknown> = {};
  try {
    config = JSON.parse(sink.config || '{}') as Record<string, unknown>;
  } catch {
    throw new Error('sink config is not JSON');
  }
  switch (sink.type) {
    case 'file': {
      if (typeof config.path !== 'string' || config.path === '') throw new Error('file sink without config.path');
      const text = batch.map((e) => JSON.stringify(e)).join('\n') + '\n';
      await appendFile(config.path, text);
      return Buffer.byteLength(text);
    }
    case 'http': {
      if (typeof config.url !== 'string' || !/^https?:\/\//.test(config.url)) throw new Error('http sink without an http(s) config.url');
      const body = JSON.stringify(batch);
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (typeof config.headers === 'object' && config.headers !== null) {
        for (const [k, v] of Object.entries(config.headers)) if (typeof v === 'string') headers[k] = v;
      }
      const res = await fetch(config.url, { method: 'POST', headers, body, signal: AbortSignal.timeout(10_000) });
      await res.arrayBuffer();
      if (!res.ok) throw new Error(`http sink answered ${res.status}`);
      return Buffer.byteLength(body);
    }
    default:
      throw new Error(`sink type ${sink.type} has no delivery in the reference server`);
  }
}
