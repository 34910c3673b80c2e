// Log entries as a destination module receives them from the spool, with lines shaped as the real
// osquery 5 agent writes them (result: name, hostIdentifier, calendarTime, unixTime, epoch,
// counter, numerics, decorations, columns, action; status: severity, filename, line, message,
// version), for tests of a destination module against its real peer.
import type { SinkEntry } from '../../../src/server/services/delivery/sink.js';

let nextId = 1;

export interface EntryOptions {
  logType?: 'result' | 'status';
  /** Query name (results). */
  name?: string;
  hosts?: number;
  /** Bytes of padding in a column, to make big lines. */
  pad?: number;
  /** The log's own time (seconds). */
  time?: number;
  /** Status severity (0 info .. 3 fatal). */
  severity?: number;
}

/** n entries; entry i carries `seq: i` (results: columns.seq; status: message "... #i") and a run tag. */
export function makeEntries(n: number, tag: string, o: EntryOptions = {}): SinkEntry[] {
  const logType = o.logType ?? 'result';
  const time = o.time ?? Math.floor(Date.now() / 1000);
  const calendarTime = new Date(time * 1000).toUTCString().replace('GMT', 'UTC');
  const out: SinkEntry[] = [];
  for (let i = 0; i < n; i++) {
    const host = `host-${tag}-${i % (o.hosts ?? 3)}`;
    const uuid = `00000000-0000-4000-8000-${String(i % (o.hosts ?? 3)).padStart(12, '0')}`;
    const decorations = { host_uuid: uuid, hostname: host };
    const log =
      logType === 'result'
        ? {
            name: o.name ?? 'pack_sinks_processes',
            hostIdentifier: uuid,
            calendarTime,
            unixTime: time,
            epoch: 0,
            counter: i,
            numerics: false,
            decorations,
            columns: {
              pid: String(1000 + i),
              name: 'osqueryd',
              path: '/opt/osquery/bin/osqueryd',
              run: tag,
              seq: String(i),
              ...(o.pad ? { pad: 'x'.repeat(o.pad) } : {}),
            },
            action: 'added',
          }
        : {
            hostIdentifier: uuid,
            calendarTime,
            unixTime: String(time),
            severity: String(o.severity ?? 0),
            filename: 'scheduler.cpp',
            line: '83',
            message: `Executing scheduled query pack_sinks_processes: run ${tag} #${i}`,
            version: '5.23.0',
            decorations,
          };
    const line = JSON.stringify(log);
    out.push({
      id: nextId++,
      environment: 'prod',
      environmentId: 1,
      nodeId: 1 + (i % (o.hosts ?? 3)),
      hostIdentifier: uuid,
      hostname: host,
      logType,
      ...(logType === 'result' ? { name: log.name } : { severity: o.severity ?? 0 }),
      time,
      receivedAt: new Date().toISOString(),
      line,
      bytes: Buffer.byteLength(line),
    });
  }
  return out;
}

/** The run tag and sequence number of a delivered line (parsed), or undefined. */
export function seqOf(value: unknown): { run: string; seq: number } | undefined {
  const log = (typeof value === 'object' && value !== null ? value : {}) as { columns?: { run?: string; seq?: string }; message?: unknown };
  if (log.columns?.run !== undefined) return { run: log.columns.run, seq: Number(log.columns.seq) };
  const m = /run (\S+) #(\d+)$/.exec(typeof log.message === 'string' ? log.message : '');
  return m ? { run: m[1], seq: Number(m[2]) } : undefined;
}
