// The one sink interface (issue 28): what a destination module is given and what it answers.
// The runner (runner.ts) owns everything shared: reading batches from the spool after the sink's
// cursor, retries with backoff, the lease, bounds, counters and metrics. A module only turns a
// batch into its wire format, sends it, and says what the destination acknowledged. One module
// per destination type under destinations/, listed in destinations/index.ts.
import type { TObject } from '@sinclair/typebox';

/** One spooled log entry, as a destination receives it. */
export interface SinkEntry {
  /** Its id in the spool (commit order). */
  id: number;
  /** The environment's name ('' when it was deleted since). */
  environment: string;
  environmentId: number;
  nodeId: number;
  /** The node's uuid: osquery's host identifier at enroll. */
  hostIdentifier: string;
  hostname: string;
  logType: 'result' | 'status' | 'query';
  /** The query a result (or live answer) is of. */
  name?: string;
  /** Status entries: osquery's severity (0 info, 1 warning, 2 error, 3 fatal). */
  severity?: number;
  /** Seconds since the epoch: the log's own time (unixTime), else when it was received. */
  time: number;
  /** When the server acknowledged it to the agent (RFC 3339). */
  receivedAt: string;
  /** The entry's JSON text, exactly as the agent sent it. */
  line: string;
  /** UTF-8 bytes of `line`. */
  bytes: number;
}

/** What a send achieved. Entries in neither list were acknowledged by the destination. */
export interface SendResult {
  /** Bytes put on the wire (the sink's bytes_sent). */
  bytes: number;
  /** What the destination answered, on one line (`fleetctl sinks test` prints it). */
  answer: string;
  /** Entries (by index in the batch) the destination did not take now: retried alone, after a backoff. */
  retry?: { index: number; error: string }[];
  /** Entries it refused for good (an oversized record, a document it cannot index): counted, audited, passed. */
  rejected?: { index: number; error: string }[];
}

/**
 * A send that failed as a whole. Any other error thrown by a module is retryable too: a dead or
 * slow destination is retried until it comes back or the sink's backlog bound drops the oldest.
 */
export class SinkError extends Error {
  constructor(
    message: string,
    /** The destination asked to wait this long (Retry-After), instead of the backoff. */
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

export interface Sink {
  /** Sends one batch; resolves when the destination has acknowledged it (but for `retry`/`rejected`). */
  send(batch: SinkEntry[], signal: AbortSignal): Promise<SendResult>;
  close(): Promise<void>;
}

export interface SinkContext {
  /** The sink's name, for messages. */
  name: string;
  /** The one directory file sinks write in (--sink-dir). */
  sinkDir: string;
}

/** A config problem found by a module's own check: 400 naming the field. */
export interface ConfigProblem {
  /** The key's path under config, e.g. `url` or `brokers[1]`. */
  field: string;
  message: string;
}

/**
 * How a destination's batches are cut: at most `maxEntries` entries and `maxBytes` bytes (of
 * `line`). With `gatherMs`, a batch that is not full waits until its oldest entry is that old
 * before it is sent (s3: one object per `max_object_seconds` instead of one per moment).
 */
export interface BatchLimits {
  maxEntries: number;
  maxBytes: number;
  gatherMs?: number;
}

export interface Destination<C = Record<string, unknown>> {
  type: string;
  /** The config's keys (TypeBox, additionalProperties false). Secret keys are plain strings here. */
  schema: TObject;
  /** Secret keys as dotted paths (`token`, `sasl.password`, `headers.*`): redacted on every read, `<key>_env` / `<key>_file` accepted. */
  secrets: readonly string[];
  /** Checks beyond the schema (URLs, ports, paths), on the config as stored (secret values may be placeholders). */
  check?(config: C, ctx: { sinkDir: string }): ConfigProblem | undefined;
  /** One batch at most this many entries and bytes (of `line`). */
  batch: BatchLimits;
  /** Limits that depend on the sink's config (s3: its object size and age), instead of `batch`. */
  batchOf?(config: C): BatchLimits;
  /**
   * The most batches of a sink this destination takes at once (batching.ts: the runner's default
   * is 4, a sink's `in_flight` may change it within this). 1 for a destination that must get its
   * entries in spool order or that can take one request at a time; say why in the module.
   */
  maxInFlight?(config: C): number;
  /** Written by one process of a machine only (stdout: workers share the terminal or pipe). */
  perHost?: boolean;
  /** Opens the destination with secrets resolved. Import heavy client libraries here, not at the top. */
  open(config: C, ctx: SinkContext): Promise<Sink>;
  /** The docs' table row: the wire format, and what it was verified against. */
  doc: { wire: string; verified: string };
}

/**
 * The envelope the file, http and stdout sinks write: one JSON object per entry with where it
 * came from, built by concatenation (the entry's text is never parsed again). Keys in this order.
 */
export function envelope(e: SinkEntry): string {
  const name = e.logType !== 'status' && e.name !== undefined ? `"name":${JSON.stringify(e.name)},` : '';
  return `{"environment":${JSON.stringify(e.environment)},"node_uuid":${JSON.stringify(e.hostIdentifier)},"hostname":${JSON.stringify(e.hostname)},"log_type":${JSON.stringify(e.logType)},${name}"received_at":${JSON.stringify(e.receivedAt)},"entry":${e.line}}`;
}
