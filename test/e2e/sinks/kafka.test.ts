// The kafka destination module against a real Apache Kafka 4.4 (KRaft) (issue 28): one message
// per line keyed by host identifier, topics per log type and per query, gzip, SASL PLAIN and
// SCRAM, TLS with our CA, read back by a consumer; a broker restart (its partitions' leader
// elected again) and a 20 s outage are retried without loss or duplicates.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Kafka, logLevel, type KafkaMessage } from 'kafkajs';
import { kafka as kafkaDest } from '../../../src/server/services/delivery/destinations/kafka.js';
import type { Sink } from '../../../src/server/services/delivery/sink.js';
import { deliverAll } from '../../helpers/peers/deliver.js';
import { makeEntries, seqOf } from '../../helpers/peers/entries.js';
import { KAFKA_PASSWORD, KAFKA_USER, startKafka, type Kafka as KafkaPeer } from '../../helpers/peers/kafka.js';
import { describePeers, until } from '../../helpers/peers/peer.js';

const ctx = { name: 'test', sinkDir: '/nonexistent' };
const range = (n: number) => Array.from({ length: n }, (_, i) => i);

describePeers(['kafka'], 'kafka sink against a real Apache Kafka', () => {
  let peer: KafkaPeer;
  const open: Sink[] = [];
  beforeAll(async () => {
    peer = await startKafka();
  });
  afterAll(async () => {
    for (const s of open) await s.close();
    await peer?.stop();
  });
  const sinkOf = async (config: any) => {
    expect(kafkaDest.check?.(config, ctx)).toBeUndefined();
    const s = await kafkaDest.open(config, ctx);
    open.push(s);
    return s;
  };

  /** Every message of a topic, from the beginning. */
  async function readTopic(topic: string, atLeast: number): Promise<KafkaMessage[]> {
    const client = new Kafka({ brokers: [peer.plaintext], logLevel: logLevel.NOTHING });
    const consumer = client.consumer({ groupId: `test-${topic}-${Date.now()}` });
    const got: KafkaMessage[] = [];
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({ eachMessage: async ({ message }) => void got.push(message) });
    try {
      await until(`${atLeast} messages on ${topic}`, () => got.length >= atLeast, 90);
      // Anything more (a duplicate) would arrive with the same fetch: give it one more poll.
      await new Promise((r) => setTimeout(r, 1000));
    } finally {
      await consumer.disconnect();
    }
    return got;
  }
  const seqsOf = (msgs: KafkaMessage[], run: string) => msgs.map((m) => seqOf(JSON.parse(m.value!.toString()))).filter((s) => s?.run === run).map((s) => s!.seq).sort((a, b) => a - b);

  it('one message per line, key = host identifier, default topic per log type, gzip', async () => {
    const sink = await sinkOf({ brokers: [peer.plaintext], compression: 'gzip' });
    const results = makeEntries(500, 'plain');
    const status = makeEntries(20, 'plain-status', { logType: 'status' });
    const d = await deliverAll(sink, [...results, ...status]);
    expect(d.answers.at(-1)).toMatch(/acknowledged by all in-sync replicas: .*osquery_result\[0\]@\d+/);
    const msgs = await readTopic('osquery_result', 500);
    expect(seqsOf(msgs, 'plain')).toEqual(range(500));
    expect(msgs[0]!.key!.toString()).toBe(results[0]!.hostIdentifier);
    expect(msgs[0]!.value!.toString()).toBe(results[0]!.line);
    expect(seqsOf(await readTopic('osquery_status', 20), 'plain-status')).toEqual(range(20));
  });

  it('a topic per query (topics) beside the configured topic', async () => {
    const sink = await sinkOf({ brokers: [peer.plaintext], topic: 'osquery-all', topics: { pack_special: 'osquery-special' } });
    await deliverAll(sink, [...makeEntries(30, 'routed'), ...makeEntries(10, 'special', { name: 'pack_special' })]);
    expect(seqsOf(await readTopic('osquery-all', 30), 'routed')).toEqual(range(30));
    expect(seqsOf(await readTopic('osquery-special', 10), 'special')).toEqual(range(10));
  });

  it('SASL PLAIN and SCRAM-SHA-256; a wrong password fails with what the broker said', async () => {
    for (const mechanism of ['plain', 'scram-sha-256'] as const) {
      const sink = await sinkOf({ brokers: [peer.sasl], topic: `sasl-${mechanism}`, sasl: { mechanism, username: KAFKA_USER, password: KAFKA_PASSWORD } });
      await deliverAll(sink, makeEntries(10, `sasl-${mechanism}`));
      expect(seqsOf(await readTopic(`sasl-${mechanism}`, 10), `sasl-${mechanism}`)).toEqual(range(10));
    }
    const bad = await sinkOf({ brokers: [peer.sasl], sasl: { mechanism: 'scram-sha-256', username: KAFKA_USER, password: 'wrong' } });
    await expect(bad.send(makeEntries(1, 'bad'), new AbortController().signal)).rejects.toThrow(/kafka: .*(SASL|authentication|Authentication)/);
  });

  it('TLS with the configured CA', async () => {
    const sink = await sinkOf({ brokers: [peer.ssl], topic: 'over-tls', tls: true, ca: peer.ca });
    await deliverAll(sink, makeEntries(10, 'tls'));
    expect(seqsOf(await readTopic('over-tls', 10), 'tls')).toEqual(range(10));
  });

  it('the broker stopped 20 s and started again (its partitions get a leader again): retried, none lost, none doubled', async () => {
    const sink = await sinkOf({ brokers: [peer.plaintext], topic: 'outage' });
    await deliverAll(sink, makeEntries(100, 'outage-before'));
    await peer.pause();
    const during = makeEntries(200, 'outage');
    const retried = deliverAll(sink, during, { pauseMs: 1000, maxAttempts: 300 });
    await new Promise((r) => setTimeout(r, 20_000));
    await peer.resume();
    const d = await retried;
    expect(d.attempts).toBeGreaterThan(1);
    expect(d.errors.join('\n')).toMatch(/kafka: /);
    const msgs = await readTopic('outage', 300);
    expect(seqsOf(msgs, 'outage-before')).toEqual(range(100));
    expect(seqsOf(msgs, 'outage')).toEqual(range(200));
  });

  it('bad configs are refused naming the field', () => {
    expect(kafkaDest.check?.({ brokers: ['nohost'] }, ctx)?.field).toBe('brokers[0]');
    expect(kafkaDest.check?.({ brokers: ['a:1'], topic: 'bad topic' }, ctx)?.field).toBe('topic');
    expect(kafkaDest.check?.({ brokers: ['a:1'], topics: { q: 'x/y' } }, ctx)?.field).toBe('topics.q');
    expect(kafkaDest.check?.({ brokers: ['a:1'], ca: 'x' }, ctx)?.field).toBe('ca');
  });
});
