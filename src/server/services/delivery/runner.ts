// One sink's delivery loop (issue 28), shared by every destination type. In every server process
// a runner exists for each enabled sink it can deliver; it delivers only while its process holds
// the sink's lease (sink-state.ts), so one process per sink delivers at a time, across workers
// and replicas. Loop: read the next batch after the cursor, send it through the destination
// module, and advance the cursor (with the counters, fenced by the lease) only once the
// destination acknowledged every entry: at least once, no duplicate without a fault. A failed
// send is retried (only the entries the module says failed, when it says) after 1 s doubling to
// 30 s, or the destination's Retry-After; a change of the sink's config retries at once with the
// new one. Every 5 s the backlog is held to its bounds: past --sink-backlog-size or
// --sink-backlog-age the cursor jumps over the oldest entries, counted and audited as dropped.
import type { Kysely } from 'kysely';
import type { Deps } from '../../context.js';
import type { DB, LogSinkRow } from '../../store/schema.js';
import type { BatchLimits, Destination, Sink, SinkEntry } from './sink.js';
import { resolveConfig } from './sink-config.js';
import {
  LeaseLost,
  advanceCursor,
  boundCursor,
  cursorAfter,
  dropTo,
  headOf,
  readBatch,
  readSinkState,
  recordFailure,
  releaseLease,
  renewLease,
  takeDeadLease,
  takeLease,
  toEntry,
  type Cursor,
  type SpoolRowAt,
} from './sink-state.js';

export const LEASE_TTL_MS = 15_000;
const LEASE_RENEW_MS = 5_000;
const RETRY_MIN_MS = 1000;
const RETRY_MAX_MS = 30_000;
const BOUNDS_EVERY_MS = 5_000;
/** Idle: how long to sleep when nothing wakes the runner (the delivery's poll wakes it sooner). */
const IDLE_MS = 5_000;
/** Woken by new entries: wait this long to gather a batch. */
const LINGER_MS = 200;

/** What a runner needs from the delivery service that owns it. */
export interface RunnerHost {
  deps: Deps;
  /** Where batches are read (SQLite: the admin door's reader threads). */
  readDb: Kysely<DB>;
  /** This process's lease name. */
  owner: string;
  limits: { maxBytes: number; maxAgeMs: number };
  envName(id: number): string;
  /** Entries passed without delivery: counted, audited once a minute per sink. */
  dropped(sink: LogSinkRow, n: number, reason: string, detail: string): void;
  delivered(sink: LogSinkRow, entries: SinkEntry[], ackAt: number): void;
  failed(sink: LogSinkRow, error: string): void;
}

class Stopped extends Error {}

export class SinkRunner {
  private stopped = false;
  private holding = false;
  private leaseUntil = 0;
  private cursor?: Cursor;
  private opened?: { sink: Sink; config: string };
  private wakeUp?: (woke: boolean) => void;
  private readonly sleepers = new Set<(woke: boolean) => void>();
  private abort = new AbortController();
  private lastBounds = 0;
  /** The config changed since the attempt in progress began: its failure is not the new config's. */
  private reconfigured = false;
  /** The sink row was edited since this runner last read its cursor (see update). */
  private edited = false;
  private renewal?: NodeJS.Timeout;
  private renewing?: Promise<void>;
  readonly done: Promise<void>;

  constructor(
    private readonly host: RunnerHost,
    public sink: LogSinkRow,
    private readonly dest: Destination,
  ) {
    this.done = this.run().finally(() => (this.finished = true));
  }

  /** The loop ended by itself (its sink was disabled or moved): the delivery starts a new one if needed. */
  finished = false;

  /** The entries this runner knows it handled in its stream (for wake-ups and metrics). */
  get cursorSeq(): number | undefined {
    return this.holding ? this.cursor?.seq : undefined;
  }

  get delivering(): boolean {
    return this.holding;
  }

  /** A newer row of the sink (same stream): a new config is used from the next attempt, at once. */
  update(sink: LogSinkRow): void {
    const changed = sink.config !== this.sink.config;
    // Disabled and enabled again before this runner or the delivery's tick saw it disabled: the
    // enable moved the cursor to the head and cleared the lease, in the same transaction as the
    // row. The cursor in hand is older; checked before the next read (run).
    if (sink.updated_at !== this.sink.updated_at) this.edited = true;
    this.sink = sink;
    if (changed) {
      this.reconfigured = true;
      // Abort a send or a backoff in progress: retried at once with the new config.
      this.abort.abort(new Error('the sink was reconfigured'));
      this.abort = new AbortController();
      this.wake();
    }
  }

  /** New entries in the stream: an idle runner reads them (after gathering for LINGER_MS). */
  wake(): void {
    const w = this.wakeUp;
    this.wakeUp = undefined;
    w?.(true);
  }

  /** Stops after the send in progress (aborted after `graceMs`), then gives the lease up. */
  async stop(graceMs: number): Promise<void> {
    this.stopped = true;
    for (const s of [...this.sleepers]) s(false);
    const t = setTimeout(() => this.abort.abort(new Stopped('shutting down')), graceMs);
    t.unref();
    await this.done;
    clearTimeout(t);
  }

  /**
   * Waits `ms`; true when cut short: by a reconfiguration, the lease lost or stop (always), or by
   * new entries (only an idle wait: a backoff is not cut short by agents sending more).
   */
  private sleep(ms: number, onData: boolean): Promise<boolean> {
    if (this.stopped) return Promise.resolve(false);
    return new Promise((resolve) => {
      const signal = this.abort.signal;
      const done = (woke: boolean) => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        if (this.wakeUp === done) this.wakeUp = undefined;
        this.sleepers.delete(done);
        resolve(woke);
      };
      const onAbort = () => done(true);
      const timer = setTimeout(() => done(false), ms);
      timer.unref();
      signal.addEventListener('abort', onAbort);
      this.sleepers.add(done);
      if (onData) this.wakeUp = done;
    });
  }

  private get db(): Kysely<DB> {
    return this.host.deps.db;
  }

  private async run(): Promise<void> {
    let backoff = RETRY_MIN_MS;
    while (!this.stopped) {
      try {
        if (!(await this.hold())) {
          await this.sleep(LEASE_RENEW_MS, false);
          continue;
        }
        // The sink as stored now: disabled or moved to another stream since the last tick, this
        // runner stops before reading more (the delivery's tick starts what is needed).
        const now = await this.host.readDb.selectFrom('log_sinks').selectAll().where('id', '=', this.sink.id).executeTakeFirst();
        if (
          !now ||
          !now.enabled ||
          now.source !== this.sink.source ||
          now.environment_id !== this.sink.environment_id ||
          now.type !== this.sink.type
        )
          break;
        this.update(now);
        if (this.edited) {
          this.edited = false;
          const state = await readSinkState(this.db, this.sink.id);
          if (state?.lease_owner !== this.host.owner) {
            // Taken again, the new cursor with it (hold).
            this.let();
            continue;
          }
        }
        await this.bounds();
        const limits = batchLimits(this.dest, this.sink.config);
        const rows = await readBatch(this.host.readDb, this.sink, this.cursor!.id, limits.maxEntries, limits.maxBytes);
        if (rows.length === 0) {
          if (await this.sleep(IDLE_MS, true)) await this.sleep(LINGER_MS, false);
          continue;
        }
        const wait = gatherWait(rows, limits, Date.now());
        if (wait > 0) {
          // Not full and younger than the destination's gather time: read again (woken by new entries).
          await this.sleep(Math.min(wait, IDLE_MS), true);
          continue;
        }
        await this.deliver(rows);
        backoff = RETRY_MIN_MS;
      } catch (e) {
        if (e instanceof Stopped || this.stopped) break;
        if (e instanceof LeaseLost) {
          this.let();
          continue;
        }
        // The database (reading the spool, writing the cursor): reported, retried with a backoff.
        this.host.deps.faults.report(`log sink ${this.sink.name}`, e);
        await this.sleep(backoff, false);
        backoff = Math.min(RETRY_MAX_MS, backoff * 2);
      }
    }
    clearInterval(this.renewal);
    // A renewal in flight ends before the loop does: the store may be closed right after stop().
    await this.renewing;
    await this.opened?.sink.close().catch(() => undefined);
    this.opened = undefined;
    if (this.holding) await releaseLease(this.db, this.sink.id, this.host.owner).catch(() => undefined);
    this.holding = false;
  }

  /** The lease lost: stop delivering until it is taken again (the cursor is read again then). */
  private let(): void {
    this.holding = false;
    this.cursor = undefined;
    clearInterval(this.renewal);
    this.abort.abort(new LeaseLost('lease lost'));
    this.abort = new AbortController();
  }

  /** Whether this process holds the sink's lease (taking it when free), with the cursor read. */
  private async hold(): Promise<boolean> {
    if (this.holding) return true;
    const taken =
      (await takeLease(this.db, this.sink.id, this.host.owner, Date.now(), LEASE_TTL_MS)) ||
      // A holder on this machine that died (kill -9): no need to wait for its lease to expire.
      (await takeDeadLease(this.db, this.sink.id, this.host.owner, Date.now(), LEASE_TTL_MS));
    if (!taken) return false;
    const state = await readSinkState(this.db, this.sink.id);
    if (!state) return false;
    this.cursor = { id: Number(state.cursor_id), seq: Number(state.cursor_seq), pos: Number(state.cursor_pos) };
    this.holding = true;
    this.leaseUntil = Date.now() + LEASE_TTL_MS;
    this.lastBounds = 0;
    // Renewed in the background: a long send or backoff must not let it expire.
    this.renewal = setInterval(() => {
      if (this.renewing) return;
      // Only its own: a lease cleared by a cursor reset must be taken again (reading the new cursor).
      this.renewing = renewLease(this.db, this.sink.id, this.host.owner, Date.now(), LEASE_TTL_MS)
        .then(
          (ok) => {
            if (ok) this.leaseUntil = Date.now() + LEASE_TTL_MS;
            else if (this.holding) this.let();
          },
          (e) => {
            this.host.deps.faults.report(`log sink ${this.sink.name} lease`, e);
            if (Date.now() > this.leaseUntil && this.holding) this.let();
          },
        )
        .finally(() => (this.renewing = undefined));
    }, LEASE_RENEW_MS);
    this.renewal.unref();
    return true;
  }

  /** Holds the backlog to its bounds (every 5 s): the oldest entries past them are dropped. */
  private async bounds(force = false): Promise<void> {
    const now = Date.now();
    if (!force && now - this.lastBounds < BOUNDS_EVERY_MS) return;
    this.lastBounds = now;
    const from = this.cursor!;
    const { head, lastId } = await headOf(this.host.readDb, this.sink);
    const cutoff = new Date(this.host.deps.now().getTime() - this.host.limits.maxAgeMs).toISOString();
    const b = await boundCursor(this.host.readDb, this.sink, from, head, lastId, { maxBytes: this.host.limits.maxBytes, cutoff });
    if (!b || b.to.id <= from.id) return;
    if (!(await dropTo(this.db, this.sink.id, this.host.owner, from, b.to))) throw new LeaseLost('lease lost');
    this.cursor = b.to;
    const limit =
      b.reason === 'backlog_bytes'
        ? `--sink-backlog-size ${this.host.limits.maxBytes} bytes`
        : `--sink-backlog-age ${Math.round(this.host.limits.maxAgeMs / 1000)} s`;
    this.host.dropped(this.sink, b.to.seq - from.seq, b.reason, `the oldest undelivered entries went past ${limit}`);
  }

  private async open(): Promise<Sink> {
    const config = this.sink.config;
    if (this.opened?.config === config) return this.opened.sink;
    await this.opened?.sink.close().catch(() => undefined);
    this.opened = undefined;
    const sink = await this.dest.open(resolveConfig(this.dest, config), { name: this.sink.name, sinkDir: this.host.deps.config.sinkDir });
    this.opened = { sink, config };
    return sink;
  }

  /** Sends a batch until the destination acknowledged (or rejected) every entry, then moves the cursor. */
  private async deliver(rows: SpoolRowAt[]): Promise<void> {
    const entries = rows.map((r) => toEntry(r, (id) => this.host.envName(id)));
    let pending = entries.map((_, i) => i);
    let backoff = RETRY_MIN_MS;
    let bytes = 0;
    let exports = 0;
    const rejected: number[] = [];
    while (pending.length > 0) {
      if (this.stopped) throw new Stopped('shutting down');
      let error: string;
      let wait: number | undefined;
      this.reconfigured = false;
      try {
        const sink = await this.open();
        const batch = pending.map((i) => entries[i]);
        const res = await sink.send(batch, this.abort.signal);
        bytes += res.bytes;
        exports++;
        for (const r of res.rejected ?? []) if (batch[r.index]) rejected.push(batch[r.index].id);
        if (res.rejected?.length)
          this.host.dropped(this.sink, res.rejected.length, 'rejected', `the destination refused them: ${res.rejected[0].error}`);
        const retry = new Set((res.retry ?? []).map((r) => r.index));
        pending = pending.filter((_, k) => retry.has(k));
        if (pending.length === 0) break;
        error = `${retry.size} of ${batch.length} entries not taken: ${res.retry![0].error}`;
      } catch (e) {
        if (e instanceof Stopped || this.stopped) throw new Stopped('shutting down');
        if (e instanceof LeaseLost || !this.holding) throw new LeaseLost('lease lost');
        if (this.reconfigured) {
          backoff = RETRY_MIN_MS;
          continue;
        }
        error = (e as Error).message;
        wait = (e as { retryAfterMs?: number }).retryAfterMs;
      }
      this.host.failed(this.sink, error);
      await recordFailure(this.db, this.sink.id, this.host.owner, error, this.host.deps.now().toISOString()).catch((e) =>
        this.host.deps.faults.report(`log sink ${this.sink.name}`, e),
      );
      const reconfigured = await this.sleep(wait ?? backoff, false);
      backoff = reconfigured ? RETRY_MIN_MS : Math.min(RETRY_MAX_MS, backoff * 2);
      if (this.stopped) throw new Stopped('shutting down');
      if (!this.holding) throw new LeaseLost('lease lost');
      // A sink down for long: its bounds may pass over this very batch.
      await this.bounds();
      if (entries[entries.length - 1].id <= this.cursor!.id) return;
      pending = pending.filter((i) => entries[i].id > this.cursor!.id);
    }
    const to = cursorAfter(rows[rows.length - 1]);
    if (to.id <= this.cursor!.id) return;
    const first = this.cursor!;
    // Entries a bound dropped meanwhile were counted there, not here.
    const skipped = entries.filter((e) => e.id <= first.id).length;
    const delivered = entries.length - skipped - rejected.length;
    await advanceCursor(this.db, this.sink.id, this.host.owner, to, {
      delivered,
      rejected: rejected.length,
      bytes,
      exports,
      at: this.host.deps.now().toISOString(),
    });
    this.cursor = to;
    const refused = new Set(rejected);
    this.host.delivered(
      this.sink,
      entries.filter((e) => e.id > first.id && !refused.has(e.id)),
      Date.now(),
    );
  }
}

/** A destination's batch limits for a sink's config (a config that does not parse: the defaults of {}). */
export function batchLimits(dest: Destination, configText: string): BatchLimits {
  if (!dest.batchOf) return dest.batch;
  let config: Record<string, unknown> = {};
  try {
    const v = JSON.parse(configText || '{}') as unknown;
    if (typeof v === 'object' && v !== null && !Array.isArray(v)) config = v as Record<string, unknown>;
  } catch {
    /* the defaults */
  }
  return dest.batchOf(config);
}

/** How long a batch should still gather (ms): 0 when it is full or its oldest entry is old enough. */
export function gatherWait(rows: SpoolRowAt[], limits: BatchLimits, now: number): number {
  if (!limits.gatherMs) return 0;
  const bytes = rows.reduce((n, r) => n + r.row.line.length, 0);
  if (rows.length >= limits.maxEntries || bytes >= limits.maxBytes * 0.9) return 0;
  return Math.max(0, Date.parse(rows[0].row.received_at) + limits.gatherMs - now);
}
