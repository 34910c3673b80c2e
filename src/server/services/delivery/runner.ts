// One sink's delivery loop (issue 28), shared by every destination type. In every server process
// a runner exists for each enabled sink it can deliver; it delivers only while its process holds
// the sink's lease (sink-state.ts), so one process per sink delivers at a time, across workers
// and replicas. Loop: read the next batch after the last one read, send it through the
// destination module, and read the next while it waits for its acknowledgement: up to the
// sink's in-flight limit of batches (batching.ts; 1 for destinations that must stay ordered) are
// out past the cursor at once. The cursor (with the counters, fenced by the lease) advances only
// over the contiguous run of acknowledged batches just after it: a batch acknowledged before an
// earlier one waits for it. At least once, no duplicate without a fault; after a crash, what was
// out past the cursor (at most the in-flight limit of batches) is sent again. A failed batch is
// retried alone (only the entries the module says failed, when it says) after 1 s doubling to
// 30 s, or the destination's Retry-After, while the batches after it go on and wait for it; a
// change of the sink's config retries at once with the new one. Every 5 s the backlog is held to
// its bounds: past --sink-backlog-size or --sink-backlog-age the cursor jumps over the oldest
// entries, counted and audited as dropped.
import type { Kysely } from 'kysely';
import type { Deps } from '../../context.js';
import type { DB, LogSinkRow } from '../../store/schema.js';
import type { Destination, Sink, SinkEntry } from './sink.js';
import { resolveConfig } from './sink-config.js';
import { batchLimits, gatherWait, inFlightOf } from './batching.js';
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
/**
 * Woken by new entries: wait this long to gather a batch. Under a steady stream of agents'
 * batches a sink then delivers about once a second, as log shippers flush (Fluent Bit's default
 * `Flush 1`): each delivery costs reads on a reader thread, the destination's I/O and a cursor
 * commit, and at 200 ms these deliveries cost two file sinks more CPU than the appends that
 * woke them (issue 31; npm run bench:append).
 */
const LINGER_MS = 1000;

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

/** One batch out past the cursor. */
interface Flight {
  rows: SpoolRowAt[];
  entries: SinkEntry[];
  /** The cursor just after its last row. */
  to: Cursor;
  state: 'sending' | 'retrying' | 'acknowledged' | 'ended';
  /** Spool ids of entries the destination refused for good. */
  rejected: number[];
  bytes: number;
  exports: number;
  ackAt: number;
  done: Promise<void>;
}

/** What a test sees of the batches out past the cursor: their spool ids and state. */
export interface FlightView {
  first: number;
  last: number;
  state: Flight['state'];
}

export class SinkRunner {
  private stopped = false;
  private holding = false;
  private leaseUntil = 0;
  private cursor?: Cursor;
  private opening?: { config: string; sink: Promise<Sink> };
  /** Batches out past the cursor, in spool order. */
  private window: Flight[] = [];
  /** Batches a bound passed over while they were out: they end by themselves; stop waits for them. */
  private readonly strays = new Set<Promise<void>>();
  private wakeUp?: (woke: boolean) => void;
  /** New entries came while the main loop waited: it gathers a little more before reading. */
  private dataCame = false;
  /**
   * The stream may hold entries past the last one read: set by every wake (new entries), a
   * cursor read again or moved by a bound, a read cut by a batch's bound, a fault, and the idle
   * time; cleared by a read that reached the stream's end. Without it the loop read the stream
   * again after every send and every acknowledgement, to find nothing.
   */
  private fresh = true;
  /** The main loop's wait, cut short when a batch's state changes. */
  private nudged?: (woke: boolean) => void;
  /** Counts the batches' changes of state, so that one between a look and the wait is not missed. */
  private changes = 0;
  private readonly sleepers = new Set<(woke: boolean) => void>();
  private abort = new AbortController();
  private lastBounds = 0;
  /** Bumped by a change of config: an attempt's failure under an older one is not the new config's. */
  private configGen = 0;
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

  /** The batches out past the cursor now (tests watch the order of acknowledgements). */
  get flights(): FlightView[] {
    return this.window.map((f) => ({ first: f.entries[0].id, last: f.entries[f.entries.length - 1].id, state: f.state }));
  }

  /** A newer row of the sink (same stream): a new config is used from the next attempt, at once. */
  update(sink: LogSinkRow): void {
    const changed = sink.config !== this.sink.config;
    // Disabled and enabled again before this runner or the delivery's tick saw it disabled: the
    // enable moved the cursor to the head and cleared the lease, in the same transaction as the
    // row. The cursor in hand is older; checked before the next read (run).
    if (sink.updated_at !== this.sink.updated_at) this.edited = this.fresh = true;
    this.sink = sink;
    if (changed) {
      this.configGen++;
      // Abort sends and backoffs in progress: retried at once with the new config.
      this.abort.abort(new Error('the sink was reconfigured'));
      this.abort = new AbortController();
      this.wake();
    }
  }

  /** New entries in the stream: an idle runner reads them (after gathering for LINGER_MS). */
  wake(): void {
    this.fresh = true;
    const w = this.wakeUp;
    this.wakeUp = undefined;
    if (w) this.dataCame = true;
    w?.(true);
  }

  /** A batch changed state: the main loop looks again (commit, read the next). */
  private nudge(): void {
    this.changes++;
    const n = this.nudged;
    this.nudged = undefined;
    n?.(true);
  }

  /** Stops after the sends in progress (aborted after `graceMs`), then gives the lease up. */
  async stop(graceMs: number): Promise<void> {
    this.stopped = true;
    for (const s of [...this.sleepers]) s(false);
    const t = setTimeout(() => this.abort.abort(new Stopped('shutting down')), graceMs);
    t.unref();
    await this.done;
    clearTimeout(t);
  }

  /**
   * Waits `ms`; true when cut short: by a reconfiguration, the lease lost or stop (always), by
   * new entries (`onData`: only an idle wait; a backoff is not cut short by agents sending more),
   * or by a batch's change of state since the main loop's look (`seen`: the count of changes then).
   */
  private sleep(ms: number, onData: boolean, seen?: number): Promise<boolean> {
    if (this.stopped) return Promise.resolve(false);
    if (seen !== undefined && seen !== this.changes) return Promise.resolve(true);
    return new Promise((resolve) => {
      const signal = this.abort.signal;
      const done = (woke: boolean) => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        if (this.wakeUp === done) this.wakeUp = undefined;
        if (this.nudged === done) this.nudged = undefined;
        this.sleepers.delete(done);
        resolve(woke);
      };
      const onAbort = () => done(true);
      const timer = setTimeout(() => done(false), ms);
      timer.unref();
      signal.addEventListener('abort', onAbort);
      this.sleepers.add(done);
      if (onData) this.wakeUp = done;
      if (seen !== undefined) this.nudged = done;
    });
  }

  private get db(): Kysely<DB> {
    return this.host.deps.db;
  }

  private async run(): Promise<void> {
    let backoff = RETRY_MIN_MS;
    while (!this.stopped) {
      try {
        // The lease lost: what was out is abandoned (its sends aborted) before the cursor is read again.
        if (!this.holding && this.window.length > 0) await this.drain();
        if (!(await this.hold())) {
          await this.sleep(LEASE_RENEW_MS, false);
          continue;
        }
        const seen = this.changes;
        await this.commit();
        await this.bounds();
        backoff = RETRY_MIN_MS;
        if (this.window.length >= inFlightOf(this.dest, this.sink.config)) {
          // Full: wait for a batch to be acknowledged (or to fail, or a reconfiguration).
          await this.sleep(IDLE_MS, false, seen);
          continue;
        }
        if (!this.fresh) {
          // Everything was read: wait for new entries (gathering a little more once they come),
          // a batch's change of state, or the idle time (then read anyway).
          this.dataCame = false;
          if (!(await this.sleep(IDLE_MS, true, seen))) this.fresh = true;
          if (this.dataCame) await this.sleep(LINGER_MS, false);
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
        const limits = batchLimits(this.dest, this.sink.config);
        const last = this.window[this.window.length - 1];
        // Cleared before the read: a wake while it runs sets it again.
        this.fresh = false;
        const { rows, more } = await readBatch(
          this.host.readDb,
          this.sink,
          last ? last.to.id : this.cursor!.id,
          limits.maxEntries,
          limits.maxBytes,
        );
        // A batch cut by a bound has more behind it: read on at once. One that reached the
        // stream's end waits for new entries (a wake), gathering for a moment when they come.
        if (more) this.fresh = true;
        const wait = rows.length === 0 ? IDLE_MS : gatherWait(rows, limits, Date.now());
        if (wait === 0) {
          this.launch(rows);
          continue;
        }
        // Nothing to send yet, or a batch not full and younger than the destination's gather
        // time: read again when new entries come (gathering a little more) or a batch is done;
        // rows held back are read again then.
        if (rows.length > 0) this.fresh = true;
        this.dataCame = false;
        await this.sleep(Math.min(wait, IDLE_MS), true, seen);
        if (this.dataCame) await this.sleep(LINGER_MS, false);
      } catch (e) {
        this.fresh = true;
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
    // Sends in progress end (acknowledged, or aborted after stop's grace); what the destination
    // acknowledged in order is written to the cursor, so a restart does not send it again.
    await this.drain();
    if (this.holding) await this.commit().catch(() => undefined);
    this.window = [];
    clearInterval(this.renewal);
    // A renewal in flight ends before the loop does: the store may be closed right after stop().
    await this.renewing;
    await this.opening?.sink.then((s) => s.close()).catch(() => undefined);
    this.opening = undefined;
    if (this.holding) await releaseLease(this.db, this.sink.id, this.host.owner).catch(() => undefined);
    this.holding = false;
  }

  /** Waits for every batch out to end; after the lease was lost, forgets them (the cursor is read again). */
  private async drain(): Promise<void> {
    await Promise.allSettled([...this.window.map((f) => f.done), ...this.strays]);
    if (!this.holding) this.window = [];
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
    this.window = [];
    this.fresh = true;
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
  private async bounds(): Promise<void> {
    const now = Date.now();
    if (now - this.lastBounds < BOUNDS_EVERY_MS) return;
    this.lastBounds = now;
    const from = this.cursor!;
    const { head, lastId } = await headOf(this.host.readDb, this.sink);
    const cutoff = new Date(this.host.deps.now().getTime() - this.host.limits.maxAgeMs).toISOString();
    const b = await boundCursor(this.host.readDb, this.sink, from, head, lastId, { maxBytes: this.host.limits.maxBytes, cutoff });
    if (!b || b.to.id <= from.id) return;
    if (!(await dropTo(this.db, this.sink.id, this.host.owner, from, b.to))) throw new LeaseLost('lease lost');
    this.cursor = b.to;
    this.fresh = true;
    // Batches wholly passed leave the window (a retrying one stops at its next attempt); one that
    // straddles the new cursor sends only what is past it.
    while (this.window.length > 0 && this.window[0].to.id <= b.to.id) {
      const f = this.window.shift()!;
      const stray = f.done.finally(() => this.strays.delete(stray));
      this.strays.add(stray);
    }
    const limit =
      b.reason === 'backlog_bytes'
        ? `--sink-backlog-size ${this.host.limits.maxBytes} bytes`
        : `--sink-backlog-age ${Math.round(this.host.limits.maxAgeMs / 1000)} s`;
    this.host.dropped(this.sink, b.to.seq - from.seq, b.reason, `the oldest undelivered entries went past ${limit}`);
  }

  /** The destination opened with the sink's current config (one open shared by the batches out). */
  private open(): Promise<Sink> {
    const config = this.sink.config;
    if (this.opening?.config === config) return this.opening.sink;
    const old = this.opening?.sink;
    const sink = (async () => {
      await old?.then((s) => s.close()).catch(() => undefined);
      return this.dest.open(resolveConfig(this.dest, config), { name: this.sink.name, sinkDir: this.host.deps.config.sinkDir });
    })();
    this.opening = { config, sink };
    sink.catch(() => {
      if (this.opening?.sink === sink) this.opening = undefined;
    });
    return sink;
  }

  /** Sends the next batch; the main loop goes on reading while it waits for its acknowledgement. */
  private launch(rows: SpoolRowAt[]): void {
    const f: Flight = {
      rows,
      entries: rows.map((r) => toEntry(r, (id) => this.host.envName(id))),
      to: cursorAfter(rows[rows.length - 1]),
      state: 'sending',
      rejected: [],
      bytes: 0,
      exports: 0,
      ackAt: 0,
      done: Promise.resolve(),
    };
    f.done = this.fly(f)
      .catch(() => {
        f.state = 'ended';
      })
      .finally(() => this.nudge());
    this.window.push(f);
  }

  /** Sends a batch until the destination acknowledged (or rejected) every entry of it. */
  private async fly(f: Flight): Promise<void> {
    const entries = f.entries;
    let pending = entries.map((_, i) => i);
    let backoff = RETRY_MIN_MS;
    while (pending.length > 0) {
      if (this.stopped) throw new Stopped('shutting down');
      let error: string;
      let wait: number | undefined;
      const gen = this.configGen;
      f.state = 'sending';
      try {
        const sink = await this.open();
        const batch = pending.map((i) => entries[i]);
        const res = await sink.send(batch, this.abort.signal);
        f.bytes += res.bytes;
        f.exports++;
        for (const r of res.rejected ?? []) if (batch[r.index]) f.rejected.push(batch[r.index].id);
        if (res.rejected?.length)
          this.host.dropped(this.sink, res.rejected.length, 'rejected', `the destination refused them: ${res.rejected[0].error}`);
        const retry = new Set((res.retry ?? []).map((r) => r.index));
        pending = pending.filter((_, k) => retry.has(k));
        if (pending.length === 0) break;
        error = `${retry.size} of ${batch.length} entries not taken: ${res.retry![0].error}`;
      } catch (e) {
        if (e instanceof Stopped || this.stopped) throw new Stopped('shutting down');
        if (e instanceof LeaseLost || !this.holding) throw new LeaseLost('lease lost');
        if (this.configGen !== gen) {
          backoff = RETRY_MIN_MS;
          continue;
        }
        error = (e as Error).message;
        wait = (e as { retryAfterMs?: number }).retryAfterMs;
      }
      f.state = 'retrying';
      this.nudge();
      this.host.failed(this.sink, error);
      await recordFailure(this.db, this.sink.id, this.host.owner, error, this.host.deps.now().toISOString()).catch((e) =>
        this.host.deps.faults.report(`log sink ${this.sink.name}`, e),
      );
      const reconfigured = await this.sleep(wait ?? backoff, false);
      backoff = reconfigured ? RETRY_MIN_MS : Math.min(RETRY_MAX_MS, backoff * 2);
      if (this.stopped) throw new Stopped('shutting down');
      if (!this.holding) throw new LeaseLost('lease lost');
      // A sink down for long: its bounds (the main loop's) may have passed over this batch, or part of it.
      pending = pending.filter((i) => entries[i].id > this.cursor!.id);
    }
    f.state = 'acknowledged';
    f.ackAt = Date.now();
  }

  /** Moves the cursor over the acknowledged batches just after it, in one write with their counters. */
  private async commit(): Promise<void> {
    let k = 0;
    while (k < this.window.length && this.window[k].state === 'acknowledged') k++;
    if (k === 0) return;
    const done = this.window.slice(0, k);
    const first = this.cursor!;
    const to = done[k - 1].to;
    if (to.id <= first.id) {
      this.window.splice(0, k);
      return;
    }
    // Entries a bound dropped meanwhile were counted there, not here.
    const delivered = done.map((f) => {
      const refused = new Set(f.rejected);
      return f.entries.filter((e) => e.id > first.id && !refused.has(e.id));
    });
    const retrying = this.window.some((f) => f.state === 'retrying');
    await advanceCursor(
      this.db,
      this.sink.id,
      this.host.owner,
      to,
      {
        delivered: delivered.reduce((n, d) => n + d.length, 0),
        rejected: done.reduce((n, f) => n + f.rejected.length, 0),
        bytes: done.reduce((n, f) => n + f.bytes, 0),
        exports: done.reduce((n, f) => n + f.exports, 0),
        at: this.host.deps.now().toISOString(),
      },
      retrying,
    );
    this.cursor = to;
    this.window.splice(0, k);
    done.forEach((f, i) => this.host.delivered(this.sink, delivered[i], f.ackAt));
  }
}
