// Each sink's place in the spool (issue 28): its cursor, the lease of the one process delivering
// it, its counters and last error (the sink_state table, migration 012), and the reads behind
// them. A sink's stream is (environment_id, source): a global sink (0) reads the type stream
// (every environment's entries of that log type), an environment's sink only its own. The
// cursor is the last spool id handled, with the entries and bytes of the stream handled up to
// it, so a backlog is the stream's head minus the cursor: no scan, however large.
import { sql, type Kysely } from 'kysely';
import type { DB, LogSinkRow, LogSpoolRow, SinkStateRow } from '../../store/schema.js';
import type { SinkEntry } from './sink.js';

export type SinkRef = Pick<LogSinkRow, 'id' | 'environment_id' | 'source'>;

export interface Cursor {
  id: number;
  seq: number;
  pos: number;
}

export interface StreamHead {
  entries: number;
  bytes: number;
}

/** A spool row with the sink-stream position that matters to one sink. */
export interface SpoolRowAt {
  row: LogSpoolRow;
  seq: number;
  pos: number;
}

/** The spool rows of one sink's stream. */
function streamRows(db: Kysely<DB>, sink: SinkRef) {
  const q = db.selectFrom('log_spool').selectAll().where('log_type', '=', sink.source);
  return sink.environment_id === 0 ? q : q.where('environment_id', '=', sink.environment_id);
}

/** The stream position columns a sink reads: type stream for global sinks, else environment stream. */
const cols = (sink: SinkRef) =>
  sink.environment_id === 0 ? ({ seq: 'tseq', pos: 'tpos' } as const) : ({ seq: 'eseq', pos: 'epos' } as const);

/** The head of a sink's stream now, and the newest spool id, read in one statement (one snapshot). */
export async function headOf(db: Kysely<DB>, sink: SinkRef): Promise<{ head: StreamHead; lastId: number }> {
  const rows = await db
    .selectFrom('log_streams')
    .select(['environment_id', 'log_type', 'entries', 'bytes', 'last_id'])
    .where((eb) =>
      eb.or([
        eb.and([eb('environment_id', '=', 0), eb('log_type', '=', '*')]),
        eb.and([eb('environment_id', '=', sink.environment_id), eb('log_type', '=', sink.source)]),
      ]),
    )
    .execute();
  const all = rows.find((r) => r.log_type === '*');
  const mine = rows.find((r) => r.log_type === sink.source);
  return { head: { entries: Number(mine?.entries ?? 0), bytes: Number(mine?.bytes ?? 0) }, lastId: Number(all?.last_id ?? 0) };
}

/** A cursor at the head of the sink's stream: what is spooled from now on is its. */
export async function cursorAtHead(db: Kysely<DB>, sink: SinkRef): Promise<Cursor> {
  const { head, lastId } = await headOf(db, sink);
  return { id: lastId, seq: head.entries, pos: head.bytes };
}

/** The state row of a new sink, its cursor at the head (in the creating transaction). */
export async function createSinkState(db: Kysely<DB>, sink: SinkRef): Promise<void> {
  const c = await cursorAtHead(db, sink);
  await db.insertInto('sink_state').values({ sink_id: sink.id, cursor_id: c.id, cursor_seq: c.seq, cursor_pos: c.pos }).execute();
}

/**
 * Moves a sink's cursor to the head (enabled again, or its source changed): what came meanwhile
 * is not its. The lease is cleared with it, so a process still delivering from the old cursor
 * cannot move it (its next cursor write finds the lease gone) and reads the new one.
 */
export async function resetSinkCursor(db: Kysely<DB>, sink: SinkRef): Promise<void> {
  const c = await cursorAtHead(db, sink);
  const done = await db
    .updateTable('sink_state')
    .set({ cursor_id: c.id, cursor_seq: c.seq, cursor_pos: c.pos, retrying_since: '', lease_owner: '', lease_until: 0 })
    .where('sink_id', '=', sink.id)
    .executeTakeFirst();
  if (Number(done.numUpdatedRows) === 0)
    await db.insertInto('sink_state').values({ sink_id: sink.id, cursor_id: c.id, cursor_seq: c.seq, cursor_pos: c.pos }).execute();
}

/** A state row for a sink that has none (stored by an older version or the demo seed), at the head. */
export async function ensureSinkState(db: Kysely<DB>, sink: SinkRef): Promise<void> {
  const c = await cursorAtHead(db, sink);
  await db
    .insertInto('sink_state')
    .values({ sink_id: sink.id, cursor_id: c.id, cursor_seq: c.seq, cursor_pos: c.pos })
    .onConflict((oc) => oc.column('sink_id').doNothing())
    .execute();
}

export function readSinkState(db: Kysely<DB>, sinkId: number): Promise<SinkStateRow | undefined> {
  return db.selectFrom('sink_state').selectAll().where('sink_id', '=', sinkId).executeTakeFirst();
}

/** Takes (or keeps) the lease of a sink when it is free, expired or already this process's. */
export async function takeLease(db: Kysely<DB>, sinkId: number, owner: string, nowMs: number, ttlMs: number): Promise<boolean> {
  const r = await db
    .updateTable('sink_state')
    .set({ lease_owner: owner, lease_until: nowMs + ttlMs })
    .where('sink_id', '=', sinkId)
    .where((eb) => eb.or([eb('lease_owner', '=', owner), eb('lease_owner', '=', ''), eb('lease_until', '<', nowMs)]))
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/**
 * Takes the lease from a holder on this machine whose process is gone (a kill -9, a crash):
 * without waiting for it to expire. Lease names are host:pid:random (delivery.ts).
 */
export async function takeDeadLease(db: Kysely<DB>, sinkId: number, owner: string, nowMs: number, ttlMs: number): Promise<boolean> {
  const st = await db.selectFrom('sink_state').select(['lease_owner', 'lease_until']).where('sink_id', '=', sinkId).executeTakeFirst();
  const held = st?.lease_owner ?? '';
  const [host, pid] = held.split(':');
  if (!held || host !== owner.split(':')[0] || !pid || Number(pid) === process.pid || isAlive(Number(pid))) return false;
  const r = await db
    .updateTable('sink_state')
    .set({ lease_owner: owner, lease_until: nowMs + ttlMs })
    .where('sink_id', '=', sinkId)
    .where('lease_owner', '=', held)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Renews a lease this process holds; false when it is no longer its own (expired and taken, or cleared by a reset). */
export async function renewLease(db: Kysely<DB>, sinkId: number, owner: string, nowMs: number, ttlMs: number): Promise<boolean> {
  const r = await db
    .updateTable('sink_state')
    .set({ lease_until: nowMs + ttlMs })
    .where('sink_id', '=', sinkId)
    .where('lease_owner', '=', owner)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** Gives the lease up (shutdown, sink disabled): another process may take it at once. */
export async function releaseLease(db: Kysely<DB>, sinkId: number, owner: string): Promise<void> {
  await db
    .updateTable('sink_state')
    .set({ lease_owner: '', lease_until: 0 })
    .where('sink_id', '=', sinkId)
    .where('lease_owner', '=', owner)
    .execute();
}

/** Thrown when a cursor write finds the lease with another process: this one stops delivering. */
export class LeaseLost extends Error {}

/**
 * Moves the cursor past an acknowledged batch, with the counters, in one transaction; only
 * while this process holds the lease (else LeaseLost: nothing is written).
 */
export async function advanceCursor(
  db: Kysely<DB>,
  sinkId: number,
  owner: string,
  to: Cursor,
  c: { delivered: number; rejected: number; bytes: number; exports: number; at: string },
  /** A later batch is still being retried: the sink stays "retrying since". */
  retrying = false,
): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const r = await trx
      .updateTable('sink_state')
      .set((eb) => ({
        cursor_id: to.id,
        cursor_seq: to.seq,
        cursor_pos: to.pos,
        delivered: eb('delivered', '+', c.delivered),
        rejected: eb('rejected', '+', c.rejected),
        ...(c.delivered > 0 ? { last_success_at: c.at } : {}),
        ...(retrying ? {} : { retrying_since: '' }),
      }))
      .where('sink_id', '=', sinkId)
      .where('lease_owner', '=', owner)
      .executeTakeFirst();
    if (Number(r.numUpdatedRows) !== 1) throw new LeaseLost(`log sink ${sinkId}: another process delivers it now`);
    if (c.bytes || c.exports) {
      await trx
        .updateTable('log_sinks')
        .set((eb) => ({ bytes_sent: eb('bytes_sent', '+', c.bytes), exports_count: eb('exports_count', '+', c.exports) }))
        .where('id', '=', sinkId)
        .execute();
    }
  });
}

/** Moves the cursor past entries dropped by a bound (counted), only while holding the lease. */
export async function dropTo(db: Kysely<DB>, sinkId: number, owner: string, from: Cursor, to: Cursor): Promise<boolean> {
  const r = await db
    .updateTable('sink_state')
    .set((eb) => ({ cursor_id: to.id, cursor_seq: to.seq, cursor_pos: to.pos, dropped: eb('dropped', '+', to.seq - from.seq) }))
    .where('sink_id', '=', sinkId)
    .where('lease_owner', '=', owner)
    .where('cursor_id', '=', from.id)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** A failed attempt: counted, its message kept, and since when the sink has been retrying. */
export async function recordFailure(db: Kysely<DB>, sinkId: number, owner: string, message: string, at: string): Promise<void> {
  await db
    .updateTable('sink_state')
    .set((eb) => ({
      failed: eb('failed', '+', 1),
      last_error: message.slice(0, 1000),
      last_error_at: at,
      retrying_since: sql<string>`case when retrying_since = '' then ${at} else retrying_since end`,
    }))
    .where('sink_id', '=', sinkId)
    .where('lease_owner', '=', owner)
    .execute();
}

/** The first row of the sink's stream after spool id `after`, with its position in that stream. */
export async function firstAfter(db: Kysely<DB>, sink: SinkRef, after: number): Promise<SpoolRowAt | undefined> {
  const row = await streamRows(db, sink).where('id', '>', after).orderBy('id').limit(1).executeTakeFirst();
  return row ? at(row, sink) : undefined;
}

function at(row: LogSpoolRow, sink: SinkRef): SpoolRowAt {
  const c = cols(sink);
  return { row, seq: Number(row[c.seq]), pos: Number(row[c.pos]) };
}

/** The cursor just after a row (it was handled). */
export function cursorAfter(r: SpoolRowAt): Cursor {
  return { id: Number(r.row.id), seq: r.seq + 1, pos: r.pos + Buffer.byteLength(r.row.line, 'utf8') };
}

/** The cursor just before a row (everything before it handled). */
export const cursorBefore = (r: SpoolRowAt): Cursor => ({ id: Number(r.row.id) - 1, seq: r.seq, pos: r.pos });

/** A batch read from the spool, and whether it was cut by a bound (more may follow) or reached the stream's end. */
export interface Batch {
  rows: SpoolRowAt[];
  more: boolean;
}

/**
 * The next batch after the cursor: at most `maxEntries` rows and `maxBytes` of lines (at least
 * one row, however large), read in pages so a batch of big lines does not read a thousand.
 */
export async function readBatch(db: Kysely<DB>, sink: SinkRef, after: number, maxEntries: number, maxBytes: number): Promise<Batch> {
  const rows: SpoolRowAt[] = [];
  let bytes = 0;
  let from = after;
  for (let page = Math.min(100, maxEntries); ; page = Math.min(1000, page * 4, maxEntries - rows.length)) {
    const got = await streamRows(db, sink).where('id', '>', from).orderBy('id').limit(page).execute();
    for (const row of got) {
      const size = row.line.length;
      if (rows.length > 0 && bytes + size > maxBytes) return { rows, more: true };
      rows.push(at(row, sink));
      bytes += size;
      if (rows.length >= maxEntries) return { rows, more: true };
    }
    // A short page is the stream's end (as of this read).
    if (got.length < page) return { rows, more: false };
    if (bytes >= maxBytes) return { rows, more: true };
    from = Number(got[got.length - 1].id);
  }
}

/** A spool row as a destination receives it. */
export function toEntry(r: SpoolRowAt, envName: (id: number) => string): SinkEntry {
  const row = r.row;
  return {
    id: Number(row.id),
    environment: envName(row.environment_id),
    environmentId: row.environment_id,
    nodeId: row.node_id,
    hostIdentifier: row.host_identifier,
    hostname: row.hostname,
    logType: row.log_type as SinkEntry['logType'],
    ...(row.name !== null ? { name: row.name } : {}),
    ...(row.severity !== null ? { severity: Number(row.severity) } : {}),
    time: Number(row.time),
    receivedAt: row.received_at,
    line: row.line,
    bytes: Buffer.byteLength(row.line, 'utf8'),
  };
}

/**
 * Where a sink's cursor must be for its backlog to fit its bounds: the first row of its stream
 * whose position leaves at most `maxBytes` after it and which is not older than `cutoff`. A
 * binary search over ids (positions and receive times grow with ids), a seek per step.
 * Undefined when the backlog fits; the head when nothing does.
 */
export async function boundCursor(
  db: Kysely<DB>,
  sink: SinkRef,
  cursor: Cursor,
  head: StreamHead,
  lastId: number,
  limits: { maxBytes: number; cutoff: string },
): Promise<{ to: Cursor; reason: 'backlog_bytes' | 'backlog_age' } | undefined> {
  if (head.entries <= cursor.seq) return undefined;
  const minPos = head.bytes - limits.maxBytes;
  const oldest = await firstAfter(db, sink, cursor.id);
  if (!oldest) return undefined;
  const ok = (r: SpoolRowAt) => r.pos >= minPos && r.row.received_at >= limits.cutoff;
  if (ok(oldest)) return undefined;
  const reason = oldest.pos < minPos ? 'backlog_bytes' : 'backlog_age';
  let lo = Number(oldest.row.id); // every row up to lo is out
  let hi = lastId; // rows after hi do not exist yet
  let best: SpoolRowAt | undefined;
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    const r = await firstAfter(db, sink, mid);
    if (!r || Number(r.row.id) > hi) {
      hi = mid;
      continue;
    }
    if (ok(r)) {
      best = r;
      hi = mid;
    } else lo = Number(r.row.id);
  }
  if (best) return { to: cursorBefore(best), reason };
  // Nothing fits: everything up to the newest row of the stream goes.
  const last = await streamRows(db, sink).where('id', '<=', lastId).orderBy('id', 'desc').limit(1).executeTakeFirst();
  return last ? { to: cursorAfter(at(last, sink)), reason } : undefined;
}
