// One simulated osquery agent: enrolls with the secret and host_details, fetches its config,
// flushes status and result logs, polls distributed queries and answers them, and uploads
// carves block by block. Each step is one request; the simulator's scheduler decides when.
import { createHash, randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { AgentFlags } from './flags.js';
import type { SimHost } from './hosts.js';
import type { RequestKind, Stats } from './stats.js';
import { answer, type Row } from './tables.js';
import { tarOne } from '../lib/tar.js';
import { TransportError, type Transport } from './transport.js';

export interface AgentEnv {
  flags: AgentFlags;
  secret: string;
  transport: Transport;
  stats: Stats;
  /** Read real files for carves (a single agent on this machine); else synthetic content. */
  localFiles: boolean;
  /** Called with every batch of log entries the server acknowledged (200), for loss checks. */
  onLogs?: (uuid: string, type: 'status' | 'result', data: object[]) => void;
  /** Called with every archive uploaded (to record it). */
  onCarve?: (c: {
    requestId: string;
    name: string;
    uuid: string;
    hostname: string;
    sessionId: string;
    path: string;
    archive: Buffer;
  }) => void | Promise<void>;
  /**
   * Latency from the moment the request is sent, not from when its task was due: with one
   * connection per agent nothing queues in the client, and the load benchmark must not count
   * its own scheduling delay (which it reports separately) as the server's.
   */
  latencyFromSend?: boolean;
  now(): number;
}

interface ScheduledQuery {
  /** As osquery names it in result logs: the schedule's own name, pack_<pack>_<query> for a pack's. */
  name: string;
  query: string;
  interval: number;
  snapshot: boolean;
  removed: boolean;
  due: number;
  /** The previous run's rows (differential results), as JSON texts. */
  last?: Set<string>;
  /** osquery's epoch and counter of a differential query's runs. */
  counter: number;
}

/** osquery's limits on a scheduled query's interval (packs.cpp): others are dropped. */
const MAX_INTERVAL = 604_800;

/** osquery's checkPlatform(): empty, any/all, linux (and ubuntu, centos), posix, or the platform itself. */
export function platformMatches(want: unknown, host: SimHost): boolean {
  if (typeof want !== 'string' || want === '' || want === 'null') return true;
  if (want.includes('any') || want.includes('all')) return true;
  const family = host.platform === 'darwin' ? 'darwin' : host.platform === 'windows' ? 'windows' : 'linux';
  if (family === 'linux' && /linux|ubuntu|centos/.test(want)) return true;
  if (family !== 'windows' && want.includes('posix')) return true;
  return want.includes(family);
}

/** osquery's getMachineShard(): the first byte of SHA-1(hostname) scaled to 0..100. */
export function machineShard(hostname: string): number {
  return Math.floor((createHash('sha1').update(hostname).digest()[0] * 100) / 255);
}

/** osquery's checkVersion(): true when `want` is a newer version than `have`. */
function newer(want: string, have: string): boolean {
  const a = want.split('.').map(Number);
  const b = have.split('.').map(Number);
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const x = a[i] ?? 0;
    const y = b[i] ?? 0;
    if (x !== y) return x > y;
  }
  return false;
}

export class NodeInvalid extends Error {}

export class SimAgent {
  nodeKey?: string;
  enrollFailures = 0;
  /** A node_invalid answer scheduled one re-enrollment; others must not add more. */
  reenrolling = false;
  /** When the simulator's pending 'query' task for this agent runs (one at a time). */
  queryAt?: number;
  private statusLogs: object[] = [];
  private resultLogs: object[] = [];
  private schedule: ScheduledQuery[] = [];
  private decorators: { load?: unknown; always?: unknown } = {};

  constructor(
    readonly host: SimHost,
    private env: AgentEnv,
    /** Its place in the simulator: picks its own connection when the transport has one per agent. */
    readonly index = 0,
  ) {}

  /**
   * When the task now running was due (ms since epoch): its first request's latency counts from
   * then, so time spent waiting for a free connection or an in-flight slot is not hidden (a real
   * agent would have been waiting on the server all that time).
   */
  dueAt?: number;

  private async call(kind: RequestKind, path: string, body: object, gzip = false): Promise<any> {
    const called = performance.now();
    let t = called - Math.max(0, Date.now() - (this.dueAt ?? Infinity));
    this.dueAt = undefined;
    let res: any;
    try {
      // From the send: the moment the request goes on the wire (after any earlier request of this agent's).
      // osquery sends its node key in an Authorization header too (NodeKey scheme), once it has one.
      const auth = kind !== 'enroll' && this.nodeKey ? this.nodeKey : undefined;
      res = await this.env.transport.post(path, body, gzip, this.index, this.env.latencyFromSend ? (sent) => (t = sent) : undefined, auth);
      if (this.env.latencyFromSend && t < called) t = called;
    } catch (e) {
      this.env.stats.error(kind, (e as Error).message);
      throw e;
    }
    this.env.stats.record(kind, performance.now() - t);
    if (res && typeof res === 'object' && res.node_invalid === true) {
      if (kind !== 'enroll') this.nodeKey = undefined;
      throw new NodeInvalid(`${path}: node_invalid`);
    }
    return res;
  }

  /**
   * The `decorations` of a log entry, as osquery adds them: the columns of the configuration's
   * decorators only, and no field at all without decorators (issue 26: osquery 5.23 recorded).
   */
  private decorated(): { decorations?: Record<string, unknown> } {
    const d = this.decorations();
    return Object.keys(d).length > 0 ? { decorations: d } : {};
  }

  private decorations() {
    const h = this.host;
    const out: Record<string, unknown> = {};
    // The config's load and always decorators: the first row of each, its columns added.
    for (const list of [this.decorators.load, this.decorators.always]) {
      if (!Array.isArray(list)) continue;
      for (const q of list) {
        const a = typeof q === 'string' ? answer(q, h, this.env.now()) : undefined;
        if (a?.kind === 'rows' && a.rows[0]) Object.assign(out, a.rows[0]);
      }
    }
    return out;
  }

  private status(message: string, severity = 0): void {
    const now = this.env.now();
    this.statusLogs.push({
      hostIdentifier: this.host.uuid,
      calendarTime: calendarTime(now),
      unixTime: Math.floor(now / 1000),
      severity,
      filename: 'sim.cpp',
      line: 1,
      message,
      version: this.host.osqueryInfo.version,
      ...this.decorated(),
    });
    if (this.statusLogs.length > 1000) this.statusLogs.splice(0, this.statusLogs.length - 1000);
  }

  async enroll(): Promise<void> {
    const h = this.host;
    const res = await this.call('enroll', this.env.flags.enroll, {
      enroll_secret: this.env.secret,
      host_identifier: h.uuid,
      platform_type: h.platformType,
      host_details: {
        os_version: h.osVersion,
        osquery_info: h.osqueryInfo,
        system_info: h.systemInfo,
        ...(h.platformInfo ? { platform_info: h.platformInfo } : {}),
      },
    });
    if (typeof res?.node_key !== 'string' || res.node_key === '') throw new TransportError('enroll: no node_key in the answer');
    this.nodeKey = res.node_key;
    this.enrollFailures = 0;
    this.status(`osqueryd started [version=${h.osqueryInfo.version}]`);
    this.status('Enrolled with the TLS enroll plugin');
  }

  async config(): Promise<void> {
    if (!this.env.flags.config) return;
    const res = await this.call('config', this.env.flags.config, { node_key: this.nodeKey });
    this.loadSchedule(res);
    this.status('Config refreshed');
  }

  /**
   * The schedule osquery would run from a config: the schedule's queries under their names, each
   * pack's as pack_<pack>_<query> (osquery's default delimiter), minus what osquery drops (an
   * interval of 0 or over a week, another platform, a shard or version that excludes this host,
   * a pack whose discovery queries return nothing). A query keeps its next run across refreshes.
   */
  loadSchedule(res: any): void {
    const now = this.env.now();
    const h = this.host;
    const shard = machineShard(h.hostname);
    const schedule: ScheduledQuery[] = [];
    const excluded = (q: any) =>
      !platformMatches(q?.platform, h) ||
      (Number(q?.shard) > 0 && Number(q.shard) < shard) ||
      (typeof q?.version === 'string' && newer(q.version, h.osqueryInfo.version));
    const add = (prefix: string, queries: unknown) => {
      if (!queries || typeof queries !== 'object') return;
      for (const [name, q] of Object.entries(queries as Record<string, any>)) {
        if (typeof q?.query !== 'string' || excluded(q)) continue;
        const interval = Number(q.interval);
        if (!Number.isInteger(interval) || interval <= 0 || interval > MAX_INTERVAL) continue;
        const full = prefix + name;
        const old = this.schedule.find((s) => s.name === full && s.query === q.query && s.interval === interval);
        schedule.push({
          name: full,
          query: q.query,
          interval,
          snapshot: q.snapshot === true,
          removed: q.removed !== false,
          due: old?.due ?? now + interval * 1000,
          last: old?.last,
          counter: old?.counter ?? 0,
        });
      }
    };
    add('', res?.schedule);
    if (res?.packs && typeof res.packs === 'object') {
      for (const [pack, p] of Object.entries(res.packs as Record<string, any>)) {
        if (!p || typeof p !== 'object' || excluded(p)) continue;
        const discovery = Array.isArray(p.discovery) ? p.discovery : [];
        const found = (d: unknown) => {
          const a = typeof d === 'string' ? answer(d, h, now) : undefined;
          return a?.kind === 'rows' && a.rows.length > 0;
        };
        if (!discovery.every(found)) continue;
        add(`pack_${pack}_`, p.queries);
      }
    }
    this.schedule = schedule.slice(0, 1000);
    this.decorators = res?.decorators && typeof res.decorators === 'object' ? res.decorators : {};
  }

  /** When the next scheduled query is due (ms), if any. */
  nextDue(): number | undefined {
    let next: number | undefined;
    for (const s of this.schedule) if (next === undefined || s.due < next) next = s.due;
    return next;
  }

  /**
   * Runs the scheduled queries that are due into result logs, as osquery logs them: a snapshot
   * query's whole result as one `snapshot` entry; a differential one's rows as `added` (and
   * `removed`, unless removed is false) events, one entry per row, the first run adding all.
   */
  runDue(): number {
    const now = this.env.now();
    let ran = 0;
    for (const s of this.schedule) {
      if (s.due > now) continue;
      s.due = now + s.interval * 1000;
      const a = answer(s.query, this.host, now);
      if (a.kind !== 'rows') continue;
      ran++;
      const base = {
        name: s.name,
        hostIdentifier: this.host.uuid,
        calendarTime: calendarTime(now),
        unixTime: Math.floor(now / 1000),
        epoch: 0,
        numerics: false,
        ...this.decorated(),
      };
      if (s.snapshot) {
        this.resultLogs.push({ ...base, counter: 0, snapshot: a.rows, action: 'snapshot' });
        continue;
      }
      const rows = new Set(a.rows.map((r) => JSON.stringify(r)));
      const counter = s.counter++;
      for (const r of rows) if (!s.last?.has(r)) this.resultLogs.push({ ...base, counter, columns: JSON.parse(r), action: 'added' });
      if (s.removed && s.last)
        for (const r of s.last) if (!rows.has(r)) this.resultLogs.push({ ...base, counter, columns: JSON.parse(r), action: 'removed' });
      s.last = rows;
    }
    if (this.resultLogs.length > 10_000) this.resultLogs.splice(0, this.resultLogs.length - 10_000);
    return ran;
  }

  /** Sends the buffered status and result logs (nothing to send: no request). */
  async log(): Promise<boolean> {
    if (!this.env.flags.logger) return false;
    let sent = false;
    for (const [type, buf] of [
      ['status', this.statusLogs],
      ['result', this.resultLogs],
    ] as const) {
      if (buf.length === 0) continue;
      const data = buf.splice(0, buf.length);
      try {
        await this.call('log', this.env.flags.logger, { node_key: this.nodeKey, log_type: type, data }, this.env.flags.loggerCompress);
      } catch (e) {
        // As osquery's buffered log forwarder: a batch the server did not acknowledge stays
        // buffered (before anything newer) and is sent again at the next period.
        buf.unshift(...data);
        throw e;
      }
      this.env.onLogs?.(this.host.uuid, type, data);
      sent = true;
    }
    return sent;
  }

  /** Polls the distributed queries and answers them (carves start uploading). Returns how many it answered. */
  async distributed(): Promise<number> {
    const f = this.env.flags;
    if (!f.distributedRead || !f.distributedWrite) return 0;
    const res = await this.call('read', f.distributedRead, { node_key: this.nodeKey });
    const queries = res?.queries && typeof res.queries === 'object' ? (res.queries as Record<string, unknown>) : {};
    const names = Object.keys(queries).filter((n) => typeof queries[n] === 'string');
    if (names.length === 0) return 0;
    const out = {
      queries: {} as Record<string, Row[]>,
      statuses: {} as Record<string, number>,
      messages: {} as Record<string, string>,
      stats: {} as Record<string, object>,
      node_key: this.nodeKey,
    };
    const carves: { name: string; path: string; guid: string; requestId: string }[] = [];
    const now = this.env.now();
    for (const name of names) {
      const a = answer(queries[name] as string, this.host, now);
      // osquery sends every answer's message ('' when it ran) and its resource figures (stats).
      out.stats[name] = { wall_time_ms: 1, user_time: 0, system_time: 0, memory: 0 };
      out.messages[name] = '';
      if (a.kind === 'error') {
        out.queries[name] = [];
        out.statuses[name] = 1;
        out.messages[name] = a.message;
      } else if (a.kind === 'rows') {
        out.queries[name] = a.rows;
        out.statuses[name] = 0;
      } else {
        // As osquery 4.7 and later (tables/forensic/carves.cpp): the carve is scheduled under a fresh
        // carve_guid and a random request_id, both in the answer's row, and its carver start
        // carries those two, never the query's name (issue 26).
        const guid = randomUUID();
        const requestId = randomUUID();
        out.queries[name] = [
          {
            time: String(Math.floor(now / 1000)),
            sha256: '',
            size: '-1',
            path: a.path,
            status: 'SCHEDULED',
            carve_guid: guid,
            request_id: requestId,
            carve: '1',
          },
        ];
        out.statuses[name] = 0;
        carves.push({ name, path: a.path, guid, requestId });
      }
    }
    await this.call('write', f.distributedWrite, out);
    for (const c of carves) await this.carve(c.requestId, c.path, c.guid, c.name);
    return names.length;
  }

  private async carveContent(path: string): Promise<Buffer> {
    if (this.env.localFiles) return readFile(path);
    // Synthetic, but different per host and path, and over one block for some.
    const seed = createHash('sha256').update(`${this.host.uuid}\0${path}`).digest();
    const lines: string[] = [];
    const count = 20 + (seed.readUInt16BE(0) % 200);
    for (let i = 0; i < count; i++)
      lines.push(`${i}\tsimulated content of ${path} on ${this.host.hostname}\t${seed.toString('hex', 0, 8)}`);
    return Buffer.from(lines.join('\n') + '\n');
  }

  /** Uploads a carve: `requestId` and `carveId` as the answer named them; `name`, the carve query's (for onCarve). */
  async carve(requestId: string, path: string, carveId: string, name = requestId): Promise<void> {
    const f = this.env.flags;
    if (!f.carverStart || !f.carverContinue) return;
    let content: Buffer;
    try {
      content = await this.carveContent(path);
    } catch (e) {
      this.status(`Carve of ${path} failed: ${(e as Error).message}`, 2);
      return;
    }
    const archive = tarOne(path, content);
    const blockSize = Math.max(1, f.carverBlockSize);
    const blockCount = Math.ceil(archive.length / blockSize);
    const start = await this.call('carve', f.carverStart, {
      block_count: blockCount,
      block_size: blockSize,
      carve_size: archive.length,
      carve_id: carveId,
      request_id: requestId,
      node_key: this.nodeKey,
    });
    const sessionId = start?.session_id;
    if (typeof sessionId !== 'string' || sessionId === '') throw new TransportError('carver start: no session_id in the answer');
    for (let i = 0; i < blockCount; i++) {
      const data = archive.subarray(i * blockSize, (i + 1) * blockSize).toString('base64');
      await this.call('carve', f.carverContinue, { block_id: i, session_id: sessionId, request_id: requestId, data });
    }
    await this.env.onCarve?.({ requestId, name, uuid: this.host.uuid, hostname: this.host.hostname, sessionId, path, archive });
  }
}

/** osquery's calendarTime: "Thu Nov 26 05:03:26 2026 UTC" (strftime "%a %b %e %H:%M:%S %Y UTC"). */
export function calendarTime(ms: number): string {
  const d = new Date(ms);
  const day = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'][d.getUTCDay()];
  const mon = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'][d.getUTCMonth()];
  const two = (n: number) => String(n).padStart(2, '0');
  return `${day} ${mon} ${String(d.getUTCDate()).padStart(2, ' ')} ${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())} ${d.getUTCFullYear()} UTC`;
}
