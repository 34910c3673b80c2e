// The peers of `npm run bench:sinks` (bench/sinks.ts): for each sink type, how to start its real
// peer (the test helpers in test/helpers/peers/), the sink config that reaches it, one that
// cannot (a closed port: the backlog waits in the spool), and how many lines of a run the peer
// holds afterwards, counted at the peer.
import { gunzipSync } from 'node:zlib';
import { Kafka, logLevel } from 'kafkajs';
import {
  CreateStreamCommand,
  DescribeStreamCommand,
  GetRecordsCommand,
  GetShardIteratorCommand,
  KinesisClient,
  ListShardsCommand,
} from '@aws-sdk/client-kinesis';
import { CreateDeliveryStreamCommand, FirehoseClient } from '@aws-sdk/client-firehose';
import { CreateBucketCommand, GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { startGelfReader } from '../test/helpers/peers/gelf.js';
import { startHecStandIn } from '../test/helpers/peers/hec.js';
import { startKafka } from '../test/helpers/peers/kafka.js';
import { startMoto } from '../test/helpers/peers/moto.js';
import { freePort } from '../test/helpers/peers/peer.js';
import { startRsyslog } from '../test/helpers/peers/rsyslog.js';
import { startSearch, type SearchKind } from '../test/helpers/peers/search.js';
import { S3_ACCESS_KEY, S3_SECRET_KEY, startVersitygw } from '../test/helpers/peers/versitygw.js';

export interface RunningPeer {
  config: Record<string, unknown>;
  closedConfig: Record<string, unknown>;
  /** Lines of this run held by the peer. */
  count(run: string): Promise<number>;
  stop(): Promise<void>;
}

export interface PeerSetup {
  type: string;
  /** Distinguishes two setups of one type (opensearch, elasticsearch). */
  name: string;
  peer: string;
  start(): Promise<RunningPeer>;
}

const hasRun = (text: string, run: string) => text.includes(`"run":"${run}"`);

function search(kind: SearchKind): PeerSetup {
  return {
    type: 'elastic',
    name: kind,
    peer: kind === 'opensearch' ? 'OpenSearch 2.19.6' : 'Elasticsearch 8.19.2',
    async start() {
      const es = await startSearch(kind);
      // The day's index exists before the clock starts, as the bucket and the streams of the other
      // setups do: creating it is a one-time cost of seconds (5.4 s before the first acknowledgement
      // on OpenSearch at load 11), not a rate. Today's and tomorrow's (a run across midnight UTC).
      for (const day of [0, 1]) {
        const d = new Date(Date.now() + day * 86_400_000).toISOString();
        const r = await fetch(`${es.url}/bench-result-${d.slice(0, 4)}.${d.slice(5, 7)}.${d.slice(8, 10)}`, { method: 'PUT' });
        if (!r.ok) throw new Error(`create the bench index: HTTP ${r.status} ${await r.text()}`);
      }
      const closed = await freePort();
      return {
        config: { url: es.url, index: 'bench' },
        closedConfig: { url: `http://127.0.0.1:${closed}`, index: 'bench' },
        async count() {
          await fetch(`${es.url}/bench-*/_refresh`, { method: 'POST' });
          return ((await (await fetch(`${es.url}/bench-*/_count`)).json()) as { count: number }).count;
        },
        stop: () => es.stop(),
      };
    },
  };
}

const aws = (endpoint: string) => ({
  endpoint,
  region: 'us-east-1',
  credentials: { accessKeyId: 'testing', secretAccessKey: 'testing' },
  requestHandler: new NodeHttpHandler(),
});

export function peerSetups(): PeerSetup[] {
  return [
    {
      type: 'syslog',
      name: 'syslog',
      peer: 'rsyslog 8.2302 (TCP)',
      async start() {
        const rs = await startRsyslog();
        return {
          config: { url: `tcp://127.0.0.1:${rs.tcp}` },
          closedConfig: { url: `tcp://127.0.0.1:${await freePort()}` },
          count: async (run) => rs.messages('tcp').filter((m) => hasRun(m.msg, run)).length,
          stop: () => rs.stop(),
        };
      },
    },
    {
      type: 'kafka',
      name: 'kafka',
      peer: 'Apache Kafka 4.4.0',
      async start() {
        const k = await startKafka();
        // The topic exists before the clock starts (the other setups create their bucket and
        // streams): auto-creating it and electing its leader took ~2 s of a 2.6 s run at load 11.
        const admin = new Kafka({ brokers: [k.plaintext], logLevel: logLevel.NOTHING }).admin();
        await admin.connect();
        await admin.createTopics({ topics: [{ topic: 'bench', numPartitions: 1 }], waitForLeaders: true });
        await admin.disconnect();
        return {
          config: { brokers: [k.plaintext], topic: 'bench', compression: 'gzip' },
          closedConfig: { brokers: [`127.0.0.1:${await freePort()}`], topic: 'bench' },
          async count() {
            const admin = new Kafka({ brokers: [k.plaintext], logLevel: logLevel.NOTHING }).admin();
            await admin.connect();
            const offsets = await admin.fetchTopicOffsets('bench');
            await admin.disconnect();
            return offsets.reduce((n, o) => n + Number(o.high) - Number(o.low), 0);
          },
          stop: () => k.stop(),
        };
      },
    },
    search('opensearch'),
    search('elasticsearch'),
    {
      type: 's3',
      name: 's3',
      peer: 'versitygw 1.8.0',
      async start() {
        const gw = await startVersitygw();
        gw.createBucket('bench');
        const base = {
          bucket: 'bench',
          region: 'us-east-1',
          force_path_style: true,
          access_key_id: S3_ACCESS_KEY,
          secret_access_key: S3_SECRET_KEY,
          max_object_seconds: 1,
        };
        return {
          config: { ...base, endpoint: gw.endpoint },
          closedConfig: { ...base, endpoint: `http://127.0.0.1:${await freePort()}` },
          count: async (run) =>
            [...gw.objects('bench').values()].reduce(
              (n, b) =>
                n +
                gunzipSync(b)
                  .toString('utf8')
                  .split('\n')
                  .filter((l) => hasRun(l, run)).length,
              0,
            ),
          stop: () => gw.stop(),
        };
      },
    },
    {
      type: 'kinesis',
      name: 'kinesis',
      peer: 'moto 5.2.5 (emulator)',
      async start() {
        const moto = await startMoto();
        const k = new KinesisClient(aws(moto.endpoint));
        await k.send(new CreateStreamCommand({ StreamName: 'bench', ShardCount: 4 }));
        while ((await k.send(new DescribeStreamCommand({ StreamName: 'bench' }))).StreamDescription?.StreamStatus !== 'ACTIVE')
          await new Promise((r) => setTimeout(r, 200));
        const base = { stream: 'bench', region: 'us-east-1', access_key_id: 'testing', secret_access_key: 'testing' };
        return {
          config: { ...base, endpoint: moto.endpoint },
          closedConfig: { ...base, endpoint: `http://127.0.0.1:${await freePort()}` },
          async count(run) {
            let n = 0;
            for (const shard of (await k.send(new ListShardsCommand({ StreamName: 'bench' }))).Shards ?? []) {
              let it = (
                await k.send(
                  new GetShardIteratorCommand({ StreamName: 'bench', ShardId: shard.ShardId!, ShardIteratorType: 'TRIM_HORIZON' }),
                )
              ).ShardIterator;
              for (;;) {
                const r = await k.send(new GetRecordsCommand({ ShardIterator: it!, Limit: 10_000 }));
                n += (r.Records ?? []).filter((x) => hasRun(Buffer.from(x.Data!).toString('utf8'), run)).length;
                if (!r.Records?.length) break;
                it = r.NextShardIterator;
              }
            }
            return n;
          },
          async stop() {
            k.destroy();
            await moto.stop();
          },
        };
      },
    },
    {
      type: 'firehose',
      name: 'firehose',
      peer: 'moto 5.2.5 (emulator)',
      async start() {
        const moto = await startMoto();
        const s3 = new S3Client({ ...aws(moto.endpoint), forcePathStyle: true });
        await s3.send(new CreateBucketCommand({ Bucket: 'bench-fh' }));
        const fh = new FirehoseClient(aws(moto.endpoint));
        await fh.send(
          new CreateDeliveryStreamCommand({
            DeliveryStreamName: 'bench',
            DeliveryStreamType: 'DirectPut',
            ExtendedS3DestinationConfiguration: {
              BucketARN: 'arn:aws:s3:::bench-fh',
              RoleARN: 'arn:aws:iam::123456789012:role/firehose',
              Prefix: 'b/',
            },
          }),
        );
        fh.destroy();
        const base = { delivery_stream: 'bench', region: 'us-east-1', access_key_id: 'testing', secret_access_key: 'testing' };
        return {
          config: { ...base, endpoint: moto.endpoint },
          closedConfig: { ...base, endpoint: `http://127.0.0.1:${await freePort()}` },
          async count(run) {
            let n = 0;
            let token: string | undefined;
            do {
              const page = await s3.send(new ListObjectsV2Command({ Bucket: 'bench-fh', ContinuationToken: token }));
              for (const o of page.Contents ?? [])
                n += (await (await s3.send(new GetObjectCommand({ Bucket: 'bench-fh', Key: o.Key! }))).Body!.transformToString())
                  .split('\n')
                  .filter((l) => hasRun(l, run)).length;
              token = page.NextContinuationToken;
            } while (token);
            return n;
          },
          async stop() {
            s3.destroy();
            await moto.stop();
          },
        };
      },
    },
    {
      type: 'splunk',
      name: 'splunk',
      peer: 'HEC stand-in (ours)',
      async start() {
        const hec = await startHecStandIn();
        return {
          config: { url: hec.url, token: hec.token },
          closedConfig: { url: `http://127.0.0.1:${await freePort()}`, token: hec.token },
          count: async (run) => hec.events.filter((e) => (e.event as any)?.columns?.run === run).length,
          stop: () => hec.close(),
        };
      },
    },
    {
      type: 'graylog',
      name: 'graylog',
      peer: 'go-gelf reader (UDP)',
      async start() {
        const r = await startGelfReader();
        return {
          config: { url: `udp://127.0.0.1:${r.port}` },
          // Not UDP to a closed port while filling: the first datagrams would count as sent (the
          // kernel reports the port unreachable only on a later send). A closed TCP port instead.
          closedConfig: { url: `tcp://127.0.0.1:${await freePort()}` },
          count: async (run) => r.messages().filter((m) => m._columns_run === run).length,
          stop: () => r.stop(),
        };
      },
    },
    {
      type: 'logstash',
      name: 'logstash',
      peer: 'rsyslog 8.2302 (json_lines over TCP)',
      async start() {
        const rs = await startRsyslog();
        return {
          config: { url: `tcp://127.0.0.1:${rs.tcp}` },
          closedConfig: { url: `tcp://127.0.0.1:${await freePort()}` },
          count: async (run) => rs.messages('tcp').filter((m) => hasRun(m.raw, run)).length,
          stop: () => rs.stop(),
        };
      },
    },
  ];
}
