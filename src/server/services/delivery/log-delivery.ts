// Log delivery (issues 13, 18): status and result logs from agents go to the environment's sinks
// and the global ones, asynchronously, through a queue per sink drained by its own loop, so a slow
// sink never makes an agent wait. Bounded in bytes, losing nothing:
//
// - Admission is all or nothing: a log request is queued for every matching sink, or, when one
//   sink's queue (SINK_QUEUE_BYTES) or the node's share (NODE_QUEUE_BYTES) has no room, for none,
//   and the agent is answered 503 (LogBackpressure): osquery keeps the batch and sends it again.
//   One flooding agent fills its own share and is slowed; the others go on.
// - A failed delivery stays at the head of its queue and is retried with a backoff (1 s doubling
//   to 30 s): a sink that is down fills its queue, then agents are answered 503, never silence.
// - What is dropped on purpose is counted (metrics) and audited once a minute per sink: entries
//   for a sink that cannot deliver by its configuration (a type the reference server does not
//   deliver, a file path outside --sink-dir, an http sink without a URL), and, at shutdown, what a
//   sink still down could not take within the grace.
// - File sinks live under one directory (--sink-dir): relative paths resolve there, anything
//   outside is refused (here and by the sink API); files are created 0600, written through a
//   handle kept open, and rotated by size (config.max_size_mb, default 100; config.max_files
//   rotated files kept, default 5), so a file sink takes at most (max_files + 1) x max_size_mb.
// - Counters (bytes_sent: bytes written or POSTed, exactly; exports_count: batches) are added to
//   the sink rows every second; a failed write keeps them for the next.
//
// The queues are in memory: a kill -9 loses what was queued but not yet delivered; with N
// replicas each delivers what its own agents sent, and the counters are added, never overwritten.
import { constants, type PathLike } from 'node:fs';
import { mkdir, open, rename, stat, unlink, type FileHandle } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve } from 'node:path';
import type { Deps } from '../../context.js';
import { Periodic } from '../../lib/periodic.js';
import type { Kysely } from 'kysely';
import type { DB, EnvironmentRow, LogSinkRow, NodeRow } from '../../store/schema.js';

/** What a delivery needs of the node that sent the logs. */
type LogNode = Pick<NodeRow, 'id' | 'uuid' | 'hostname'>;
import { LogTypes, Severities } from '../../../api/index.js';
import { writeAudit } from '../audit/audit.js';

/** Bytes (of serialised entries) one sink may hold queued. */
export const SINK_QUEUE_BYTES = 64 * 1024 * 1024;
/** Bytes one node may have queued over all sinks: its requests beyond are answered 503. */
export const NODE_QUEUE_BYTES = 16 * 1024 * 1024;
/** One delivery: at most this many entries or bytes. */
const BATCH_ENTRIES = 1000;
const BATCH_BYTES = 1024 * 1024;
const AUDIT_EVERY_MS = 60_000;
const RETRY_MIN_MS = 1000;
const RETRY_MAX_MS = 30_000;
const DEFAULT_FILE_MAX_MB = 100;
const DEFAULT_FILE_KEEP = 5;

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

/** A queue has no room: the agent is answered 503 and osquery sends the batch again. */
export class LogBackpressure extends Error {}

interface Queued {
  text: string;
  node: number;
}

interface SinkState {
  sink: LogSinkRow;
  queue: Queued[];
  /** Index of the first undelivered entry (the queue is compacted as it drains). */
  head: number;
  bytes: number;
  draining?: Promise<void>;
  /** Counters not yet added to the row. */
  sent: number;
  exports: number;
  /** Dropped on purpose since the last audit, and why. */
  drops: number;
  dropReason: string;
  failures: number;
  lastError: string;
  lastAudit: number;
  file?: OpenFile;
}

interface OpenFile {
  path: string;
  handle: FileHandle;
  size: number;
  /** The inode opened: another process that rotated the path leaves it behind. */
  ino: number;
}

/** Why a sink cannot deliver by its configuration (a deliberate drop), or undefined. */
export function sinkConfigProblem(sink: Pick<LogSinkRow, 'type' | 'config'>, sinkDir: string): string | undefined {
  let config: Record<string, unknown>;
  try {
    config = JSON.parse(sink.config || '{}') as Record<string, unknown>;
  } catch {
    return 'sink config is not JSON';
  }
  if (sink.type === 'file') {
    if (typeof config.path !== 'string' || config.path === '') return 'file sink without config.path';
    return filePathProblem(config.path, sinkDir);
  }
  if (sink.type === 'http') {
    if (typeof config.url !== 'string' || !/^https?:\/\//.test(config.url)) return 'http sink without an http(s) config.url';
    return undefined;
  }
  return `sink type ${sink.type} has no delivery in the reference server`;
}

/** A file sink path resolves inside the sink directory, or this says why not. */
export function filePathProblem(path: string, sinkDir: string): string | undefined {
  if (path.includes('\0')) return 'the file sink path contains NUL';
  const full = resolve(sinkDir, path);
  const rel = relative(sinkDir, full);
  if (rel === '' || rel.startsWith('..') || isAbsolute(rel)) return `file sinks write inside the sink directory ${sinkDir} (--sink-dir): "${path}" is outside it`;
  return undefined;
}

export class LogDelivery {
  private states = new Map<number, SinkState>();
  /** Bytes queued per node over all sinks. */
  private nodeBytes = new Map<number, number>();
  /** Addresses whose node was refused for its share, until half of it has drained (see refusing()). */
  private refused = new Map<string, number>();
  private stopped = false;
  /** The counters' flush: a database that is down or full is retried with a backoff, never fatal. */
  private readonly task: Periodic;

  private readonly limits: { sinkBytes: number; nodeBytes: number };

  constructor(
    private readonly deps: Deps,
    /** Where the sinks of a delivery come from (the agent door's counter-keyed cache). */
    private readonly sinkSource?: (envId: number, source: string) => Promise<LogSinkRow[]>,
  ) {
    this.limits = { sinkBytes: deps.config.sinkQueueBytes ?? SINK_QUEUE_BYTES, nodeBytes: deps.config.nodeQueueBytes ?? NODE_QUEUE_BYTES };
    this.task = new Periodic('log sink counters', 1000, () => this.flushCounters(), deps.faults);
    if (deps.metrics) deps.metrics.sources.sinkQueueBytes = () => new Map([...this.states.values()].map((st) => [st.sink.name, st.bytes]));
  }

  private get sinkDir(): string {
    return this.deps.config.sinkDir;
  }

  start(): void {
    this.task.start();
  }

  /**
   * The sinks of a delivery. With the agent door's state (agent/state.ts), cached per process and
   * keyed by the configuration counter, which every sink change moves (migration 011): a sink
   * added through the admin API gets the very next log, on every replica. Without it, read.
   */
  private sinksFor(envId: number, source: string): Promise<LogSinkRow[]> {
    if (this.sinkSource) return this.sinkSource(envId, source);
    return enabledSinks(this.deps.db, envId, source);
  }

  private state(sink: LogSinkRow): SinkState {
    let st = this.states.get(sink.id);
    if (!st) {
      st = { sink, queue: [], head: 0, bytes: 0, sent: 0, exports: 0, drops: 0, dropReason: '', failures: 0, lastError: '', lastAudit: 0 };
      this.states.set(sink.id, st);
    }
    if (st.sink.config !== sink.config && st.file) {
      // The sink was changed (another path): the next write opens the new one.
      void st.file.handle.close().catch(() => undefined);
      st.file = undefined;
    }
    st.sink = sink;
    return st;
  }

  /**
   * Queues entries for every matching sink, or for none: throws LogBackpressure when a queue or
   * the node's share has no room (the caller answers 503). Never waits for delivery.
   */
  async deliver(env: EnvironmentRow, node: LogNode, logType: string, entries: unknown[], o: { dropWhenFull?: boolean; ip?: string } = {}): Promise<void> {
    return this.deliverTexts(env, node, logType, entries.map((e) => ({ text: JSON.stringify(e) ?? 'null', name: queryName(e) })), o);
  }

  /**
   * The same for entries already serialised (a big batch decoded off the event loop): each is
   * wrapped in the envelope by concatenation, never parsed again. The envelope's keys are in the
   * order of LogEntry.
   */
  async deliverTexts(env: EnvironmentRow, node: LogNode, logType: string, entries: { text: string; name?: string }[], o: { dropWhenFull?: boolean; ip?: string } = {}): Promise<void> {
    if (entries.length === 0) return;
    const sinks = await this.sinksFor(env.id, logType);
    if (sinks.length === 0) return;
    const received_at = this.deps.now().toISOString();
    const head = `{"environment":${JSON.stringify(env.name)},"node_uuid":${JSON.stringify(node.uuid)},"hostname":${JSON.stringify(node.hostname)},"log_type":${JSON.stringify(logType)},`;
    const texts = entries.map(
      (e) => `${head}${logType !== 'status' && e.name !== undefined ? `"name":${JSON.stringify(e.name)},` : ''}"received_at":${JSON.stringify(received_at)},"entry":${e.text}}`,
    );
    const size = texts.reduce((n, t) => n + t.length + 1, 0);
    const deliverable: SinkState[] = [];
    for (const sink of sinks) {
      const st = this.state(sink);
      const problem = sinkConfigProblem(sink, this.sinkDir);
      if (problem) {
        this.drop(st, texts.length, problem);
        continue;
      }
      deliverable.push(st);
    }
    if (deliverable.length === 0) return;
    // An empty queue always takes one request (so no request is too big to ever get in; the
    // request itself is bounded by the body limits).
    const full = deliverable.find((st) => st.bytes > 0 && st.bytes + size > this.limits.sinkBytes);
    const had = this.nodeBytes.get(node.id) ?? 0;
    const mine = had + size * deliverable.length;
    const refusal = full
      ? `log sink ${full.sink.name} has ${full.bytes} bytes queued (limit ${this.limits.sinkBytes})`
      : had > 0 && mine > this.limits.nodeBytes
        ? `this node has ${mine - size * deliverable.length} bytes of logs queued (limit ${this.limits.nodeBytes})`
        : undefined;
    if (refusal) {
      if (!full && o.ip) this.refused.set(`ip:${o.ip}`, node.id);
      if (!o.dropWhenFull) throw new LogBackpressure(refusal);
      for (const st of deliverable) this.drop(st, texts.length, `queue full: ${refusal}`);
      return;
    }
    this.nodeBytes.set(node.id, mine);
    for (const st of deliverable) {
      for (const text of texts) st.queue.push({ text, node: node.id });
      st.bytes += size;
      if (!st.draining) st.draining = this.drain(st).finally(() => (st.draining = undefined));
    }
  }

  /**
   * Whether the node last refused for its share from this address is still over half of it: the
   * address's next sizeable batch is then answered 503 before it is read, so a flooding agent
   * costs next to nothing per request. Behind one NAT address, other agents' sizeable batches
   * wait as long (they resend); small ones are never refused this way.
   */
  refusing(who: { ip: string }): boolean {
    const key = `ip:${who.ip}`;
    const id = this.refused.get(key);
    if (id === undefined) return false;
    if ((this.nodeBytes.get(id) ?? 0) > this.limits.nodeBytes / 2) return true;
    this.refused.delete(key);
    return false;
  }

  /** Entries dropped on purpose: counted, audited at the next counter flush (once a minute a sink). */
  private drop(st: SinkState, n: number, reason: string): void {
    st.drops += n;
    st.dropReason = reason;
    const kind = reason.startsWith('sink type') ? 'no_delivery' : reason.startsWith('shutdown') ? 'shutdown' : reason.startsWith('queue full') ? 'queue_full' : 'config';
    this.deps.metrics?.dropped(st.sink.name, kind, n);
  }

  private release(st: SinkState, items: Queued[]): void {
    for (const q of items) {
      const left = (this.nodeBytes.get(q.node) ?? 0) - (q.text.length + 1);
      if (left > 0) this.nodeBytes.set(q.node, left);
      else this.nodeBytes.delete(q.node);
      st.bytes -= q.text.length + 1;
    }
  }

  private async drain(st: SinkState): Promise<void> {
    let backoff = RETRY_MIN_MS;
    while (st.head < st.queue.length) {
      let bytes = 0;
      let end = st.head;
      while (end < st.queue.length && end - st.head < BATCH_ENTRIES && bytes < BATCH_BYTES) bytes += st.queue[end++]!.text.length + 1;
      const batch = st.queue.slice(st.head, end);
      const problem = sinkConfigProblem(st.sink, this.sinkDir);
      try {
        if (problem) {
          // Reconfigured meanwhile into something that cannot deliver: a deliberate drop.
          this.drop(st, batch.length, problem);
        } else {
          const sent = await this.send(st, batch);
          st.sent += sent;
          st.exports += 1;
        }
        backoff = RETRY_MIN_MS;
      } catch (e) {
        st.failures += 1;
        st.lastError = (e as Error).message;
        this.deps.faults.report(`log sink ${st.sink.name}`, e);
        if (this.stopped) return;
        // Kept at the head of the queue and retried: nothing acknowledged is dropped.
        await new Promise((r) => setTimeout(r, backoff).unref());
        backoff = Math.min(RETRY_MAX_MS, backoff * 2);
        continue;
      }
      st.head = end;
      this.release(st, batch);
      if (st.head > 4096 && st.head * 2 > st.queue.length) {
        st.queue = st.queue.slice(st.head);
        st.head = 0;
      }
    }
    st.queue = [];
    st.head = 0;
  }

  /** Sends one batch; returns the bytes written or POSTed. */
  private async send(st: SinkState, batch: Queued[]): Promise<number> {
    const config = JSON.parse(st.sink.config || '{}') as Record<string, unknown>;
    if (st.sink.type === 'file') {
      const text = batch.map((q) => q.text).join('\n') + '\n';
      const data = Buffer.from(text, 'utf8');
      const f = await this.fileFor(st, String(config.path), config, data.length);
      await f.handle.write(data);
      f.size += data.length;
      return data.length;
    }
    // http: a JSON array of the entries, built from their serialised texts.
    const body = Buffer.from(`[${batch.map((q) => q.text).join(',')}]`, 'utf8');
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (typeof config.headers === 'object' && config.headers !== null) {
      for (const [k, v] of Object.entries(config.headers)) if (typeof v === 'string') headers[k] = v;
    }
    const res = await fetch(String(config.url), { method: 'POST', headers, body, signal: AbortSignal.timeout(10_000) });
    await res.arrayBuffer();
    if (!res.ok) throw new Error(`http sink answered ${res.status}`);
    return body.length;
  }

  /** The sink's open file, rotated first when this write would take it past its size. */
  private async fileFor(st: SinkState, path: string, config: Record<string, unknown>, adding: number): Promise<OpenFile> {
    const full = resolve(this.sinkDir, path);
    const maxBytes = Math.max(1, Number(config.max_size_mb) || DEFAULT_FILE_MAX_MB) * 1024 * 1024;
    const keep = Math.min(100, Math.max(0, Number.isInteger(config.max_files) ? Number(config.max_files) : DEFAULT_FILE_KEEP));
    if (st.file && st.file.path !== full) {
      await st.file.handle.close().catch(() => undefined);
      st.file = undefined;
    }
    if (st.file) {
      // Other processes of --workers append to the same file and may have rotated it: write
      // where the path points now, and judge its size by what all of them wrote.
      const [at, mine] = await Promise.all([stat(full).catch(() => undefined), st.file.handle.stat()]);
      if (!at || at.ino !== mine.ino || at.dev !== mine.dev) {
        await st.file.handle.close().catch(() => undefined);
        st.file = undefined;
      } else st.file.size = mine.size;
    }
    if (st.file && st.file.size > 0 && st.file.size + adding > maxBytes) {
      await st.file.handle.close().catch(() => undefined);
      await rotateOnce(full, keep, st.file.ino);
      st.file = undefined;
    }
    if (!st.file) {
      await mkdir(join(full, '..'), { recursive: true, mode: 0o700 });
      // O_NOFOLLOW: a symlink planted at the path is refused, not written through.
      const handle = await open(full, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
      const at = await handle.stat();
      st.file = { path: full, handle, size: at.size, ino: at.ino };
      if (st.file.size > 0 && st.file.size + adding > maxBytes) {
        await handle.close();
        await rotateOnce(full, keep, at.ino);
        st.file = undefined;
        return this.fileFor(st, path, config, adding);
      }
    }
    return st.file;
  }

  /** Adds the counters to the sink rows and audits deliberate drops (once a minute per sink). */
  async flushCounters(): Promise<void> {
    for (const st of this.states.values()) {
      if (st.sent || st.exports) {
        const { sent, exports } = st;
        st.sent = 0;
        st.exports = 0;
        try {
          await this.deps.db
            .updateTable('log_sinks')
            .set((eb) => ({ bytes_sent: eb('bytes_sent', '+', sent), exports_count: eb('exports_count', '+', exports) }))
            .where('id', '=', st.sink.id)
            .execute();
        } catch (e) {
          // Kept for the next flush: the counts are added, so a late write is still exact.
          st.sent += sent;
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
            line: `log sink ${st.sink.name} dropped ${drops} entr${drops === 1 ? 'y' : 'ies'}: ${st.dropReason}`,
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

  /**
   * Delivers what is queued, for at most `graceMs` (a sink that is down cannot hold shutdown);
   * what is left is counted and audited as dropped at shutdown; then the counters are written.
   */
  async stop(graceMs = 5_000): Promise<void> {
    const pending = [...this.states.values()].map((st) => st.draining).filter(Boolean);
    if (pending.length > 0) await Promise.race([Promise.all(pending), new Promise((r) => setTimeout(r, graceMs).unref())]);
    this.stopped = true;
    for (const st of this.states.values()) {
      const left = st.queue.length - st.head;
      if (left > 0) {
        this.drop(st, left, `shutdown: the sink did not take them within ${graceMs / 1000} s (${st.lastError || 'still delivering'})`);
        st.queue = [];
        st.head = 0;
      }
      if (st.file) await st.file.handle.close().catch(() => undefined);
      st.file = undefined;
    }
    // The audit of shutdown drops is written now, whatever the minute's rhythm.
    for (const st of this.states.values()) if (st.drops) st.lastAudit = 0;
    await this.task.stop();
  }
}

/**
 * Rotates `path` if it is still the file `ino` that was found full: several processes of
 * --workers write one sink, and the first to find it full rotates it, once. A lock file beside
 * it (created exclusively, removed after) keeps two from shifting the chain together, which would
 * delete the oldest file early; a lock left by a killed process is taken over after 30 s.
 */
async function rotateOnce(path: string, keep: number, ino: number): Promise<void> {
  const lockPath = `${path}.rotating`;
  let lock: FileHandle | undefined;
  for (let attempt = 0; attempt < 2 && !lock; attempt++) {
    try {
      lock = await open(lockPath, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const held = await stat(lockPath).catch(() => undefined);
      if (held && Date.now() - held.mtimeMs < 30_000) return; // another process is rotating it now
      await unlink(lockPath).catch(() => undefined);
    }
  }
  if (!lock) return;
  try {
    const now = await stat(path).catch(() => undefined);
    if (now && now.ino === ino) await rotate(path, keep);
  } finally {
    await lock.close().catch(() => undefined);
    await unlink(lockPath).catch(() => undefined);
  }
}

/** path -> path.1 -> ... -> path.keep (the oldest deleted); keep 0 just truncates by deletion. */
async function rotate(path: string, keep: number): Promise<void> {
  const exists = (p: PathLike) => stat(p).then(() => true, () => false);
  if (keep === 0) {
    await unlink(path).catch(() => undefined);
    return;
  }
  await unlink(`${path}.${keep}`).catch(() => undefined);
  for (let i = keep - 1; i >= 1; i--) if (await exists(`${path}.${i}`)) await rename(`${path}.${i}`, `${path}.${i + 1}`);
  if (await exists(path)) await rename(path, `${path}.1`);
}

/** The enabled sinks a log of `source` from environment `envId` goes to: the environment's, then the global ones (id 0), in order. */
export function enabledSinks(db: Kysely<DB>, envId: number, source: string): Promise<LogSinkRow[]> {
  return db
    .selectFrom('log_sinks')
    .selectAll()
    .where('environment_id', 'in', [envId, 0])
    .where('source', '=', source)
    .where('enabled', '=', 1)
    .orderBy('environment_id')
    .orderBy('sort_order')
    .execute();
}
