// `npm run bench:sinks -- --outage`: 1,000 simulated agents (src/agent-sim, osquery's protocol and
// 4 s logger period; a 10 s snapshot query, so every agent logs a result line every 10 s all
// along: a differential one stops logging once its rows stop changing) send result logs into a kafka
// sink (Apache Kafka 4.4.0) and an elastic sink (Elasticsearch 8.19.2, as the issue says, or
// OpenSearch 2.19.6 with --search opensearch) of one server. Kafka is stopped for --outage-seconds
// (60) and started again; once its sink has drained what it held when Kafka came back, the search
// server is stopped as long and started again. The agents go on logging all along. The drain time
// is from the peer's start until the sink's delivered count reaches what it had delivered plus
// its backlog at that moment. Then the agents stop, both sinks drain, and every result line the
// server acknowledged to an agent (a 200 to its log request) is looked up at each peer: lines
// missing (lost) and lines found more than once (duplicates) are counted.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { startKafka } from '../test/helpers/peers/kafka.js';
import { startSearch, type SearchKind } from '../test/helpers/peers/search.js';
import type { BenchServer } from './sinks.js';

const root = join(import.meta.dirname, '..');
const arg = (name: string, def: string) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : def;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const load = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

/** A line's identity: host, query, counter and time (a result line of one agent is unique by them). */
const identity = (l: any) =>
  `${l.hostIdentifier}|${l.name}|${l.counter}|${l.unixTime}|${l.action}|${JSON.stringify(l.columns ?? l.snapshot ?? null)}`;

export async function outageRun(o: {
  startBenchServer: (dir: string, extra?: string[]) => Promise<BenchServer>;
  tmp: string;
}): Promise<void> {
  const AGENTS = Number(arg('--agents', '1000'));
  const OUTAGE_S = Number(arg('--outage-seconds', '60'));
  const SEARCH = arg('--search', 'elasticsearch') as SearchKind;
  if (SEARCH !== 'elasticsearch' && SEARCH !== 'opensearch')
    throw new Error(`--search: elasticsearch or opensearch, not ${String(SEARCH)}`);
  const SEARCH_NAME = SEARCH === 'elasticsearch' ? 'Elasticsearch' : 'OpenSearch';
  const { Simulator, parseAgentFlags } = await import(join(root, 'dist', 'agent-sim.js'));
  const kafka = await startKafka();
  const os = await startSearch(SEARCH);
  const s = await o.startBenchServer(o.tmp, []);
  const acked = new Map<string, number>();
  let sim: any;
  try {
    const put = await s.api('PUT', '/api/v1/environments/prod/config/schedule', {
      procs: { query: 'SELECT pid, name FROM processes LIMIT 3', interval: 10, snapshot: true },
    });
    if (put.status !== 200) throw new Error(`schedule: ${put.status} ${JSON.stringify(put.body)}`);
    const sinks: Record<string, number> = {};
    for (const [name, type, config] of [
      ['outage-kafka', 'kafka', { brokers: [kafka.plaintext], topic: 'outage' }],
      ['outage-search', 'elastic', { url: os.url, index: 'outage' }],
    ] as const) {
      const r = await s.api('POST', '/api/v1/log-sinks', { name, type, source: 'result', environment_id: 0, config });
      if (r.status !== 200) throw new Error(`sink ${name}: ${r.status} ${JSON.stringify(r.body)}`);
      sinks[name] = r.body.id;
    }
    const flags = parseAgentFlags(String((await s.api('GET', '/api/v1/environments/prod/enroll/flags')).body.data));
    sim = new Simulator({
      flags,
      secret: s.secret,
      seed: 'sinks-outage',
      ca: readFileSync(join(o.tmp, 'agent.crt')),
      connect: s.agentAddress,
      connections: 64,
      maxInFlight: 512,
      spread: true,
      timeoutMs: 60_000,
      intervals: { config: 10_000, log: 4_000, distributed: 60_000 },
      onLogs: (_uuid: string, type: string, data: object[]) => {
        if (type !== 'result') return;
        for (const l of data) {
          const k = identity(l);
          acked.set(k, (acked.get(k) ?? 0) + 1);
        }
      },
    });
    console.log(
      `bench:sinks --outage: ${AGENTS} agents, result logs to kafka (Apache Kafka ${kafka.version}) and elastic (${SEARCH_NAME} ${os.version}) sinks, each stopped ${OUTAGE_S} s in turn; load ${load()}`,
    );
    sim.add(AGENTS);
    type SinkState = { delivered: number; rejected?: number; backlog_entries: number; last_error?: string | null };
    const state = async (id: number): Promise<SinkState | undefined> =>
      ((await s.api('GET', '/api/v1/log-sinks?environment_id=0')).body as { id: number; state?: SinkState }[]).find((x) => x.id === id)
        ?.state;
    const t0 = Date.now();
    while (sim.enrolled < AGENTS || acked.size === 0) {
      if (Date.now() - t0 > 300_000) throw new Error(`only ${sim.enrolled} agents enrolled`);
      await sleep(500);
    }
    await sleep(20_000);
    for (const [peer, id, stop, start] of [
      ['Kafka', sinks['outage-kafka'], () => kafka.pause(), () => kafka.resume()],
      [SEARCH_NAME, sinks['outage-search'], () => os.pause(), () => os.resume()],
    ] as const) {
      const before = acked.size;
      await stop();
      const down = Date.now();
      await sleep(OUTAGE_S * 1000);
      const starting = Date.now();
      await start();
      const st = await state(id);
      const target = Number(st?.delivered) + Number(st?.backlog_entries);
      console.log(
        `  ${peer} stopped ${((starting - down) / 1000).toFixed(0)} s (serving again ${((Date.now() - starting) / 1000).toFixed(0)} s after its start): ${acked.size - before} distinct result lines acknowledged to agents meanwhile; its sink's backlog then: ${st?.backlog_entries} entries, last error: ${st?.last_error ?? '-'}`,
      );
      for (;;) {
        const now = await state(id);
        if (Number(now?.delivered) + Number(now?.rejected ?? 0) >= target) break;
        await sleep(200);
      }
      console.log(
        `  ${peer}'s sink delivered that backlog ${((Date.now() - starting) / 1000).toFixed(1)} s after the peer's start (its start included); load ${load()}`,
      );
    }
    await sim.stop(10_000);
    sim = undefined;
    for (const id of Object.values(sinks)) while (Number((await state(id))?.backlog_entries) > 0) await sleep(500);
    const total = [...acked.values()].reduce((a, b) => a + b, 0);
    // Kafka: every message of the topic.
    const consumer = new Kafka({ brokers: [kafka.plaintext], logLevel: logLevel.NOTHING }).consumer({ groupId: `outage-${Date.now()}` });
    const inKafka = new Map<string, number>();
    let kafkaCount = 0;
    await consumer.connect();
    await consumer.subscribe({ topic: 'outage', fromBeginning: true });
    await consumer.run({
      eachBatch: async ({ batch }) => {
        for (const m of batch.messages) {
          kafkaCount++;
          const k = identity(JSON.parse(m.value!.toString()));
          inKafka.set(k, (inKafka.get(k) ?? 0) + 1);
        }
      },
    });
    const k0 = Date.now();
    let last = -1;
    while (kafkaCount !== last || Date.now() - k0 < 10_000) {
      last = kafkaCount;
      await sleep(3000);
    }
    await consumer.disconnect();
    // OpenSearch: every document (scrolled).
    const inOs = new Map<string, number>();
    for (const d of await os.documents('outage-*')) {
      const k = identity(d);
      inOs.set(k, (inOs.get(k) ?? 0) + 1);
    }
    for (const [peer, got] of [
      ['Kafka', inKafka],
      [SEARCH_NAME, inOs],
    ] as const) {
      let lost = 0;
      let dup = 0;
      for (const [k, n] of acked) lost += Math.max(0, n - (got.get(k) ?? 0));
      for (const [k, n] of got) dup += Math.max(0, n - (acked.get(k) ?? 0));
      console.log(
        `  ${peer}: ${total} acknowledged result lines; lost ${lost}; duplicates ${dup} (lines at the peer: ${[...got.values()].reduce((a, b) => a + b, 0)})`,
      );
    }
    console.log(`  load ${load()}`);
  } finally {
    await sim?.stop(5000);
    await s.stop();
    await kafka.stop();
    await os.stop();
  }
}
