// The s3, kinesis and firehose destination modules (issue 28): s3 against versitygw, a real S3
// gateway that checks SigV4 signatures (objects read back from its POSIX backend, gunzipped);
// kinesis and firehose against moto, an AWS emulator (there is no installable Kinesis or
// Firehose: these confirm the AWS API shapes as moto implements them, not AWS itself).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FirehoseClient, CreateDeliveryStreamCommand, DescribeDeliveryStreamCommand } from '@aws-sdk/client-firehose';
import {
  CreateStreamCommand,
  DescribeStreamCommand,
  GetRecordsCommand,
  GetShardIteratorCommand,
  KinesisClient,
  ListShardsCommand,
} from '@aws-sdk/client-kinesis';
import { CreateBucketCommand, GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { firehose } from '../../../src/server/services/delivery/destinations/firehose.js';
import { kinesis } from '../../../src/server/services/delivery/destinations/kinesis.js';
import { s3 } from '../../../src/server/services/delivery/destinations/s3.js';
import type { Sink } from '../../../src/server/services/delivery/sink.js';
import { deliverAll, deliverThrough } from '../../helpers/peers/deliver.js';
import { makeEntries, seqOf } from '../../helpers/peers/entries.js';
import { startMoto, type Moto } from '../../helpers/peers/moto.js';
import { describePeers } from '../../helpers/peers/describe.js';
import { until } from '../../helpers/peers/peer.js';
import { lineKey, sendSample, startLogServer } from '../../helpers/peers/log-server.js';
import { S3_ACCESS_KEY, S3_SECRET_KEY, startVersitygw, type S3Server } from '../../helpers/peers/versitygw.js';

const ctx = { name: 'test', sinkDir: '/nonexistent' };
const range = (n: number) => Array.from({ length: n }, (_, i) => i);
const seqs = (lines: string[], run: string) =>
  lines
    .map((l) => seqOf(JSON.parse(l)))
    .filter((s) => s?.run === run)
    .map((s) => s!.seq)
    .sort((a, b) => a - b);
const open: Sink[] = [];
async function sinkOf<C>(
  d: { check?: (c: C, x: typeof ctx) => unknown; open: (c: C, x: typeof ctx) => Promise<Sink> },
  config: C,
): Promise<Sink> {
  expect(d.check?.(config, ctx)).toBeUndefined();
  const s = await d.open(config, ctx);
  open.push(s);
  return s;
}
afterAll(async () => {
  for (const s of open) await s.close();
});

describePeers(['versitygw'], 's3 sink against versitygw', () => {
  let gw: S3Server;
  const cfg = () => ({
    bucket: 'osquery-logs',
    endpoint: gw.endpoint,
    region: 'us-east-1',
    force_path_style: true,
    access_key_id: S3_ACCESS_KEY,
    secret_access_key: S3_SECRET_KEY,
  });
  const linesOf = (prefix: string) =>
    [...gw.objects('osquery-logs')]
      .filter(([k]) => k.startsWith(prefix))
      .flatMap(([, body]) => gunzipSync(body).toString('utf8').split('\n').filter(Boolean));
  beforeAll(async () => {
    gw = await startVersitygw();
    const client = new S3Client({
      endpoint: gw.endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: S3_ACCESS_KEY, secretAccessKey: S3_SECRET_KEY },
      requestHandler: new NodeHttpHandler(),
    });
    await client.send(new CreateBucketCommand({ Bucket: 'osquery-logs' }));
    client.destroy();
  });
  afterAll(async () => {
    await gw?.stop();
  });

  it('gzipped NDJSON objects under <prefix>/<log type>/YYYY/MM/DD/HH/, cut by max_object_bytes, each line once', async () => {
    const sink = await sinkOf(s3, { ...cfg(), prefix: 'fleet/', max_object_bytes: 64 * 1024 });
    const batch = makeEntries(1000, 's3');
    const d = await deliverAll(sink, batch);
    expect(d.answers[0]).toMatch(/^200: \d+ objects written \(fleet\/result\/\d{4}\/\d\d\/\d\d\/\d\d\//);
    const keys = [...gw.objects('osquery-logs').keys()].filter((k) => k.startsWith('fleet/result/'));
    const hour = new Date(batch[0].receivedAt).toISOString();
    expect(
      keys.every(
        (k) =>
          k.startsWith(`fleet/result/${hour.slice(0, 4)}/${hour.slice(5, 7)}/${hour.slice(8, 10)}/${hour.slice(11, 13)}/`) &&
          k.endsWith('.json.gz'),
      ),
    ).toBe(true);
    // 1,000 lines of about 450 bytes in objects of at most 64 KiB before compression.
    expect(keys.length).toBeGreaterThanOrEqual(7);
    for (const [k, body] of gw.objects('osquery-logs'))
      if (k.startsWith('fleet/')) expect(gunzipSync(body).length).toBeLessThanOrEqual(64 * 1024);
    const lines = linesOf('fleet/result/');
    expect(seqs(lines, 's3')).toEqual(range(1000));
    expect(lines[0]).toBe(batch[0].line);
  });

  it('a wrong secret is refused by the server (SigV4 checked): the batch stays for a retry', async () => {
    const sink = await sinkOf(s3, { ...cfg(), secret_access_key: 'not-the-secret' });
    await expect(sink.send(makeEntries(1, 'badkey'), new AbortController().signal)).rejects.toThrow(/SignatureDoesNotMatch|signature/i);
  });

  it('versitygw stopped until two sends failed: retried, nothing lost or doubled', async () => {
    const sink = await sinkOf(s3, { ...cfg(), prefix: 'outage' });
    await deliverAll(sink, makeEntries(100, 'outage-before'));
    await gw.pause();
    const retried = deliverThrough(sink, makeEntries(200, 'outage'), { pauseMs: 1000, maxAttempts: 300 });
    // Down until two sends failed: the outage was seen and retried.
    await retried.failures(2);
    await gw.resume();
    const d = await retried.done;
    expect(d.errors[0]).toMatch(/ECONNREFUSED/);
    expect(seqs(linesOf('outage/'), 'outage-before')).toEqual(range(100));
    expect(seqs(linesOf('outage/'), 'outage')).toEqual(range(200));
  });

  it('end to end: agents -> fleetctl server (spool, runner) -> S3 objects, each result and status line once', async () => {
    const ls = await startLogServer();
    try {
      await ls.addSink('s3-results', 's3', 'result', { ...cfg(), prefix: 'e2e', max_object_seconds: 10 });
      // The secret from a file on the server: versitygw checks the signature made with it.
      const secretFile = join(ls.srv.dir, 's3-secret');
      writeFileSync(secretFile, `${S3_SECRET_KEY}\n`, { mode: 0o600 });
      const { secret_access_key: _, ...noSecret } = cfg();
      await ls.addSink('s3-status', 's3', 'status', {
        ...noSecret,
        prefix: 'e2e',
        secret_access_key_file: secretFile,
        max_object_seconds: 1,
      });
      const shown = await ls.sink('s3-results');
      expect(shown.config.secret_access_key).toBe('<redacted>');
      const { results, status } = await sendSample(ls, 'e2e');
      await until(
        'every line in an object',
        async () => (await ls.sink('s3-results')).state.delivered === 100 && (await ls.sink('s3-status')).state.delivered === 10,
        90,
      );
      expect(
        linesOf('e2e/result/')
          .map((l) => lineKey(JSON.parse(l)))
          .sort(),
      ).toEqual(results.map(lineKey).sort());
      expect(
        linesOf('e2e/status/')
          .map((l) => lineKey(JSON.parse(l)))
          .sort(),
      ).toEqual(status.map(lineKey).sort());
      // Cut by age: the 100 results of two log requests waited for the 10 s gather time in one object.
      expect([...gw.objects('osquery-logs').keys()].filter((k) => k.startsWith('e2e/result/'))).toHaveLength(1);
    } finally {
      await ls.stop();
    }
  });

  it('bad configs are refused naming the field', () => {
    expect(s3.check?.({ bucket: 'b', endpoint: 'ftp://x' } as any, ctx)?.field).toBe('endpoint');
    expect(s3.check?.({ bucket: 'b', access_key_id: 'k' } as any, ctx)?.field).toBe('secret_access_key');
    expect(s3.check?.({ bucket: 'b', prefix: '/x' } as any, ctx)?.field).toBe('prefix');
  });
});

describePeers(['moto'], 'kinesis and firehose sinks against moto (an AWS emulator)', () => {
  let moto: Moto;
  const aws = () => ({
    endpoint: moto.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'testing', secretAccessKey: 'testing' },
    requestHandler: new NodeHttpHandler(),
  });
  beforeAll(async () => {
    moto = await startMoto();
  });
  afterAll(async () => {
    await moto?.stop();
  });

  describe('kinesis', () => {
    const cfg = (stream: string) => ({
      stream,
      endpoint: moto.endpoint,
      region: 'us-east-1',
      access_key_id: 'testing',
      secret_access_key: 'testing',
    });
    async function createStream(name: string) {
      const k = new KinesisClient(aws());
      await k.send(new CreateStreamCommand({ StreamName: name, ShardCount: 2 }));
      await until(
        `stream ${name} active`,
        async () => (await k.send(new DescribeStreamCommand({ StreamName: name }))).StreamDescription?.StreamStatus === 'ACTIVE',
        60,
      );
      k.destroy();
    }
    async function readStream(name: string): Promise<{ data: string; key: string }[]> {
      const k = new KinesisClient(aws());
      const out: { data: string; key: string }[] = [];
      for (const shard of (await k.send(new ListShardsCommand({ StreamName: name }))).Shards ?? []) {
        let it = (
          await k.send(new GetShardIteratorCommand({ StreamName: name, ShardId: shard.ShardId!, ShardIteratorType: 'TRIM_HORIZON' }))
        ).ShardIterator;
        for (;;) {
          const r = await k.send(new GetRecordsCommand({ ShardIterator: it!, Limit: 10_000 }));
          for (const rec of r.Records ?? []) out.push({ data: Buffer.from(rec.Data!).toString('utf8'), key: rec.PartitionKey! });
          if (!r.Records?.length) break;
          it = r.NextShardIterator;
        }
      }
      k.destroy();
      return out;
    }

    it('one record per line (with its newline), keyed by host identifier, over several calls of <= 500; oversized rejected', async () => {
      await createStream('osquery-results');
      const sink = await sinkOf(kinesis, cfg('osquery-results'));
      const batch = makeEntries(1200, 'kin');
      const big = makeEntries(1, 'kin-big', { pad: 1024 * 1024 });
      const d = await deliverAll(sink, [...batch, ...big]);
      expect(d.rejected.map((e) => e.id)).toEqual([big[0].id]);
      expect(d.answers[0]).toBe('1200 records stored');
      const recs = await readStream('osquery-results');
      expect(recs.every((r) => r.data.endsWith('\n'))).toBe(true);
      expect(
        seqs(
          recs.map((r) => r.data),
          'kin',
        ),
      ).toEqual(range(1200));
      const first = recs.find((r) => r.data === `${batch[0].line}\n`)!;
      expect(first.key).toBe(batch[0].hostIdentifier);
    });

    it('end to end: agents -> fleetctl server (spool, runner) -> Kinesis, each result line once, keyed by its node', async () => {
      await createStream('e2e-results');
      const ls = await startLogServer();
      try {
        await ls.addSink('kinesis-results', 'kinesis', 'result', cfg('e2e-results'));
        const { results } = await sendSample(ls, 'e2e');
        await until('every result in the stream', async () => (await ls.sink('kinesis-results')).state.delivered === 100, 90);
        const recs = await readStream('e2e-results');
        expect(recs.map((r) => lineKey(JSON.parse(r.data))).sort()).toEqual(results.map(lineKey).sort());
        expect(recs.every((r) => r.key === JSON.parse(r.data).hostIdentifier)).toBe(true);
      } finally {
        await ls.stop();
      }
    });

    it('moto stopped until two PutRecords failed, then started: retried; what was sent before and during lands once', async () => {
      await createStream('outage');
      const sink = await sinkOf(kinesis, cfg('outage'));
      await deliverAll(sink, makeEntries(100, 'kin-before'));
      // moto keeps its streams in memory: what it held is read before it stops, and the stream
      // created again when it is back.
      expect(
        seqs(
          (await readStream('outage')).map((r) => r.data),
          'kin-before',
        ),
      ).toEqual(range(100));
      await moto.pause();
      const retried = deliverThrough(sink, makeEntries(200, 'kin-during'), { pauseMs: 1000, maxAttempts: 300 });
      // Down until two sends failed: the outage was seen and retried.
      await retried.failures(2);
      await moto.resume();
      await createStream('outage');
      const d = await retried.done;
      expect(d.errors[0]).toMatch(/ECONNREFUSED/);
      expect(
        seqs(
          (await readStream('outage')).map((r) => r.data),
          'kin-during',
        ),
      ).toEqual(range(200));
    });

    it('a missing stream fails the batch with what the service said (kept for a retry)', async () => {
      const sink = await sinkOf(kinesis, cfg('no-such-stream'));
      await expect(sink.send(makeEntries(1, 'none'), new AbortController().signal)).rejects.toThrow(/ResourceNotFoundException/);
    });
  });

  it('firehose: one record per line into a delivery stream, delivered by moto into its S3 bucket', async () => {
    const s3c = new S3Client({ ...aws(), forcePathStyle: true });
    await s3c.send(new CreateBucketCommand({ Bucket: 'firehose-dest' }));
    const fh = new FirehoseClient(aws());
    await fh.send(
      new CreateDeliveryStreamCommand({
        DeliveryStreamName: 'osquery-fh',
        DeliveryStreamType: 'DirectPut',
        ExtendedS3DestinationConfiguration: {
          BucketARN: 'arn:aws:s3:::firehose-dest',
          RoleARN: 'arn:aws:iam::123456789012:role/firehose',
          Prefix: 'osquery/',
        },
      }),
    );
    expect(
      (await fh.send(new DescribeDeliveryStreamCommand({ DeliveryStreamName: 'osquery-fh' }))).DeliveryStreamDescription
        ?.DeliveryStreamStatus,
    ).toBe('ACTIVE');
    fh.destroy();
    const sink = await sinkOf(firehose, {
      delivery_stream: 'osquery-fh',
      endpoint: moto.endpoint,
      region: 'us-east-1',
      access_key_id: 'testing',
      secret_access_key: 'testing',
    });
    const d = await deliverAll(sink, makeEntries(700, 'fh'));
    expect(d.answers[0]).toBe('700 records stored');
    const keys =
      (await s3c.send(new ListObjectsV2Command({ Bucket: 'firehose-dest', Prefix: 'osquery/' }))).Contents?.map((c) => c.Key!) ?? [];
    const text: string[] = [];
    for (const Key of keys)
      text.push(await (await s3c.send(new GetObjectCommand({ Bucket: 'firehose-dest', Key }))).Body!.transformToString());
    s3c.destroy();
    expect(seqs(text.join('').split('\n').filter(Boolean), 'fh')).toEqual(range(700));
  });
});
