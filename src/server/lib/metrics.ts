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
  /** Bytes queued per sink name. */
  sinkQueueBytes?: () => Map<string, number>;
  /** Check-ins waiting to be written. */
  checkinsPending?: () => number;
}

const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export class Metrics {
  readonly registry = new Registry();
  private readonly requests: Counter<'door' | 'endpoint' | 'status'>;
  private readonly duration: Histogram<'door' | 'endpoint'>;
  private readonly shed: Counter<'door'>;
  private readonly reenroll: Counter;
  private readonly dbErrors: Counter<'where' | 'kind'>;
  private readonly drops: Counter<'sink' | 'reason'>;
  readonly sources: MetricsSources = {};

  constructor() {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: 'fleetctl_' });
    this.requests = new Counter({ name: 'fleetctl_http_requests_total', help: 'HTTP requests answered, by door (admin, agent), endpoint and status', labelNames: ['door', 'endpoint', 'status'], registers });
    this.duration = new Histogram({ name: 'fleetctl_http_request_duration_seconds', help: 'Time from request start to answer, by door and endpoint', labelNames: ['door', 'endpoint'], buckets: BUCKETS, registers });
    this.shed = new Counter({ name: 'fleetctl_http_shed_total', help: 'Requests answered 503 at once because the door was at its in-flight bound', labelNames: ['door'], registers });
    this.reenroll = new Counter({ name: 'fleetctl_agent_node_invalid_total', help: 'Agent requests answered node_invalid (the agent re-enrolls): unknown node keys', registers });
    this.dbErrors = new Counter({ name: 'fleetctl_faults_total', help: 'Server faults (5xx and failed background runs) by where and kind (unavailable, no_space, busy, error)', labelNames: ['where', 'kind'], registers });
    this.drops = new Counter({ name: 'fleetctl_log_dropped_total', help: 'Log entries dropped on purpose, by sink and reason (counted and audited)', labelNames: ['sink', 'reason'], registers });
    const sources = this.sources;
    new Gauge({ name: 'fleetctl_agent_in_flight', help: 'Agent requests in progress', registers, collect() { this.set(sources.agentInFlight?.() ?? 0); } });
    new Gauge({ name: 'fleetctl_checkins_pending', help: 'Nodes whose check-ins wait to be written', registers, collect() { this.set(sources.checkinsPending?.() ?? 0); } });
    new Gauge({
      name: 'fleetctl_log_queue_bytes', help: 'Bytes of log entries queued for delivery, by sink', labelNames: ['sink'], registers,
      collect() {
        this.reset();
        for (const [sink, bytes] of sources.sinkQueueBytes?.() ?? []) this.set({ sink }, bytes);
      },
    });
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

  adminShed(): void {
    this.shed.inc({ door: 'admin' });
  }

  fault(where: string, kind: DbFault | 'error'): void {
    this.dbErrors.inc({ where, kind });
  }

  dropped(sink: string, reason: string, n: number): void {
    this.drops.inc({ sink, reason }, n);
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
