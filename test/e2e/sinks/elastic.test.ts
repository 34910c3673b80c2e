// The elastic destination module against a real OpenSearch 2.19 and a real Elasticsearch 8.19
// (issue 28), one after the other: `_bulk` into daily indices with @timestamp from the log, each
// line once; item failures: a document the index cannot map is rejected, items whose index
// cannot be created now are retried alone until they can; a resent batch finds its documents
// there (no duplicate); an outage of the server (sends fail, then it is back) loses nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { elastic, indexOf } from '../../../src/server/services/delivery/destinations/elastic.js';
import type { Sink } from '../../../src/server/services/delivery/sink.js';
import { deliverAll, deliverThrough } from '../../helpers/peers/deliver.js';
import { makeEntries, seqOf } from '../../helpers/peers/entries.js';
import { describePeers } from '../../helpers/peers/describe.js';
import { until } from '../../helpers/peers/peer.js';
import { startSearch, type SearchKind, type SearchServer } from '../../helpers/peers/search.js';
import { lineKey, sendSample, startLogServer } from '../../helpers/peers/log-server.js';

const ctx = { name: 'test', sinkDir: '/nonexistent' };
const range = (n: number) => Array.from({ length: n }, (_, i) => i);
const seqs = (docs: Record<string, unknown>[], run: string) =>
  docs
    .map(seqOf)
    .filter((s) => s?.run === run)
    .map((s) => s!.seq)
    .sort((a, b) => a - b);

function suite(kind: SearchKind) {
  describe(kind, () => {
    let es: SearchServer;
    const open: Sink[] = [];
    beforeAll(async () => {
      es = await startSearch(kind);
    });
    afterAll(async () => {
      for (const s of open) await s.close();
      await es?.stop();
    });
    const sinkOf = async (config: any) => {
      expect(elastic.check?.(config, ctx)).toBeUndefined();
      const s = await elastic.open(config, ctx);
      open.push(s);
      return s;
    };
    const setting = async (persistent: Record<string, unknown>) => {
      const r = await fetch(`${es.url}/_cluster/settings`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ persistent }),
      });
      expect(r.status).toBe(200);
    };

    it('daily indices per log type, @timestamp from the log, each line once', async () => {
      const sink = await sinkOf({ url: es.url, index: 'fleet' });
      const day1 = Date.UTC(2026, 10, 24, 23, 59, 0) / 1000;
      const results = [...makeEntries(300, 'bulk', { time: day1 }), ...makeEntries(200, 'bulk2', { time: day1 + 120 })];
      const status = makeEntries(20, 'bulk-status', { logType: 'status', time: day1 });
      const d = await deliverAll(sink, [...results, ...status]);
      expect(d.answers[0]).toMatch(/^HTTP 200: 520 created$/);
      expect(await es.indices('fleet-*')).toEqual(['fleet-result-2026.11.24', 'fleet-result-2026.11.25', 'fleet-status-2026.11.24']);
      const docs = await es.documents('fleet-result-*');
      expect(seqs(docs, 'bulk')).toEqual(range(300));
      expect(seqs(docs, 'bulk2')).toEqual(range(200));
      const first = docs.find((x) => seqOf(x)?.run === 'bulk' && seqOf(x)?.seq === 0)!;
      expect(first['@timestamp']).toBe('2026-11-24T23:59:00.000Z');
      expect(first).toMatchObject({ ...JSON.parse(results[0].line), _index: 'fleet-result-2026.11.24' });
      expect(seqs(await es.documents('fleet-status-*'), 'bulk-status')).toEqual(range(20));
    });

    it('a batch sent again finds its documents (409): no duplicate', async () => {
      const sink = await sinkOf({ url: es.url, index: 'again' });
      const batch = makeEntries(50, 'again');
      await deliverAll(sink, batch);
      const second = await deliverAll(sink, batch);
      expect(second.answers[0]).toMatch(/0 created, 50 already there/);
      expect(seqs(await es.documents('again-*'), 'again')).toEqual(range(50));
    });

    it('item failures: unmappable documents rejected, items whose index cannot be created now retried alone', async () => {
      const sink = await sinkOf({ url: es.url, index: 'items' });
      const time = Date.UTC(2026, 10, 20) / 1000;
      await deliverAll(sink, makeEntries(5, 'items-first', { time }));
      // From now on no index may be created: the next day's items fail with 404 in a 200 answer.
      await setting({ 'action.auto_create_index': 'false' });
      const good = makeEntries(10, 'items', { time });
      const nextDay = makeEntries(10, 'items-next', { time: time + 86_400 });
      // columns is an object in this index: a document where it is a string cannot be mapped.
      const bad = { ...makeEntries(1, 'items-bad', { time })[0] };
      bad.line = bad.line.replace(/"columns":\{[^}]*\}/, '"columns":"not an object"');
      const pending = deliverThrough(sink, [...good, bad, ...nextDay], { pauseMs: 1000 });
      // Once the first bulk answered (the next day's items to retry), their index may be created.
      await pending.failures(1);
      await setting({ 'action.auto_create_index': null });
      const d = await pending.done;
      expect(d.answers[0]).toMatch(
        /10 created, 10 to retry \(404 index_not_found_exception.*1 rejected \((400 )?(mapper_parsing_exception|document_parsing_exception)/,
      );
      expect(d.rejected.map((e) => e.id)).toEqual([bad.id]);
      expect(seqs(await es.documents('items-*'), 'items')).toEqual(range(10));
      expect(seqs(await es.documents('items-*'), 'items-next')).toEqual(range(10));
    });

    it('end to end: agents -> fleetctl server (spool, runner) -> bulk, each result and status line once, with its node and query', async () => {
      const ls = await startLogServer();
      try {
        await ls.addSink('es-results', 'elastic', 'result', { url: es.url, index: 'e2e' });
        await ls.addSink('es-status', 'elastic', 'status', { url: es.url, index: 'e2e' });
        const { results, status } = await sendSample(ls, 'e2e');
        await until(
          'every line indexed',
          async () => (await ls.sink('es-results')).state.delivered === 100 && (await ls.sink('es-status')).state.delivered === 10,
          90,
        );
        const docs = await es.documents('e2e-result-*');
        expect(docs.map(lineKey).sort()).toEqual(results.map(lineKey).sort());
        expect((await es.documents('e2e-status-*')).map(lineKey).sort()).toEqual(status.map(lineKey).sort());
        expect(docs.every((d) => typeof d['@timestamp'] === 'string')).toBe(true);
      } finally {
        await ls.stop();
      }
    });

    it('the server stopped until two sends failed, then started: retried, nothing lost or doubled', async () => {
      const sink = await sinkOf({ url: es.url, index: 'outage' });
      await deliverAll(sink, makeEntries(100, 'outage-before'));
      await es.pause();
      const during = makeEntries(200, 'outage');
      const retried = deliverThrough(sink, during, { pauseMs: 1000, maxAttempts: 600 });
      // Down until two sends failed: the outage was seen and retried.
      await retried.failures(2);
      await es.resume();
      const d = await retried.done;
      expect(d.errors[0]).toMatch(/ECONNREFUSED/);
      const docs = await es.documents('outage-*');
      expect(seqs(docs, 'outage-before')).toEqual(range(100));
      expect(seqs(docs, 'outage')).toEqual(range(200));
    });
  });
}

describePeers(['opensearch', 'elasticsearch'], 'elastic sink against real OpenSearch and Elasticsearch', () => {
  suite('opensearch');
  suite('elasticsearch');

  it('index names and bad configs', () => {
    expect(indexOf('osquery', { logType: 'result', time: Date.UTC(2026, 0, 2, 3) / 1000 })).toBe('osquery-result-2026.01.02');
    expect(elastic.check?.({ url: 'ftp://x' }, ctx)?.field).toBe('url');
    expect(elastic.check?.({ url: 'http://x', index: 'Upper' }, ctx)?.field).toBe('index');
    expect(elastic.check?.({ url: 'http://x', api_key: 'k', username: 'u' }, ctx)?.field).toBe('api_key');
    expect(elastic.check?.({ url: 'http://x', password: 'p' }, ctx)?.field).toBe('username');
  });
});
