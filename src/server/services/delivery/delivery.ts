// Log delivery (issue 28): in every server process, a runner per enabled sink of a type this
// server delivers (runner.ts; the lease picks one process per sink), kept in step with the sinks
// table by a tick every second, which also wakes runners whose stream grew on another replica
// (this process's own commits wake them at once), refreshes the backlog gauges, and audits what
// was dropped (once a minute per sink). Started and stopped by start.ts; the spool's pruner
// (pruner.ts) runs beside it.
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { CompiledQuery, type Kysely } from 'kysely';
import type { Deps } from '../../context.js';
import type { DB, LogSinkRow, LogStreamRow } from '../../store/schema.js';
import { LogTypes, Severities } from '../../../api/index.js';
import { Periodic } from '../../lib/periodic.js';
import { writeAudit } from '../audit/audit.js';
import { destinationOf } from './destinations/index.js';
import { SinkRunner, type RunnerHost } from './runner.js';
import { ensureSinkState, firstAfter } from './sink-state.js';
import { SpoolPruner } from './pruner.js';
import { readRows } from '../../store/sqlite-read-now.js';
import type { Spool } from './spool.js';
import type { SinkEntry } from './sink.js';

/** Default bound of each sink's backlog, bytes of entries (--sink-backlog-size). */
export const DEFAULT_BACKLOG_BYTES = 1024 * 1024 * 1024;
/** Default bound of each sink's backlog by age (--sink-backlog-age): 7 days. */
export const DEFAULT_BACKLOG_AGE_MS = 7 * 24 * 3600_000;
const TICK_MS = 1000;
/** What each tick reads, compiled once. */
const TICK_SINKS = CompiledQuery.raw('select * from log_sinks', []);
const TICK_ENVS = CompiledQuery.raw('select id, name from environments', []);
const TICK_STREAMS = CompiledQuery.raw('select * from log_streams', []);
const AUDIT_EVERY_MS = 60_000;
const GAUGES_EVERY_MS = 5_000;

interface Drops {
  n: number;
  reason: string;
  detail: string;
  lastAudit: number;
}

/** Per sink, what the gauges show (refreshed by the tick). */
export interface SinkGauge {
  sink: string;
  environment: string;
  entries: number;
  bytes: number;
  oldestSeconds: number;
}

export class Delivery {
  readonly owner = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  private readonly runners = new Map<number, SinkRunner>();
  /** Runners reconcile stopped (their sink gone or changed), until their loop has ended: stop() waits for them. */
  private readonly retiring = new Set<Promise<void>>();
  private readonly drops = new Map<number, Drops & { sink: LogSinkRow }>();
  private envNames = new Map<number, string>();
  private readonly tick: Periodic;
  private readonly pruner: SpoolPruner;
  private gauges: SinkGauge[] = [];
  private lastGauges = 0;
  private stopping = false;
  private readonly host: RunnerHost;
  private readonly onCommit = (streams: Set<string>) => {
    for (const r of this.runners.values()) if (streams.has(`${r.sink.environment_id}\u0000${r.sink.source}`)) r.wake();
  };

  constructor(
    private readonly deps: Deps,
    /** Reads of the spool (SQLite: the admin door's reader threads). */
    private readonly readDb: Kysely<DB>,
    private readonly spool: Spool,
    /** Whether this process may run per-host sinks (stdout): the only process, or the first worker. */
    private readonly perHost: boolean,
  ) {
    this.host = {
      deps,
      readDb,
      owner: this.owner,
      // Read at each check (a test may change the server's config).
      get limits() {
        return { maxBytes: deps.config.sinkBacklogBytes, maxAgeMs: deps.config.sinkBacklogAgeMs };
      },
      envName: (id) => this.envNames.get(id) ?? '',
      dropped: (sink, n, reason, detail) => this.dropped(sink, n, reason, detail),
      delivered: (sink, entries, ackAt) => this.delivered(sink, entries, ackAt),
      failed: (sink, error) => {
        deps.metrics?.sinkFailed(sink.name, this.scopeName(sink));
        deps.faults.report(`log sink ${sink.name}`, error);
      },
    };
    this.tick = new Periodic('log delivery', TICK_MS, () => this.reconcile(), deps.faults);
    this.pruner = new SpoolPruner(deps, readDb, this.owner);
    if (deps.metrics) deps.metrics.sources.sinkBacklog = () => this.gauges;
  }

  /** The pruner, whose retention issue 30's settings plug into. */
  get spoolPruner(): SpoolPruner {
    return this.pruner;
  }

  start(): void {
    this.spool.on('committed', this.onCommit);
    // The first reconcile at once, as a run of the tick: stop() waits for it. (Run on its own, it
    // could still be reading when a server stopped right after its start closed the store.)
    this.tick.start(0);
    this.pruner.start();
  }

  private scopeName(sink: Pick<LogSinkRow, 'environment_id'>): string {
    return sink.environment_id === 0 ? 'global' : (this.envNames.get(sink.environment_id) ?? String(sink.environment_id));
  }

  /**
   * One of the tick's small reads: on the event loop's own SQLite connection when it can (every
   * second in every process, idle or not: a reader thread's hand-off, and its wake-up, cost more
   * than these reads), else through the reader threads.
   */
  private async tickRead<T>(q: CompiledQuery): Promise<T[]> {
    return readRows<T>(this.readDb, this.deps.readNow, q);
  }

  /** Runners for the enabled sinks this process can deliver; others stopped. */
  private async reconcile(): Promise<void> {
    if (this.stopping) return;
    const [sinks, envs, streams] = await Promise.all([
      this.tickRead<LogSinkRow>(TICK_SINKS),
      this.tickRead<{ id: number; name: string }>(TICK_ENVS),
      this.tickRead<LogStreamRow>(TICK_STREAMS),
    ]);
    if (this.stopping) return;
    this.envNames = new Map(envs.map((e) => [e.id, e.name]));
    const wanted = new Map<number, LogSinkRow>();
    for (const s of sinks) {
      const dest = destinationOf(s.type);
      if (!s.enabled || !dest || (dest.perHost && !this.perHost)) continue;
      wanted.set(s.id, s);
    }
    for (const [id, r] of this.runners) {
      const s = wanted.get(id);
      // Gone, disabled, or another stream (source or scope changed), or ended by itself: stopped;
      // a new runner reads the new state.
      if (!s || r.finished || s.source !== r.sink.source || s.environment_id !== r.sink.environment_id || s.type !== r.sink.type) {
        this.runners.delete(id);
        const retired = r.stop(0).finally(() => this.retiring.delete(retired));
        this.retiring.add(retired);
      }
    }
    const heads = new Map(streams.map((h) => [`${h.environment_id}\u0000${h.log_type}`, Number(h.entries)]));
    for (const [id, s] of wanted) {
      let r = this.runners.get(id);
      if (!r) {
        await ensureSinkState(this.deps.db, s);
        if (this.stopping) return;
        r = new SinkRunner(this.host, s, destinationOf(s.type)!);
        this.runners.set(id, r);
        continue;
      }
      r.update(s);
      // Another replica's commits: seen here within a tick.
      const seq = r.cursorSeq;
      if (seq !== undefined && (heads.get(`${s.environment_id}\u0000${s.source}`) ?? 0) > seq) r.wake();
    }
    await this.refreshGauges(sinks, streams);
    await this.auditDrops();
  }

  /** Backlog per sink for the metrics, every few seconds (every process reports the same figures). */
  private async refreshGauges(sinks: LogSinkRow[], streams: LogStreamRow[]): Promise<void> {
    if (!this.deps.metrics || Date.now() - this.lastGauges < GAUGES_EVERY_MS) return;
    this.lastGauges = Date.now();
    const states = await this.readDb.selectFrom('sink_state').select(['sink_id', 'cursor_id', 'cursor_seq', 'cursor_pos']).execute();
    const byId = new Map(states.map((s) => [s.sink_id, s]));
    const head = new Map(streams.map((h) => [`${h.environment_id}\u0000${h.log_type}`, h]));
    const out: SinkGauge[] = [];
    const now = this.deps.now().getTime();
    for (const s of sinks) {
      const st = byId.get(s.id);
      if (!s.enabled || !st || !destinationOf(s.type)) continue;
      const h = head.get(`${s.environment_id}\u0000${s.source}`);
      const entries = Math.max(0, Number(h?.entries ?? 0) - Number(st.cursor_seq));
      const bytes = Math.max(0, Number(h?.bytes ?? 0) - Number(st.cursor_pos));
      let oldestSeconds = 0;
      if (entries > 0) {
        const first = await firstAfter(this.readDb, s, Number(st.cursor_id));
        if (first) oldestSeconds = Math.max(0, (now - Date.parse(first.row.received_at)) / 1000);
      }
      out.push({ sink: s.name, environment: this.scopeName(s), entries, bytes, oldestSeconds });
    }
    this.gauges = out;
  }

  private delivered(sink: LogSinkRow, entries: SinkEntry[], ackAt: number): void {
    const m = this.deps.metrics;
    if (!m || entries.length === 0) return;
    const scope = this.scopeName(sink);
    m.sinkDelivered(sink.name, scope, entries.length);
    for (const e of entries) m.sinkLatency(sink.name, scope, Math.max(0, (ackAt - Date.parse(e.receivedAt)) / 1000));
  }

  /** Entries passed without delivery: counted now, audited at most once a minute per sink. */
  dropped(sink: LogSinkRow, n: number, reason: string, detail: string): void {
    if (n <= 0) return;
    this.deps.metrics?.dropped(sink.name, reason, n);
    const d = this.drops.get(sink.id) ?? { sink, n: 0, reason, detail, lastAudit: 0 };
    d.n += n;
    d.reason = reason;
    d.detail = detail;
    this.drops.set(sink.id, d);
  }

  private async auditDrops(force = false): Promise<void> {
    for (const [id, d] of this.drops) {
      if (d.n === 0 || (!force && Date.now() - d.lastAudit < AUDIT_EVERY_MS)) continue;
      const n = d.n;
      d.n = 0;
      try {
        const env = d.sink.environment_id
          ? await this.deps.db.selectFrom('environments').select(['id', 'uuid']).where('id', '=', d.sink.environment_id).executeTakeFirst()
          : null;
        await writeAudit(this.deps, {
          line: `log sink ${id} "${d.sink.name}" dropped ${n} entr${n === 1 ? 'y' : 'ies'} (${d.reason}): ${d.detail}`,
          logType: LogTypes.environment,
          severity: Severities.error,
          service: 'tls',
          env: env ?? null,
        });
        d.lastAudit = Date.now();
      } catch (e) {
        d.n += n;
        throw e;
      }
    }
  }

  /** Stops every runner (a send in progress gets `graceMs`), gives the leases up, writes the audits. */
  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    this.spool.off('committed', this.onCommit);
    await this.tick.stop(false);
    await this.pruner.stop();
    await Promise.all([...[...this.runners.values()].map((r) => r.stop(graceMs)), ...this.retiring]);
    this.runners.clear();
    await this.auditDrops(true).catch((e) => this.deps.faults.report('log delivery', e));
  }
}
