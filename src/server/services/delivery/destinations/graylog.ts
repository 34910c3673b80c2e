// graylog: GELF 1.1, one message per log entry (jmpsec/osctrl#23: Graylog drops grouped ones).
// host = the node's host identifier, timestamp = the log's time, short_message = the query name
// (results) or the status message, level = syslog severity as the syslog sink maps it, and the
// log's fields flattened into additional fields: `_name`, `_action`, `_columns_pid`,
// `_decorations_hostname`, ... (nested objects joined with `_`, arrays and other values kept as
// JSON text, names outside [A-Za-z0-9_.-] replaced by `_`, `_id` (reserved) as `_id_`), plus
// `_log_type`, `_environment`, `_node_uuid` and `_hostname`.
// Transports: UDP (gzip, chunked per GELF when over 1,420 bytes, at most 128 chunks: a larger
// message is rejected; 1,420 as Graylog's go-gelf library writes and reads: its reader truncates
// a longer datagram, and no datagram is fragmented on a WAN), TCP (NUL-terminated, uncompressed), HTTP(S) (POST to the .../gelf URL; a
// 2xx acknowledges, 429/503 retried).
import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { Type } from '@sinclair/typebox';
import type { ConfigProblem, Destination, SendResult, Sink, SinkEntry } from '../sink.js';
import { SinkError } from '../sink.js';
import { urlProblem } from './http.js';
import { HttpTarget } from './http-target.js';
import { DatagramWriter, StreamWriter, count, endpointOf } from './socket.js';
import { syslogSeverity } from './syslog.js';

const schema = Type.Object({ url: Type.String(), ca: Type.Optional(Type.String()) }, { additionalProperties: false });
type GraylogConfig = { url: string; ca?: string };

/** A UDP datagram of GELF: go-gelf's chunk size (its reader reads no more). */
const CHUNK = 1420;
const CHUNK_HEADER = 12;
const MAX_CHUNKS = 128;
/** Requests in flight over HTTP (GELF HTTP takes one message per request). */
const HTTP_PARALLEL = 16;

type Fields = Record<string, string | number>;

function fieldName(path: string): string {
  const n = path.replace(/[^A-Za-z0-9_.-]/g, '_');
  return n === 'id' ? 'id_' : n;
}

/** Flattens a parsed log into GELF additional fields (without the leading `_`). */
export function flatten(value: unknown, prefix: string, out: Fields, depth = 0): void {
  if (value === null || value === undefined) return;
  if (typeof value === 'string' || typeof value === 'number') {
    if (prefix) out[fieldName(prefix)] = value;
    return;
  }
  if (typeof value === 'object' && !Array.isArray(value) && depth < 4) {
    for (const [k, v] of Object.entries(value)) flatten(v, prefix ? `${prefix}_${k}` : k, out, depth + 1);
    return;
  }
  if (prefix) out[fieldName(prefix)] = JSON.stringify(value);
}

/** The GELF 1.1 message of an entry, as JSON text. */
export function gelfMessage(e: SinkEntry): string {
  let log: unknown;
  try {
    log = JSON.parse(e.line);
  } catch {
    log = { line: e.line };
  }
  const fields: Fields = {};
  flatten(log, '', fields);
  Object.assign(fields, { log_type: e.logType, environment: e.environment, node_uuid: e.hostIdentifier, hostname: e.hostname });
  const message = typeof fields.message === 'string' ? fields.message : undefined;
  const short = e.logType === 'status' ? (message ?? 'status') : (e.name ?? e.logType);
  // The message's JSON text built directly (one stringify per value, no second object): the
  // server's CPU per line bounds what GELF over UDP delivers (no acknowledgement to wait for).
  let text = `{"version":"1.1","host":${JSON.stringify(e.hostIdentifier || e.hostname || 'unknown')},"short_message":${JSON.stringify(short || '-')},"timestamp":${JSON.stringify(e.time)},"level":${syslogSeverity(e)}`;
  for (const k in fields) text += `,${JSON.stringify(`_${k}`)}:${JSON.stringify(fields[k])}`;
  return `${text}}`;
}

/**
 * gzip settings by message size: a deflate window and memory no larger than the message needs
 * (the same output for a small message, and a third of the time: most of a small message's
 * gzip is setting up zlib's default 32 KiB window and 128 KiB of hash tables).
 */
function gzipOptions(bytes: number): { windowBits?: number; memLevel?: number } {
  if (bytes <= 1024) return { windowBits: 10, memLevel: 3 };
  if (bytes <= 4096) return { windowBits: 12, memLevel: 4 };
  return {};
}

/** The UDP datagrams of one message: whole when it fits, else GELF chunks. */
export function gelfDatagrams(message: string): Buffer[] | undefined {
  const data = gzipSync(message, gzipOptions(message.length));
  if (data.length <= CHUNK) return [data];
  const size = CHUNK - CHUNK_HEADER;
  const count = Math.ceil(data.length / size);
  if (count > MAX_CHUNKS) return undefined;
  const id = randomBytes(8);
  const out: Buffer[] = [];
  for (let i = 0; i < count; i++) {
    const head = Buffer.from([0x1e, 0x0f, ...id, i, count]);
    out.push(Buffer.concat([head, data.subarray(i * size, (i + 1) * size)]));
  }
  return out;
}

class GraylogSink implements Sink {
  private readonly stream?: StreamWriter;
  private readonly dgram?: DatagramWriter;
  private readonly http?: HttpTarget;

  constructor(private readonly config: GraylogConfig) {
    const scheme = new URL(config.url).protocol;
    if (scheme === 'udp:') this.dgram = new DatagramWriter(endpointOf(config.url, 12201));
    else if (scheme === 'tcp:') this.stream = new StreamWriter(endpointOf(config.url, 12201), false);
    else this.http = new HttpTarget(config.ca);
  }

  async send(batch: SinkEntry[], signal: AbortSignal): Promise<SendResult> {
    const messages = batch.map(gelfMessage);
    if (this.dgram) {
      const rejected: SendResult['rejected'] = [];
      const datagrams: Buffer[] = [];
      messages.forEach((m, index) => {
        const d = gelfDatagrams(m);
        if (d) datagrams.push(...d);
        else rejected.push({ index, error: `too large for GELF over UDP (more than ${MAX_CHUNKS} chunks compressed)` });
      });
      await this.dgram.send(datagrams);
      const bytes = datagrams.reduce((n, d) => n + d.length, 0);
      return {
        bytes,
        answer: `${count(batch.length - rejected.length, 'message')} in ${count(datagrams.length, 'datagram')} (UDP has no acknowledgement)`,
        ...(rejected.length ? { rejected } : {}),
      };
    }
    if (this.stream) {
      const body = Buffer.from(messages.map((m) => `${m}\0`).join(''), 'utf8');
      await this.stream.write(body, signal);
      return { bytes: body.length, answer: `${count(messages.length, 'message')} written (${body.length} bytes)` };
    }
    return this.sendHttp(messages, signal);
  }

  /** One POST per message, HTTP_PARALLEL at a time; the ones not answered 2xx are retried. */
  private async sendHttp(messages: string[], signal: AbortSignal): Promise<SendResult> {
    const retry: NonNullable<SendResult['retry']> = [];
    let bytes = 0;
    let answer = '';
    let next = 0;
    let failure: SinkError | undefined;
    const worker = async () => {
      while (next < messages.length) {
        const index = next++;
        if (failure) {
          retry.push({ index, error: failure.message });
          continue;
        }
        try {
          const r = await this.http!.call('POST', this.config.url, { 'content-type': 'application/json' }, messages[index], signal);
          if (r.status >= 200 && r.status < 300) {
            bytes += Buffer.byteLength(messages[index]);
            answer = r.answer;
          } else {
            retry.push({ index, error: `${this.config.url} answered ${r.answer}` });
            if (r.status === 429 || r.status === 503 || r.status >= 500)
              failure = new SinkError(`${this.config.url} answered ${r.answer}`, r.retryAfterMs);
          }
        } catch (e) {
          failure = e instanceof SinkError ? e : new SinkError((e as Error).message);
          retry.push({ index, error: failure.message });
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(HTTP_PARALLEL, messages.length) }, worker));
    // Nothing taken at all: a failure of the destination, retried with its Retry-After.
    if (retry.length === messages.length && failure) throw failure;
    return { bytes, answer: answer || `${messages.length - retry.length} messages accepted`, ...(retry.length ? { retry } : {}) };
  }

  async close(): Promise<void> {
    this.stream?.close();
    this.dgram?.close();
    await this.http?.close();
  }
}

export const graylog: Destination<GraylogConfig> = {
  type: 'graylog',
  schema,
  secrets: [],
  check(config): ConfigProblem | undefined {
    const p = urlProblem(config.url, ['udp', 'tcp', 'http', 'https']);
    if (p) return p;
    const u = new URL(config.url);
    if ((u.protocol === 'http:' || u.protocol === 'https:') && !u.pathname.endsWith('/gelf'))
      return { field: 'url', message: "a GELF HTTP input's URL ends in /gelf" };
    if (config.ca !== undefined && u.protocol !== 'https:') return { field: 'ca', message: 'a CA is only used with an https:// url' };
    return undefined;
  },
  batch: { maxEntries: 1000, maxBytes: 2 * 1024 * 1024 },
  // UDP and TCP: one stream with no acknowledgement to wait for, and over UDP more at once only
  // overflows the reader's socket buffer sooner: one batch at a time. HTTP: several at once.
  maxInFlight: (config) => (/^https?:/i.test(config.url) ? 16 : 1),
  open: (config) => Promise.resolve(new GraylogSink(config)),
  doc: {
    wire: 'GELF 1.1, one message per entry: UDP (gzip, chunked), TCP (NUL-terminated), HTTP(S) POST to /gelf',
    verified:
      "UDP: Graylog's own go-gelf reader (github.com/Graylog2/go-gelf); TCP and HTTP: our own tests' stand-ins (no Graylog server installs here)",
  },
};
