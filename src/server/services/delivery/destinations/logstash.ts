// logstash: each log line as the agent sent it, framed for Logstash's inputs: json_lines over TCP
// (one JSON object and "\n" per entry; the tcp input with `codec => json_lines`), one JSON object
// per datagram over UDP (the udp input with `codec => json`), NDJSON over HTTP(S) (a POST per
// batch, `content-type: application/x-ndjson`; the http input with
// `additional_codecs => { "application/x-ndjson" => "json_lines" }`), where a 2xx acknowledges the
// batch and 429/503 are retried after their Retry-After.
import { Type } from '@sinclair/typebox';
import type { ConfigProblem, Destination, SendResult, Sink, SinkEntry } from '../sink.js';
import { SinkError } from '../sink.js';
import { urlProblem } from './http.js';
import { DatagramWriter, StreamWriter, count, endpointOf } from './socket.js';
import { HttpTarget } from './http-target.js';

const schema = Type.Object({ url: Type.String(), ca: Type.Optional(Type.String()) }, { additionalProperties: false });
type LogstashConfig = { url: string; ca?: string };

const MAX_DATAGRAM = 65_507;

class LogstashSink implements Sink {
  private readonly stream?: StreamWriter;
  private readonly dgram?: DatagramWriter;
  private readonly http?: HttpTarget;

  constructor(private readonly config: LogstashConfig) {
    const scheme = new URL(config.url).protocol;
    if (scheme === 'udp:') this.dgram = new DatagramWriter(endpointOf(config.url));
    else if (scheme === 'tcp:') this.stream = new StreamWriter(endpointOf(config.url), false);
    else this.http = new HttpTarget(config.ca);
  }

  async send(batch: SinkEntry[], signal: AbortSignal): Promise<SendResult> {
    if (this.dgram) {
      const rejected: SendResult['rejected'] = [];
      const fit = batch.filter(
        (e, index) => e.bytes <= MAX_DATAGRAM || !rejected.push({ index, error: `${e.bytes} bytes do not fit in one UDP datagram` }),
      );
      const datagrams = fit.map((e) => Buffer.from(e.line, 'utf8'));
      await this.dgram.send(datagrams);
      return {
        bytes: datagrams.reduce((n, d) => n + d.length, 0),
        answer: `${count(fit.length, 'datagram')} sent (UDP has no acknowledgement)`,
        ...(rejected.length ? { rejected } : {}),
      };
    }
    const body = Buffer.from(batch.map((e) => `${e.line}\n`).join(''), 'utf8');
    if (this.stream) {
      await this.stream.write(body, signal);
      return { bytes: body.length, answer: `${count(batch.length, 'line')} written (${body.length} bytes)` };
    }
    const r = await this.http!.call('POST', this.config.url, { 'content-type': 'application/x-ndjson' }, body, signal);
    if (r.status < 200 || r.status > 299)
      throw new SinkError(`${this.config.url} answered ${r.answer}`, r.status === 429 || r.status === 503 ? r.retryAfterMs : undefined);
    return { bytes: body.length, answer: r.answer };
  }

  async close(): Promise<void> {
    this.stream?.close();
    this.dgram?.close();
    await this.http?.close();
  }
}

export const logstash: Destination<LogstashConfig> = {
  type: 'logstash',
  schema,
  secrets: [],
  check(config): ConfigProblem | undefined {
    const p = urlProblem(config.url, ['tcp', 'udp', 'http', 'https']);
    if (p) return p;
    const u = new URL(config.url);
    if ((u.protocol === 'tcp:' || u.protocol === 'udp:') && !u.port)
      return { field: 'url', message: 'a tcp:// or udp:// url needs a port (Logstash has no default)' };
    if (config.ca !== undefined && u.protocol !== 'https:') return { field: 'ca', message: 'a CA is only used with an https:// url' };
    return undefined;
  },
  batch: { maxEntries: 2000, maxBytes: 2 * 1024 * 1024 },
  // TCP and UDP: one stream in spool order with no acknowledgement to wait for (as syslog): one
  // batch at a time. HTTP: each batch a request answered on its own: several at once.
  maxInFlight: (config) => (/^https?:/i.test(config.url) ? 16 : 1),
  open: (config) => Promise.resolve(new LogstashSink(config)),
  doc: {
    wire: 'json_lines over TCP, one JSON object per UDP datagram, NDJSON POSTs over HTTP(S)',
    verified: "rsyslog 8.2302 as the newline-framed TCP and UDP receiver (no Logstash installs here); HTTP: our own tests' stand-in",
  },
};
