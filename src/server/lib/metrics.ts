// Prometheus metrics (issue 18) through prom-client, the maintained Node client: one registry per
// server (tests run several in one process), the standard text format, served on the admin door
// at GET /metrics to super-admins (a bearer token, as Prometheus' `authorization` sends it) and,
// with --metrics-listen, on a listener of its own without authentication (for a private network).
// Names and labels are documented in docs/api.md "Metrics"; labels never carry node keys, secret
// paths or user input (endpoint kinds and route patterns only), so their number stays bounded.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { DbFault } from './db-errors.js';

export interface MetricsSources {
  /** Agent requests in progress now. */
  agentInFlight?: () => number;
  /** Each sink's backlog in the spool (issue 28). */
  sinkBacklog?: () => { sink: string; environment: string; entries: number; bytes: number; oldestSeconds: number }[];
  /** Check-ins waiting to be written. */
  checkinsPending?: () => number;
  /** Log followers waiting for new lines (issue 30). */
  logFollowers?: () => number;
}

/** How often the event loop's delay is sampled (prom-client's eventLoopMonitoringPrecision). */
const EVENT_LOOP_SAMPLE_MS = 50;

const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export class Metrics {
  readonly registry = new Registry();
  private readonly requests: Counter<'door' | 'endpoint' | 'status'>;
  private readonly duration: Histogram<'door' | 'endpoint'>;
  private readonly shed: Counter<'door'>;
  private readonly reenroll: Counter;
  private readonly dbErrors: Counter<'where' | 'kind'>;
  private readonly drops: Counter<'sink' | 'reason'>;
  private readonly sinkDeliveredTotal: Counter<'sink' | 'environment'>;
  private readonly sinkFailedTotal: Counter<'sink' | 'environment'>;
  private readonly sinkDelivery: Histogram<'sink' | 'environment'>;
  private readonly enrollRefusals: Counter<'environment' | 'reason'>;
  private readonly checkpoints: Histogram<'mode'>;
  private readonly writes: Histogram<'stage'>;
  readonly sources: MetricsSources = {};

  /**
   * `processMetrics`: Node's own (CPU, memory, GC, event loop) as prom-client collects them. The
   * event loop's delay is sampled every EVENT_LOOP_SAMPLE_MS: prom-client's default of 10 ms
   * woke an idle process 100 times a second, a third of an idle server's CPU; a pause still
   * shows whole (the late sample measures it), and p99/max are reset at each scrape.
   */
  constructor(o: { processMetrics?: boolean } = {}) {
    const registers = [this.registry];
    if (o.processMetrics !== false)
      collectDefaultMetrics({ register: this.registry, prefix: 'fleetctl_', eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
    this.requests = new Counter({
      name: 'fleetctl_http_requests_total',
      help: 'HTTP requests answered, by door (admin, agent), endpoint and status',
      labelNames: ['door', 'endpoint', 'status'],
      registers,
    });
    this.duration = new Histogram({
      name: 'fleetctl_http_request_duration_seconds',
      help: 'Time from request start to answer, by door and endpoint',
      labelNames: ['door', 'endpoint'],
      buckets: BUCKETS,
      registers,
    });
    this.shed = new Counter({
      name: 'fleetctl_http_shed_total',
      help: 'Requests answered 503 at once because the door was at its in-flight bound',
      labelNames: ['door'],
      registers,
    });
    this.reenroll = new Counter({
      name: 'fleetctl_agent_node_invalid_total',
      help: 'Agent requests answered node_invalid (the agent re-enrolls): unknown node keys',
      registers,
    });
    this.dbErrors = new Counter({
      name: 'fleetctl_faults_total',
      help: 'Server faults (5xx and failed background runs) by where and kind (unavailable, no_space, busy, error)',
      labelNames: ['where', 'kind'],
      registers,
    });
    this.drops = new Counter({
      name: 'fleetctl_log_dropped_total',
      help: 'Log entries dropped on purpose, by sink and reason (counted and audited)',
      labelNames: ['sink', 'reason'],
      registers,
    });
    this.enrollRefusals = new Counter({
      name: 'fleetctl_agent_enroll_refused_total',
      help: 'Enrolls refused, by environment and reason (closed: enrolls off; expired: the window ended; secret; identifier; throttled: too many from one address)',
      labelNames: ['environment', 'reason'],
      registers,
    });
    this.checkpoints = new Histogram({
      name: 'fleetctl_sqlite_checkpoint_seconds',
      help: 'SQLite WAL checkpoints of this process, by mode (passive, restart, truncate); a restart or truncate holds every writer while it runs',
      labelNames: ['mode'],
      buckets: BUCKETS,
      registers,
    });
    this.writes = new Histogram({
      name: 'fleetctl_sqlite_write_seconds',
      help: "The agent door's SQLite write transactions of this process, by stage (turn: waiting for the writer thread; lock: for SQLite's write lock; statements; commit)",
      labelNames: ['stage'],
      buckets: BUCKETS,
      registers,
    });
    const sources = this.sources;
    new Gauge({
      name: 'fleetctl_agent_in_flight',
      help: 'Agent requests in progress',
      registers,
      collect() {
        this.set(sources.agentInFlight?.() ?? 0);
      },
    });
    new Gauge({
      name: 'fleetctl_checkins_pending',
      help: 'Nodes whose check-ins wait to be written',
      registers,
      collect() {
        this.set(sources.checkinsPending?.() ?? 0);
      },
    });
    new Gauge({
      name: 'fleetctl_log_followers',
      help: 'Log followers (fleetctl logs --follow) waiting for new lines',
      registers,
      collect() {
        this.set(sources.logFollowers?.() ?? 0);
      },
    });
    this.sinkDeliveredTotal = new Counter({
      name: 'fleetctl_sink_delivered_total',
      help: "Log entries a sink's destination acknowledged",
      labelNames: ['sink', 'environment'],
      registers,
    });
    this.sinkFailedTotal = new Counter({
      name: 'fleetctl_sink_failed_total',
      help: 'Failed delivery attempts of a sink (each retried)',
      labelNames: ['sink', 'environment'],
      registers,
    });
    this.sinkDelivery = new Histogram({
      name: 'fleetctl_sink_delivery_seconds',
      help: "Time from an entry's acknowledgement to the agent to its acknowledgement by the sink's destination",
      labelNames: ['sink', 'environment'],
      buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600],
      registers,
    });
    // Every process reads the same spool state: across --workers the figures are one, not a sum.
    const backlog = (name: string, help: string, pick: (b: { entries: number; bytes: number; oldestSeconds: number }) => number) =>
      new Gauge({
        name,
        help,
        labelNames: ['sink', 'environment'],
        registers,
        aggregator: 'max',
        collect() {
          this.reset();
          for (const b of sources.sinkBacklog?.() ?? []) this.set({ sink: b.sink, environment: b.environment }, pick(b));
        },
      });
    backlog('fleetctl_sink_backlog_entries', 'Log entries spooled for a sink and not yet delivered', (b) => b.entries);
    backlog('fleetctl_sink_backlog_bytes', 'Bytes of log entries spooled for a sink and not yet delivered', (b) => b.bytes);
    backlog('fleetctl_sink_oldest_seconds', 'Age of the oldest entry a sink has not delivered yet (0: none)', (b) => b.oldestSeconds);
  }

  request(door: 'admin' | 'agent', endpoint: string, status: number, seconds: number): void {
    this.requests.inc({ door, endpoint, status: String(status) });
    this.duration.observe({ door, endpoint }, seconds);
  }

  agentRequest(r: { endpoint: string; status: number; ms: number; shed?: boolean; invalid?: boolean }): void {
    this.request('agent', r.endpoint, r.status, r.ms / 1000);
    if (r.shed) this.shed.inc({ door: 'agent' });
    if (r.invalid) this.reenroll.inc();
  }

  /** Issue 27: labels are environment names (bounded by what admins create) and a fixed set of reasons. */
  enrollRefused(environment: string, reason: string): void {
    this.enrollRefusals.inc({ environment, reason });
  }

  adminShed(): void {
    this.shed.inc({ door: 'admin' });
  }

  /** A stage of an agent-door write transaction on SQLite (sqlite-writer.ts) and its milliseconds. */
  write(stage: 'turn' | 'lock' | 'statements' | 'commit', ms: number): void {
    this.writes.observe({ stage }, ms / 1000);
  }

  /** A WAL checkpoint of this process's SQLite checkpoint thread and its milliseconds. */
  checkpoint(mode: 'PASSIVE' | 'RESTART' | 'TRUNCATE', ms: number): void {
    this.checkpoints.observe({ mode: mode.toLowerCase() }, ms / 1000);
  }

  fault(where: string, kind: DbFault | 'error'): void {
    this.dbErrors.inc({ where, kind });
  }

  dropped(sink: string, reason: string, n: number): void {
    this.drops.inc({ sink, reason }, n);
  }

  sinkDelivered(sink: string, environment: string, n: number): void {
    this.sinkDeliveredTotal.inc({ sink, environment }, n);
  }

  sinkFailed(sink: string, environment: string): void {
    this.sinkFailedTotal.inc({ sink, environment });
  }

  sinkLatency(sink: string, environment: string, seconds: number): void {
    this.sinkDelivery.observe({ sink, environment }, seconds);
  }

  /** Set in a worker of --workers: every worker's metrics, aggregated by the primary (server/cluster.ts). */
  aggregate?: () => Promise<string>;

  text(): Promise<string> {
    return this.aggregate ? this.aggregate() : this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
