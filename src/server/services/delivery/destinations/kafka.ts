// kafka: one message per log line (the line as the agent sent it), key = the node's host
// identifier (each host's lines stay ordered in one partition), to `topic` (default
// osquery_<log type>) or, for a query named in `topics`, that query's topic (osquery's
// kafka_topics). Produced by kafkajs (pure JS; the librdkafka packages do not install here) as
// an idempotent producer with acks all (-1): a batch is acknowledged when every in-sync replica
// has it. Compression none or gzip; TLS with an optional CA; SASL PLAIN or SCRAM-SHA-256/512.
// kafkajs' own retries are short (a leader election, a broker restart): the runner retries
// longer outages. Messages over 1,000,000 bytes (the broker's default message.max.bytes) are
// rejected instead of failing their batch for ever.
import { Type } from '@sinclair/typebox';
import type { ConfigProblem, Destination, SendResult, Sink, SinkContext, SinkEntry } from '../sink.js';
import { SinkError } from '../sink.js';

const SaslSchema = Type.Object(
  {
    mechanism: Type.Union([Type.Literal('plain'), Type.Literal('scram-sha-256'), Type.Literal('scram-sha-512')]),
    username: Type.String({ minLength: 1 }),
    password: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);

const schema = Type.Object(
  {
    brokers: Type.Array(Type.String(), { minItems: 1, maxItems: 100 }),
    topic: Type.Optional(Type.String()),
    topics: Type.Optional(Type.Record(Type.String(), Type.String())),
    compression: Type.Optional(Type.Union([Type.Literal('none'), Type.Literal('gzip')])),
    tls: Type.Optional(Type.Boolean()),
    ca: Type.Optional(Type.String()),
    sasl: Type.Optional(SaslSchema),
  },
  { additionalProperties: false },
);
type KafkaConfig = {
  brokers: string[];
  topic?: string;
  topics?: Record<string, string>;
  compression?: 'none' | 'gzip';
  tls?: boolean;
  ca?: string;
  sasl?: { mechanism: 'plain' | 'scram-sha-256' | 'scram-sha-512'; username: string; password?: string };
};

/** Kafka's legal topic names. */
const TOPIC = /^[A-Za-z0-9._-]{1,249}$/;
const MAX_MESSAGE = 1_000_000;

function topicProblem(field: string, t: string): ConfigProblem | undefined {
  return TOPIC.test(t) && t !== '.' && t !== '..'
    ? undefined
    : { field, message: `"${t}" is not a Kafka topic name (letters, digits, . _ -, at most 249)` };
}

/** The producer's errors, worded for the sink's state. */
function kafkaError(e: unknown): SinkError {
  const err = e as { name?: string; message?: string; type?: string; cause?: { message?: string } };
  const detail = err.type ? `${err.type}: ${err.message}` : (err.message ?? String(e));
  return new SinkError(`kafka: ${detail}${err.cause?.message ? ` (${err.cause.message})` : ''}`);
}

/** The promise, or its rejection as soon as `signal` aborts (the promise goes on, ignored). */
function abortable<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    p.catch(() => undefined);
    return Promise.reject(signal.reason as Error);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      p.catch(() => undefined);
      reject(signal.reason as Error);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

class KafkaSink implements Sink {
  private producer?: import('kafkajs').Producer;
  private connected?: Promise<void>;

  constructor(
    private readonly config: KafkaConfig,
    private readonly kafka: typeof import('kafkajs'),
    private readonly ctx: SinkContext,
  ) {}

  private topicOf(e: SinkEntry): string {
    const byQuery = e.name !== undefined ? this.config.topics?.[e.name] : undefined;
    return byQuery ?? this.config.topic ?? `osquery_${e.logType}`;
  }

  private async connect(): Promise<import('kafkajs').Producer> {
    if (!this.producer) {
      const { Kafka, logLevel } = this.kafka;
      const c = this.config;
      const client = new Kafka({
        clientId: `fleetctl-${this.ctx.name}`,
        brokers: c.brokers,
        ssl: c.tls ? (c.ca ? { ca: [c.ca] } : true) : undefined,
        sasl: c.sasl
          ? ({ mechanism: c.sasl.mechanism, username: c.sasl.username, password: c.sasl.password ?? '' } as import('kafkajs').SASLOptions)
          : undefined,
        connectionTimeout: 10_000,
        requestTimeout: 30_000,
        // Short: a leader election or a restart is ridden out here, a longer outage by the runner.
        retry: { retries: 3, initialRetryTime: 300, maxRetryTime: 5_000 },
        // kafkajs writes to the console by default; stdout is the stdout sink's.
        logLevel: logLevel.NOTHING,
      });
      this.producer = client.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: true });
    }
    this.connected ??= this.producer.connect().catch((e) => {
      this.connected = undefined;
      throw kafkaError(e);
    });
    await this.connected;
    return this.producer;
  }

  async send(batch: SinkEntry[], signal: AbortSignal): Promise<SendResult> {
    const rejected: NonNullable<SendResult['rejected']> = [];
    const byTopic = new Map<string, { key: string; value: string }[]>();
    let bytes = 0;
    batch.forEach((e, index) => {
      if (e.bytes + Buffer.byteLength(e.hostIdentifier) > MAX_MESSAGE) {
        rejected.push({ index, error: `${e.bytes} bytes: over Kafka's default message.max.bytes (1,000,000)` });
        return;
      }
      const t = this.topicOf(e);
      let list = byTopic.get(t);
      if (!list) byTopic.set(t, (list = []));
      list.push({ key: e.hostIdentifier, value: e.line });
      bytes += e.bytes + Buffer.byteLength(e.hostIdentifier);
    });
    if (byTopic.size === 0) return { bytes: 0, answer: 'nothing sendable', rejected };
    let answer: string;
    try {
      // kafkajs takes no signal, and its own retries (connecting, a leader election) last seconds:
      // a reconfiguration or shutdown must not wait for them (the producer is dropped below).
      const meta = await abortable(
        this.connect().then((producer) =>
          producer.sendBatch({
            acks: -1,
            timeout: 30_000,
            compression: this.config.compression === 'gzip' ? this.kafka.CompressionTypes.GZIP : this.kafka.CompressionTypes.None,
            topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })),
          }),
        ),
        signal,
      );
      answer = meta.map((m) => `${m.topicName}[${m.partition}]@${m.baseOffset ?? '?'}`).join(' ');
    } catch (e) {
      // A producer that failed mid-batch (or was given up) starts from a fresh connection next time.
      await this.reset();
      if (signal.aborted) throw signal.reason as Error;
      throw e instanceof SinkError ? e : kafkaError(e);
    }
    return { bytes, answer: `acknowledged by all in-sync replicas: ${answer}`, ...(rejected.length ? { rejected } : {}) };
  }

  private async reset(): Promise<void> {
    const p = this.producer;
    this.producer = undefined;
    this.connected = undefined;
    await p?.disconnect().catch(() => {});
  }

  async close(): Promise<void> {
    await this.reset();
  }
}

export const kafka: Destination<KafkaConfig> = {
  type: 'kafka',
  schema,
  secrets: ['sasl.password'],
  check(config): ConfigProblem | undefined {
    for (const [i, b] of config.brokers.entries()) {
      const m = /^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(b);
      if (!m || Number(m[2]) < 1 || Number(m[2]) > 65535) return { field: `brokers[${i}]`, message: `expected host:port, got "${b}"` };
    }
    if (config.topic !== undefined) {
      const p = topicProblem('topic', config.topic);
      if (p) return p;
    }
    for (const [q, t] of Object.entries(config.topics ?? {})) {
      const p = topicProblem(`topics.${q}`, t);
      if (p) return p;
    }
    if (config.ca !== undefined && !config.tls) return { field: 'ca', message: 'a CA is only used with tls: true' };
    return undefined;
  },
  // The broker's message.max.bytes (default 1,048,588) bounds a record batch, and kafkajs sends a
  // partition's share of a batch as one record batch: uncompressed, 4 MiB batches were refused
  // with MESSAGE_TOO_LARGE for ever once an outage had left a backlog over 1 MB (found by the
  // outage bench). 512 KiB of lines plus at most 5,000 records' overhead (key, lengths: < 60
  // bytes each) stays under it.
  batch: { maxEntries: 5000, maxBytes: 512 * 1024 },
  // One batch at a time. kafkajs's idempotent producer holds a lock per broker from a produce
  // request until its answer (eosManager.acquireBrokerLock in sendMessages.js: the sequence
  // numbers of a partition must reach the broker in order), so a second batch out would only
  // wait for the first; and a batch retried after a later one was written would put a host's
  // lines out of order under its key, which Kafka's consumers rely on.
  maxInFlight: () => 1,
  async open(config, ctx) {
    return new KafkaSink(config, await import('kafkajs'), ctx);
  },
  doc: {
    wire: 'one message per entry (the line as sent), key = host identifier, topic per log type or per query, acks all, idempotent, gzip optional, TLS, SASL PLAIN/SCRAM',
    verified: 'Apache Kafka 4.4.0 (KRaft; PLAINTEXT, SASL PLAIN and SCRAM-SHA-256, TLS)',
  },
};
