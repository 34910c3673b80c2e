// s3: gzipped NDJSON objects (each log line as the agent sent it, one a line) put with PutObject
// under time-partitioned keys, Firehose's layout:
//   <prefix>/<log type>/YYYY/MM/DD/HH/<first receive time>-<first id>-<last id>-<process>.json.gz
// (UTC hour of the first entry's receive time). An object is cut when it holds
// `max_object_bytes` of lines before compression (default 16 MiB, at most 64 MiB) or when its
// oldest line is `max_object_seconds` old (default 60): the runner gathers a batch until one of
// the two (BatchLimits.gatherMs), so a quiet fleet writes one object a minute, not one a moment.
// A batch is acknowledged when S3 answered 200 to every object of it; a retried batch reuses its
// keys (no duplicate object after a failed attempt in the same process).
// Path-style addressing for S3-compatible stores (`force_path_style`), an `endpoint`, static keys
// or the SDK's standard credential chain.
import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { Type } from '@sinclair/typebox';
import type { ConfigProblem, Destination, SendResult, Sink, SinkEntry } from '../sink.js';
import { awsCheck, awsError, clientSettings, type AwsConfig } from './aws.js';

type S3Config = AwsConfig & {
  bucket: string;
  prefix?: string;
  force_path_style?: boolean;
  max_object_bytes?: number;
  max_object_seconds?: number;
};

const DEFAULT_OBJECT_BYTES = 16 * 1024 * 1024;
/** A batch is read into memory whole: objects stay within this. */
const MAX_OBJECT_BYTES = 64 * 1024 * 1024;
const DEFAULT_OBJECT_SECONDS = 60;

const schema = Type.Object(
  {
    bucket: Type.String({ pattern: '^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$' }),
    prefix: Type.Optional(Type.String({ maxLength: 512 })),
    region: Type.Optional(Type.String()),
    endpoint: Type.Optional(Type.String()),
    force_path_style: Type.Optional(Type.Boolean()),
    access_key_id: Type.Optional(Type.String()),
    secret_access_key: Type.Optional(Type.String()),
    max_object_bytes: Type.Optional(Type.Integer({ minimum: 1024, maximum: MAX_OBJECT_BYTES })),
    max_object_seconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 3600 })),
  },
  { additionalProperties: false },
);

/** The key of an object holding entries first..last. */
export function objectKey(prefix: string, first: SinkEntry, last: SinkEntry, tag: string): string {
  const t = new Date(first.receivedAt).toISOString();
  const p = prefix === '' || prefix.endsWith('/') ? prefix : `${prefix}/`;
  const stamp = t.replace(/[-:]/g, '').replace('.', '');
  return `${p}${first.logType}/${t.slice(0, 4)}/${t.slice(5, 7)}/${t.slice(8, 10)}/${t.slice(11, 13)}/${stamp}-${first.id}-${last.id}-${tag}.json.gz`;
}

class S3Sink implements Sink {
  /** Tells this process's objects from another's (replicas, or this one after a restart). */
  private readonly tag = randomBytes(4).toString('hex');

  constructor(
    private readonly config: S3Config,
    private readonly put: (key: string, body: Buffer) => Promise<void>,
    private readonly close_: () => void,
  ) {}

  async send(batch: SinkEntry[]): Promise<SendResult> {
    const max = this.config.max_object_bytes ?? DEFAULT_OBJECT_BYTES;
    const objects: { start: number; end: number }[] = [];
    let size = 0;
    batch.forEach((e, i) => {
      const last = objects[objects.length - 1];
      if (!last || (size + e.bytes + 1 > max && i > last.start)) {
        objects.push({ start: i, end: i });
        size = e.bytes + 1;
      } else {
        last.end = i;
        size += e.bytes + 1;
      }
    });
    let bytes = 0;
    const keys: string[] = [];
    const retry: NonNullable<SendResult['retry']> = [];
    for (const [n, o] of objects.entries()) {
      const entries = batch.slice(o.start, o.end + 1);
      const body = gzipSync(entries.map((e) => `${e.line}\n`).join(''));
      const key = objectKey(this.config.prefix ?? '', entries[0], entries[entries.length - 1], this.tag);
      try {
        await this.put(key, body);
      } catch (e) {
        const err = awsError(`s3 PutObject ${this.config.bucket}/${key}`, e);
        if (n === 0) throw err;
        for (let i = o.start; i < batch.length; i++) retry.push({ index: i, error: err.message });
        break;
      }
      bytes += body.length;
      keys.push(key);
    }
    return {
      bytes,
      answer: `200: ${keys.length} object${keys.length === 1 ? '' : 's'} written (${keys[0] ?? ''}${keys.length > 1 ? ', ...' : ''})`,
      ...(retry.length ? { retry } : {}),
    };
  }

  close(): Promise<void> {
    this.close_();
    return Promise.resolve();
  }
}

export const s3: Destination<S3Config> = {
  type: 's3',
  schema,
  secrets: ['secret_access_key'],
  check(config): ConfigProblem | undefined {
    const p = awsCheck(config);
    if (p) return p;
    if (config.prefix?.startsWith('/')) return { field: 'prefix', message: 'a key prefix does not start with /' };
    return undefined;
  },
  batch: { maxEntries: 200_000, maxBytes: DEFAULT_OBJECT_BYTES, gatherMs: DEFAULT_OBJECT_SECONDS * 1000 },
  batchOf: (config) => ({
    maxEntries: 200_000,
    maxBytes: config.max_object_bytes ?? DEFAULT_OBJECT_BYTES,
    gatherMs: (config.max_object_seconds ?? DEFAULT_OBJECT_SECONDS) * 1000,
  }),
  // Batches are held in memory whole: the batches out at once stay within MAX_OBJECT_BYTES of
  // lines together, as one batch did before (4 of the default 16 MiB, 1 of 64 MiB).
  maxInFlight: (config) =>
    Math.max(
      1,
      Math.floor(MAX_OBJECT_BYTES / (typeof config.max_object_bytes === 'number' ? config.max_object_bytes : DEFAULT_OBJECT_BYTES)),
    ),
  async open(config) {
    const { S3Client, PutObjectCommand } = await import('@aws-sdk/client-s3');
    const client = new S3Client({ ...(await clientSettings(config)), forcePathStyle: config.force_path_style ?? false });
    const put = async (key: string, body: Buffer) => {
      await client.send(new PutObjectCommand({ Bucket: config.bucket, Key: key, Body: body, ContentType: 'application/x-ndjson' }));
    };
    return new S3Sink(config, put, () => client.destroy());
  },
  doc: {
    wire: 'gzipped NDJSON objects (PutObject) under <prefix>/<log type>/YYYY/MM/DD/HH/, cut by size or age',
    verified: 'versitygw 1.8.0 (an S3 gateway checking SigV4 signatures), path style',
  },
};
