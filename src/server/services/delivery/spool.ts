// The durable log spool (issue 28): an agent's log request is acknowledged only once its entries
// are committed to the log_spool table (migration 012). Appends of concurrent requests are
// group-committed: commits start at most every COMMIT_SPACING_MS, everything appended until a
// commit starts goes in its transaction, and while a transaction runs the next group gathers, so
// a busy agent door commits a few dozen times a second whatever its request rate. Sinks then
// drain the spool, each from its own cursor (runner.ts); `fleetctl logs` reads it too (issue 30).
//
// Order: on SQLite the database lock serialises writers. On PostgreSQL every append transaction
// first updates the (0, '*') row of log_streams, a row lock held until commit, and only then
// inserts (drawing ids): a later transaction draws its ids after the earlier one committed, so
// ids become visible in id order on every replica, and a reader that sees id N sees all below.
//
// Failure: a transaction that fails (database down, disk full) fails every request of its group,
// which the agent door answers 503: osquery keeps its batch and resends. More than
// MAX_PENDING_BYTES waiting for a commit in this process is also a 503 (SpoolBusy).
import { EventEmitter } from 'node:events';
import { CompiledQuery, type QueryResult } from 'kysely';
import { marks, rowsStatement } from '../../store/bound-rows.js';
import { runPlan, stepsOver, type StepPlan } from '../../store/write-steps.js';
import type { Deps } from '../../context.js';
import type { Dialect } from '../../store/dialect.js';

/** Bytes of entries waiting for a commit in one process before appends are refused (503). */
export const MAX_PENDING_BYTES = 64 * 1024 * 1024;
/** Rows per insert statement (one JSON parameter each): bounds a statement's memory. */
const CHUNK_ROWS = 2000;
const CHUNK_BYTES = 4 * 1024 * 1024;
/**
 * A group of at most this many bytes of lines may be committed on the event loop (its SQL is
 * tens of microseconds a kilobyte); a bigger one always goes to the writer thread.
 */
const WRITE_NOW_BYTES = 64 * 1024;
/**
 * Commits of one process start at most this often (issue 31). What costs is the commit, not its
 * lines: on the machines measured a line committed alone cost 2-5 times as much CPU as one in a
 * commit of eight, and appends arriving at random at 20,000 osquery-perf hosts' log rate cost
 * 0.71x with this spacing (`npm run bench:append`). So an append within this long of the last
 * commit's start waits for the rest of it, and what is appended meanwhile commits with it; an
 * append after a quiet spell commits on the next turn, as before. osquery never waits on a log
 * answer (it sends its buffer every logger_tls_period), so the wait is only latency, at most this
 * much added to a log request: a quarter of the agent door's p99 goal.
 */
export const COMMIT_SPACING_MS = 25;

export type SpoolLogType = 'result' | 'status' | 'query';

/** One entry to spool. */
export interface SpoolInput {
  environmentId: number;
  nodeId: number;
  hostIdentifier: string;
  hostname: string;
  logType: SpoolLogType;
  name?: string | null;
  severity?: number | null;
  /** Seconds since the epoch (the log's unixTime); undefined: the commit time. */
  time?: number;
  /** The entry's JSON text. */
  line: string;
}

/** A row as it is committed (what Spool.onCommit hooks receive). */
export interface SpooledRow extends SpoolInput {
  time: number;
  receivedAt: string;
  bytes: number;
}

/**
 * What an append transaction does besides spooling (issue 30's query reports), for one group:
 * statements that read under the commit-order lock, and, given their answers, statements
 * committed with the rows. Both are sent with the append's own steps, never as steps of their
 * own: with no reads the append is one step (one round trip to the writer thread), with reads two.
 */
export type CommitHook = (rows: readonly SpooledRow[]) => {
  reads: CompiledQuery[];
  writes(answers: QueryResult<unknown>[]): CompiledQuery[];
};

/** The spool cannot take more now (too much waiting for a commit): the agent is answered 503. */
export class SpoolBusy extends Error {}

/** The fields the spool keeps of an entry: its query name, status severity and own time. */
export function entryFields(entry: unknown): { name?: string; severity?: number; time?: number } {
  if (typeof entry !== 'object' || entry === null) return {};
  const e = entry as Record<string, unknown>;
  const out: { name?: string; severity?: number; time?: number } = {};
  if (typeof e.name === 'string') out.name = e.name.slice(0, 1024);
  const sev = Number(e.severity);
  if (e.severity !== undefined && e.severity !== '' && Number.isInteger(sev) && sev >= 0 && sev <= 9) out.severity = sev;
  const t = Number(e.unixTime);
  if (e.unixTime !== undefined && e.unixTime !== '' && Number.isFinite(t) && t > 0 && t < 1e11) out.time = Math.floor(t);
  return out;
}

/** A stream: the type stream is (0, type), an environment's is (env, type). */
const streamKey = (env: number, type: string) => `${env}\u0000${type}`;

interface Waiter {
  rows: SpoolInput[];
  bytes: number;
  resolve: () => void;
  reject: (e: unknown) => void;
}

export interface SpoolEvents {
  /** After a commit: the stream keys (`env\0type`, env 0 = type stream) that grew, and the highest id committed. */
  committed: [streams: Set<string>, maxId: number];
}

export class Spool extends EventEmitter<SpoolEvents> {
  private waiting: Waiter[] = [];
  private waitingBytes = 0;
  private scheduled = false;
  /** The spacing timer of the group waiting for its commit (undefined: next turn, or none). */
  private spacing?: NodeJS.Timeout;
  /** performance.now() when the last commit started. */
  private lastStart = -Infinity;
  private running?: Promise<void>;
  /** What each append transaction does besides spooling (issue 30's reports). */
  readonly onCommit: CommitHook[] = [];

  constructor(
    private readonly deps: Deps,
    /** COMMIT_SPACING_MS; npm run bench:append sets 0 to measure what the spacing saves. */
    private readonly spacingMs = COMMIT_SPACING_MS,
  ) {
    super();
    this.setMaxListeners(0);
  }

  /** Bytes waiting for a commit in this process. */
  get pendingBytes(): number {
    return this.waitingBytes;
  }

  /** Resolves once `rows` are committed; rejects when their transaction failed (or SpoolBusy). */
  append(rows: SpoolInput[]): Promise<void> {
    if (rows.length === 0) return Promise.resolve();
    let bytes = 0;
    for (const r of rows) bytes += r.line.length;
    // An empty spool queue always takes one request, so no request is too big to ever get in.
    if (this.waitingBytes > 0 && this.waitingBytes + bytes > MAX_PENDING_BYTES) {
      return Promise.reject(new SpoolBusy(`${this.waitingBytes} bytes of logs are waiting to be written`));
    }
    this.waitingBytes += bytes;
    return new Promise<void>((resolve, reject) => {
      this.waiting.push({ rows, bytes, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.running) return;
    this.scheduled = true;
    const wait = this.lastStart + this.spacingMs - performance.now();
    // At the earliest the next turn: every request handled in this one joins the group.
    if (wait > 0) this.spacing = setTimeout(() => this.start(), wait);
    else setImmediate(() => this.start());
  }

  private start(): void {
    if (!this.scheduled) return; // started already (drain)
    this.scheduled = false;
    clearTimeout(this.spacing);
    this.spacing = undefined;
    this.lastStart = performance.now();
    this.running = this.flush().finally(() => {
      this.running = undefined;
      if (this.waiting.length > 0) this.schedule();
    });
  }

  private async flush(): Promise<void> {
    const group = this.waiting;
    this.waiting = [];
    const bytes = group.reduce((n, w) => n + w.bytes, 0);
    try {
      const { streams, maxId } = await this.commit(group.flatMap((w) => w.rows));
      for (const w of group) w.resolve();
      this.emit('committed', streams, maxId);
    } catch (e) {
      for (const w of group) w.reject(e);
    } finally {
      this.waitingBytes -= bytes;
    }
  }

  /** Waits for what is waiting now to be committed (shutdown): a group waiting out the spacing commits at once. */
  async drain(): Promise<void> {
    while (this.running || this.scheduled || this.waiting.length > 0) {
      if (this.running) await this.running.catch(() => undefined);
      else if (this.spacing) this.start();
      else await new Promise((r) => setImmediate(r));
    }
  }

  /** One transaction: the stream heads (locked, in a fixed order), the rows, the newest id, the hooks. */
  private async commit(inputs: SpoolInput[]): Promise<{ streams: Set<string>; maxId: number }> {
    const receivedAt = this.deps.now().toISOString();
    const nowSeconds = Math.floor(Date.parse(receivedAt) / 1000);
    const rows = inputs.map((r) => ({ ...r, bytes: Buffer.byteLength(r.line, 'utf8') }));
    let lineBytes = 0;
    for (const r of rows) lineBytes += r.bytes;
    // What each stream grows by.
    const growth = new Map<string, { env: number; type: string; entries: number; bytes: number }>();
    const grow = (env: number, type: string, bytes: number) => {
      const k = streamKey(env, type);
      const g = growth.get(k) ?? { env, type, entries: 0, bytes: 0 };
      g.entries++;
      g.bytes += bytes;
      growth.set(k, g);
    };
    for (const r of rows) {
      grow(0, '*', r.bytes);
      grow(0, r.logType, r.bytes);
      grow(r.environmentId, r.logType, r.bytes);
    }
    // (0, '*') first: it is the commit-order lock; then a fixed order, so writers never deadlock.
    const order = [...growth.values()].sort((a, b) =>
      a.type === '*' ? -1 : b.type === '*' ? 1 : a.type < b.type ? -1 : a.type > b.type ? 1 : a.env - b.env,
    );
    const committed: SpooledRow[] = rows.map((r) => ({ ...r, time: r.time ?? nowSeconds, receivedAt }));
    // Each row's place in its two streams, as its distance from the stream's head once the group
    // is counted in (the heads upsert runs first in the transaction): the insert reads the heads
    // itself, so no answer has to come back before the rows are sent.
    const left = new Map([...growth].map(([k, g]) => [k, { entries: g.entries, bytes: g.bytes }]));
    const records = rows.map((r): Rec => {
      const t = left.get(streamKey(0, r.logType))!;
      const e = left.get(streamKey(r.environmentId, r.logType))!;
      const rec = {
        e: r.environmentId,
        n: r.nodeId,
        h: r.hostIdentifier,
        hn: r.hostname,
        t: r.logType,
        nm: r.name ?? null,
        sv: r.severity ?? null,
        tm: r.time ?? nowSeconds,
        ra: receivedAt,
        l: r.line,
        ts: t.entries,
        tp: t.bytes,
        es: e.entries,
        ep: e.bytes,
      };
      t.entries--;
      t.bytes -= r.bytes;
      e.entries--;
      e.bytes -= r.bytes;
      return rec;
    });
    // The rows in chunks of at most CHUNK_ROWS rows and CHUNK_BYTES of lines (one JSON parameter
    // each), serialised as each is sent.
    const chunks: Rec[][] = [];
    for (let i = 0; i < records.length;) {
      let j = i;
      let size = 0;
      while (j < records.length && j - i < CHUNK_ROWS && (size < CHUNK_BYTES || j === i)) size += records[j++].l.length;
      chunks.push(records.slice(i, j));
      i = j;
    }
    // The newest id (where a new sink's cursor starts: sink-state.ts, cursorAtHead): the highest
    // in the table, since this transaction holds the commit-order lock.
    const lastId = CompiledQuery.raw(
      "update log_streams set last_id = (select max(id) from log_spool) where environment_id = 0 and log_type = '*'",
      [],
    );
    const hooks = this.onCommit.map((hook) => hook(committed));
    const dialect = this.deps.dialect;
    const reads = hooks.flatMap((h) => h.reads);
    const streams = new Set([...growth.keys()].filter((k) => !k.endsWith('\u0000*')));
    // (0, '*') first in the heads upsert: a transaction draws no id before it holds the
    // commit-order lock; then a fixed order, so writers never deadlock. A group of one chunk
    // (nearly every group) is one step unless a hook reads (a differential result's stored
    // report): then the heads and the reads first, under the commit-order lock. A bigger group
    // sends a chunk a step, so only one chunk's JSON is in flight and in the writer thread at a
    // time (test/e2e/agent-door-ops.test.ts's 16 MB batches: a server of 450-480 MiB with the
    // whole group in one message, 370-410 MiB a chunk a step).
    const plan = function* (): StepPlan<{ streams: Set<string>; maxId: number }> {
      let unsent = [headsUpsert(dialect, order)];
      let answers: QueryResult<unknown>[] = [];
      if (reads.length > 0) {
        answers = (yield { statements: [...unsent, ...reads] }).slice(1);
        unsent = [];
      }
      // Each hook gets the answers of its own reads.
      const writes: CompiledQuery[] = [];
      for (let i = 0, at = 0; i < hooks.length; at += hooks[i].reads.length, i++)
        writes.push(...hooks[i].writes(answers.slice(at, at + hooks[i].reads.length)));
      let maxId = 0;
      for (const [k, chunk] of chunks.entries()) {
        const last = k === chunks.length - 1;
        const results = yield { statements: [...unsent, insertRows(dialect, chunk), ...(last ? [lastId, ...writes] : [])], last };
        for (const row of results[unsent.length].rows as { id: number }[]) maxId = Math.max(maxId, Number(row.id));
        unsent = [];
      }
      return { streams, maxId };
    };
    // SQLite: a small group at once on the event loop when the write lock is free (no thread
    // hand-off: sqlite-write-now.ts), else through the agent door's writer thread, so a big group
    // or a wait for the lock never holds the event loop (issue 31).
    const now = chunks.length === 1 && lineBytes <= WRITE_NOW_BYTES ? this.deps.writeNow?.(plan) : undefined;
    if (now) return now.value;
    return runPlan(this.deps.writeSteps ?? stepsOver(this.deps.db), plan);
  }
}

/** A row as the insert reads it; ts/tp and es/ep: entries and bytes from it to the head of its type and environment streams. */
type Rec = {
  e: number;
  n: number;
  h: string;
  hn: string;
  t: string;
  nm: string | null;
  sv: number | null;
  tm: number;
  ra: string;
  l: string;
  ts: number;
  tp: number;
  es: number;
  ep: number;
};

const COLUMNS =
  'environment_id, node_id, host_identifier, hostname, log_type, name, severity, time, received_at, line, tseq, tpos, eseq, epos';
const KEYS = ['e', 'n', 'h', 'hn', 't', 'nm', 'sv', 'tm', 'ra', 'l', 'ts', 'tp', 'es', 'ep'];
const PG_TYPES = ['int', 'int', 'text', 'text', 'text', 'text', 'int', 'bigint', 'text', 'text', 'bigint', 'bigint', 'bigint', 'bigint'];

/**
 * The stream heads' upsert, as SQL text (no query builder: it runs for every append): one row
 * per stream the group grows, in the given order.
 */
function headsUpsert(dialect: Dialect, order: { env: number; type: string; entries: number; bytes: number }[]): CompiledQuery {
  const mark = dialect === 'postgres' ? (i: number) => `$${i + 1}` : () => '?';
  const values = order.map((_, k) => `(${[0, 1, 2, 3].map((j) => mark(4 * k + j)).join(', ')}, 0)`).join(', ');
  return CompiledQuery.raw(
    `insert into log_streams (environment_id, log_type, entries, bytes, last_id) values ${values} ` +
      'on conflict (environment_id, log_type) do update set entries = log_streams.entries + excluded.entries, bytes = log_streams.bytes + excluded.bytes',
    order.flatMap((g) => [g.env, g.type, g.entries, g.bytes]),
  );
}

/**
 * The insert of a chunk of rows, per dialect, built once: the rows travel as one JSON parameter
 * (`col` reads a key of it); each row's sequence and byte position in its two streams are the
 * stream's head (upserted earlier in the transaction) less its distance from it.
 */
function insertSql(col: (key: string) => string, from: string): string {
  const head = (what: string, env: string) => `(select ${what} from log_streams where environment_id = ${env} and log_type = ${col('t')})`;
  const positions = [head('entries', '0'), head('bytes', '0'), head('entries', col('e')), head('bytes', col('e'))];
  const values = [...KEYS.slice(0, 10).map(col), ...positions.map((h, i) => `${h} - ${col(KEYS[10 + i]!)}`)];
  return `insert into log_spool (${COLUMNS}) select ${values.join(', ')} from ${from} returning id`;
}
const INSERT_SQL: Record<Dialect, string> = {
  postgres: insertSql((k) => `r.${k}`, `jsonb_to_recordset($1::jsonb) as r(${KEYS.map((k, i) => `${k} ${PG_TYPES[i]}`).join(', ')})`),
  sqlite: insertSql((k) => `(value ->> '$.${k}')`, 'json_each(?)'),
};

/**
 * The parameters of one row of the bound insert, in the order its SQL reads them: a row's type
 * and environment are read again for each stream head it subtracts from.
 */
const ROW_SLOTS = [...KEYS.slice(0, 10), 't', 'ts', 't', 'tp', 'e', 't', 'es', 'e', 't', 'ep'] as (keyof Rec)[];

/** The insert of `n` rows with their values bound (bound-rows.ts): the same columns and positions as insertSql's. */
function boundInsertSql(dialect: Dialect, n: number): string {
  const mark = marks(dialect);
  // Marks are drawn in ROW_SLOTS order.
  const typeHead = (what: string) => `(select ${what} from log_streams where environment_id = 0 and log_type = ${mark()}) - ${mark()}`;
  const envHead = (what: string) =>
    `(select ${what} from log_streams where environment_id = ${mark()} and log_type = ${mark()}) - ${mark()}`;
  const tuples: string[] = [];
  for (let k = 0; k < n; k++) {
    const cols = KEYS.slice(0, 10).map(() => mark());
    tuples.push(`(${[...cols, typeHead('entries'), typeHead('bytes'), envHead('entries'), envHead('bytes')].join(', ')})`);
  }
  return `insert into log_spool (${COLUMNS}) values ${tuples.join(', ')} returning id`;
}

/** The insert of a chunk of rows: bound values for an agent's few, one JSON parameter for more. */
const insertRows = rowsStatement<Rec>(boundInsertSql, INSERT_SQL, ROW_SLOTS);
