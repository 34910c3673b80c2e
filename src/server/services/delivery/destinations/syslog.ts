// syslog: RFC 5424 messages, one per log entry, over UDP (RFC 5426, one datagram each), TCP with
// RFC 6587 octet counting, or TLS (RFC 5425, octet counting, the server checked against `ca`).
// As osquery's own syslog logger: APP-NAME osqueryd, facility local3 unless configured, results
// at severity info and status lines by their osquery severity (info -> notice, warning, error ->
// err, fatal -> crit); MSG is the log line as the agent sent it. HOSTNAME is the node's hostname,
// TIMESTAMP the log's own time, MSGID the log type.
import { Type } from '@sinclair/typebox';
import type { ConfigProblem, Destination, SendResult, Sink, SinkEntry } from '../sink.js';
import { urlProblem } from './http.js';
import { DatagramWriter, StreamWriter, count, endpointOf } from './socket.js';

export const FACILITIES = [
  'kern',
  'user',
  'mail',
  'daemon',
  'auth',
  'syslog',
  'lpr',
  'news',
  'uucp',
  'cron',
  'authpriv',
  'ftp',
  'ntp',
  'audit',
  'alert',
  'clock',
  'local0',
  'local1',
  'local2',
  'local3',
  'local4',
  'local5',
  'local6',
  'local7',
] as const;

const schema = Type.Object(
  {
    url: Type.String(),
    facility: Type.Optional(Type.Union(FACILITIES.map((f) => Type.Literal(f)))),
    ca: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);
type SyslogConfig = { url: string; facility?: (typeof FACILITIES)[number]; ca?: string };

/** The syslog severity of an entry: osquery's mapping (syslog_logger.cpp). */
export function syslogSeverity(e: Pick<SinkEntry, 'logType' | 'severity'>): number {
  if (e.logType !== 'status') return 6; // info
  return [5, 4, 3, 2][e.severity ?? 0] ?? 5; // notice, warning, err, crit
}

/** PRINTUSASCII without spaces, at most `max` characters, or the NILVALUE. */
function header(value: string, max: number): string {
  const v = value.replace(/[^\x21-\x7e]/g, '').slice(0, max);
  return v === '' ? '-' : v;
}

/** One RFC 5424 message (without transport framing). */
export function rfc5424(e: SinkEntry, facility: number): Buffer {
  const pri = facility * 8 + syslogSeverity(e);
  const ts = new Date(e.time * 1000).toISOString();
  return Buffer.from(`<${pri}>1 ${ts} ${header(e.hostname || e.hostIdentifier, 255)} osqueryd - ${e.logType} - ${e.line}`, 'utf8');
}

/** Largest datagram: IPv4's UDP payload limit. */
const MAX_DATAGRAM = 65_507;

class SyslogSink implements Sink {
  private readonly stream?: StreamWriter;
  private readonly dgram?: DatagramWriter;
  private readonly facility: number;

  constructor(config: SyslogConfig) {
    const scheme = new URL(config.url).protocol;
    this.facility = FACILITIES.indexOf(config.facility ?? 'local3');
    if (scheme === 'udp:') this.dgram = new DatagramWriter(endpointOf(config.url, 514));
    else
      this.stream = new StreamWriter(endpointOf(config.url, scheme === 'tls:' ? 6514 : 514), scheme === 'tls:' ? { ca: config.ca } : false);
  }

  async send(batch: SinkEntry[], signal: AbortSignal): Promise<SendResult> {
    const messages = batch.map((e) => rfc5424(e, this.facility));
    if (this.dgram) {
      const rejected: SendResult['rejected'] = [];
      const fit = messages.filter(
        (m, index) => m.length <= MAX_DATAGRAM || !rejected.push({ index, error: `${m.length} bytes do not fit in one UDP datagram` }),
      );
      await this.dgram.send(fit);
      const bytes = fit.reduce((n, m) => n + m.length, 0);
      return {
        bytes,
        answer: `${count(fit.length, 'datagram')} sent (UDP has no acknowledgement)`,
        ...(rejected.length ? { rejected } : {}),
      };
    }
    // RFC 6587 octet counting: "<length> <message>", back to back.
    const frames = Buffer.concat(messages.flatMap((m) => [Buffer.from(`${m.length} `), m]));
    await this.stream!.write(frames, signal);
    return { bytes: frames.length, answer: `${count(messages.length, 'message')} written (${frames.length} bytes)` };
  }

  close(): Promise<void> {
    this.stream?.close();
    this.dgram?.close();
    return Promise.resolve();
  }
}

export const syslog: Destination<SyslogConfig> = {
  type: 'syslog',
  schema,
  secrets: [],
  check(config): ConfigProblem | undefined {
    const p = urlProblem(config.url, ['udp', 'tcp', 'tls']);
    if (p) return p;
    if (config.ca !== undefined && !config.url.startsWith('tls:')) return { field: 'ca', message: 'a CA is only used with a tls:// url' };
    if (config.ca !== undefined && !config.ca.includes('-----BEGIN CERTIFICATE-----'))
      return { field: 'ca', message: 'expected a PEM certificate' };
    return undefined;
  },
  batch: { maxEntries: 2000, maxBytes: 1024 * 1024 },
  // One stream (UDP, or one TCP/TLS connection) in spool order, and nothing to wait for: a batch
  // is taken when the kernel took it, so a second batch out would gain nothing and a batch
  // retried after a later one would reach the receiver out of order.
  maxInFlight: () => 1,
  open: (config) => Promise.resolve(new SyslogSink(config)),
  doc: {
    wire: 'RFC 5424, one message per entry: UDP (one datagram each), TCP with RFC 6587 octet counting, TLS (RFC 5425)',
    verified: 'rsyslog 8.2302 (UDP, TCP, TLS)',
  },
};
