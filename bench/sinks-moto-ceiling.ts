// moto's own rate (bench:sinks' kinesis and firehose peer) for PutRecords and PutRecordBatch of 500
// bench-sized records, from 1 and 4 clients at once, without fleetctl: the peer's ceiling beside
// bench:sinks' rows (issue 28). npx vite-node bench/sinks-moto-ceiling.ts
import { CreateStreamCommand, DescribeStreamCommand, KinesisClient, PutRecordsCommand } from '@aws-sdk/client-kinesis';
import { CreateDeliveryStreamCommand, FirehoseClient, PutRecordBatchCommand } from '@aws-sdk/client-firehose';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { startMoto } from '../test/helpers/peers/moto.js';
const moto = await startMoto();
const cfg = {
  endpoint: moto.endpoint,
  region: 'us-east-1',
  credentials: { accessKeyId: 'testing', secretAccessKey: 'testing' },
  requestHandler: new NodeHttpHandler(),
};
const k = new KinesisClient(cfg);
const f = new FirehoseClient(cfg);
const s3 = new S3Client({ ...cfg, forcePathStyle: true });
await k.send(new CreateStreamCommand({ StreamName: 'c', ShardCount: 4 }));
while ((await k.send(new DescribeStreamCommand({ StreamName: 'c' }))).StreamDescription?.StreamStatus !== 'ACTIVE')
  await new Promise((r) => setTimeout(r, 200));
await s3.send(new CreateBucketCommand({ Bucket: 'fh-bench' }));
await f.send(
  new CreateDeliveryStreamCommand({
    DeliveryStreamName: 'd',
    S3DestinationConfiguration: { BucketARN: 'arn:aws:s3:::fh-bench', RoleARN: 'arn:aws:iam::123456789012:role/x' },
  }),
);
const line = Buffer.from(
  JSON.stringify({
    name: 'pack_bench_processes',
    hostIdentifier: 'bench-x',
    calendarTime: new Date().toUTCString(),
    unixTime: 1,
    epoch: 0,
    counter: 1,
    numerics: false,
    decorations: { host_uuid: 'bench-x', hostname: 'host-1' },
    columns: {
      pid: '1001',
      name: 'osqueryd',
      path: '/opt/osquery/bin/osqueryd',
      cmdline: '/opt/osquery/bin/osqueryd --flagfile=/etc/osquery/osquery.flags',
      run: 'r',
      seq: '1',
    },
    action: 'added',
  }) + '\n',
);
const total = 20000;
for (const [name, put] of [
  [
    'kinesis PutRecords',
    () =>
      k.send(
        new PutRecordsCommand({
          StreamName: 'c',
          Records: Array.from({ length: 500 }, (_, i) => ({ Data: line, PartitionKey: `h${i % 20}` })),
        }),
      ),
  ],
  [
    'firehose PutRecordBatch',
    () => f.send(new PutRecordBatchCommand({ DeliveryStreamName: 'd', Records: Array.from({ length: 500 }, () => ({ Data: line })) })),
  ],
] as const) {
  for (const par of [1, 4]) {
    let sent = 0;
    const t = performance.now();
    await Promise.all(
      Array.from({ length: par }, async () => {
        while (sent < total) {
          sent += 500;
          await put();
        }
      }),
    );
    console.log(`${name}, ${par} at once: ${Math.round(total / ((performance.now() - t) / 1000))} records/s`);
  }
}
k.destroy();
f.destroy();
s3.destroy();
await moto.stop();
