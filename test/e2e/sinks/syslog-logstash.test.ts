// The syslog and logstash destination modules against a real rsyslog (issue 28): what arrives,
// parsed by rsyslog itself, over UDP, TCP (RFC 6587 octet counting; newline framing for
// json_lines) and TLS (RFC 5425, our private CA); a stopped rsyslog fails the send (retried) and
// nothing acknowledged is lost when it comes back.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { syslog } from '../../../src/server/services/delivery/destinations/syslog.js';
import { logstash } from '../../../src/server/services/delivery/destinations/logstash.js';
import type { Sink } from '../../../src/server/services/delivery/sink.js';
import { deliverAll, deliverThrough } from '../../helpers/peers/deliver.js';
import { makeEntries, seqOf } from '../../helpers/peers/entries.js';
import { describePeers } from '../../helpers/peers/describe.js';
import { until } from '../../helpers/peers/peer.js';
import { startRsyslog, type Rsyslog } from '../../helpers/peers/rsyslog.js';
import { startLogServer } from '../../helpers/peers/log-server.js';

const ctx = { name: 'test', sinkDir: '/nonexistent' };
const seqs = (logs: unknown[], run: string) =>
  logs
    .map(seqOf)
    .filter((s) => s?.run === run)
    .map((s) => s!.seq)
    .sort((a, b) => a - b);
const range = (n: number) => Array.from({ length: n }, (_, i) => i);

describePeers(['rsyslog'], 'syslog and logstash sinks against a real rsyslog', () => {
  let rs: Rsyslog;
  const open: Sink[] = [];
  beforeAll(async () => {
    rs = await startRsyslog();
  });
  afterAll(async () => {
    for (const s of open) await s.close();
    await rs?.stop();
  });
  const sinkOf = async (d: typeof syslog | typeof logstash, config: any) => {
    expect(d.check?.(config, ctx)).toBeUndefined();
    const s = await d.open(config, ctx);
    open.push(s);
    return s;
  };

  it('TCP: RFC 5424 with octet counting, osquery facility and severities, each line once', async () => {
    const sink = await sinkOf(syslog, { url: `tcp://127.0.0.1:${rs.tcp}` });
    const results = makeEntries(300, 'tcp');
    const status = [0, 1, 2, 3].flatMap((severity) => makeEntries(2, `tcp-s${severity}`, { logType: 'status', severity }));
    await deliverAll(sink, [...results, ...status]);
    await until('rsyslog wrote 308 TCP messages', () => rs.messages('tcp').length >= 308, 60);
    const got = rs.messages('tcp');
    expect(got).toHaveLength(308);
    expect(
      seqs(
        got.map((m) => JSON.parse(m.msg)),
        'tcp',
      ),
    ).toEqual(range(300));
    const first = got.find((m) => m.msg === results[0].line)!;
    expect(first).toMatchObject({
      facility: 'local3',
      severity: 'info',
      appname: 'osqueryd',
      msgid: 'result',
      hostname: results[0].hostname,
      pri: String(19 * 8 + 6),
    });
    expect(Date.parse(first.timestamp)).toBe(results[0].time * 1000);
    const sev = (run: string) => got.filter((m) => m.msg.includes(`run ${run} `)).map((m) => m.severity);
    expect([sev('tcp-s0'), sev('tcp-s1'), sev('tcp-s2'), sev('tcp-s3')]).toEqual([
      ['notice', 'notice'],
      ['warning', 'warning'],
      ['err', 'err'],
      ['crit', 'crit'],
    ]);
  });

  it('UDP: one datagram per message, facility configurable; a line too big for a datagram is rejected', async () => {
    const sink = await sinkOf(syslog, { url: `udp://127.0.0.1:${rs.udp}`, facility: 'local7' });
    const small = makeEntries(50, 'udp');
    const big = makeEntries(1, 'udp-big', { pad: 70_000 });
    const d = await deliverAll(sink, [...small, ...big]);
    expect(d.rejected.map((e) => e.id)).toEqual([big[0].id]);
    await until('rsyslog wrote 50 UDP messages', () => rs.messages('udp').length >= 50, 60);
    const got = rs.messages('udp');
    expect(
      seqs(
        got.map((m) => JSON.parse(m.msg)),
        'udp',
      ),
    ).toEqual(range(50));
    expect(new Set(got.map((m) => m.facility))).toEqual(new Set(['local7']));
  });

  it('TLS (RFC 5425): trusts the configured CA, refuses a server it does not', async () => {
    const sink = await sinkOf(syslog, { url: `tls://127.0.0.1:${rs.tls}`, ca: rs.ca });
    await deliverAll(sink, makeEntries(100, 'tls'));
    await until('rsyslog wrote 100 TLS messages', () => rs.messages('tls').length >= 100, 60);
    expect(
      seqs(
        rs.messages('tls').map((m) => JSON.parse(m.msg)),
        'tls',
      ),
    ).toEqual(range(100));
    const untrusting = await syslog.open({ url: `tls://127.0.0.1:${rs.tls}` }, ctx);
    await expect(untrusting.send(makeEntries(1, 'tls-bad'), new AbortController().signal)).rejects.toThrow(
      /SELF_SIGNED|UNABLE_TO_VERIFY|self[- ]signed|unable to verify/i,
    );
    await untrusting.close();
  });

  it('end to end: agents -> fleetctl server (spool, runner) -> rsyslog over TLS and json_lines over TCP, each line once with its node and query', async () => {
    const ls = await startLogServer();
    try {
      await ls.addSink('syslog-results', 'syslog', 'result', { url: `tls://127.0.0.1:${rs.tls}`, ca: rs.ca });
      await ls.addSink('syslog-status', 'syslog', 'status', { url: `tls://127.0.0.1:${rs.tls}`, facility: 'local5' });
      await ls.addSink('logstash-results', 'logstash', 'result', { url: `tcp://127.0.0.1:${rs.tcp}` });
      // A status sink whose CA is missing cannot verify rsyslog's certificate: it keeps failing (and
      // is shown failing) while the others deliver.
      const [a, b] = [await ls.agent(), await ls.agent()];
      const sent = [
        ...(await a.results('pack_e2e_processes', 'e2e', range(60))),
        ...(await b.results(
          'pack_e2e_users',
          'e2e',
          range(60).map((i) => 60 + i),
        )),
      ];
      const status = await a.status('e2e-status', 5, 1);
      await until(
        '120 results over TLS and json_lines',
        () =>
          rs.messages('tls').filter((m) => m.msg.includes('"e2e"')).length >= 120 &&
          rs.messages('tcp').filter((m) => m.raw.includes('"e2e"')).length >= 120,
        90,
      );
      const tls = rs.messages('tls').filter((m) => m.msg.includes('"e2e"'));
      const key = (l: any) => `${l.hostIdentifier}|${l.name}|${l.columns.seq}`;
      expect(tls.map((m) => key(JSON.parse(m.msg))).sort()).toEqual(sent.map(key).sort());
      expect(tls.find((m) => JSON.parse(m.msg).hostIdentifier === b.uuid)).toMatchObject({
        hostname: b.hostname,
        msgid: 'result',
        facility: 'local3',
        severity: 'info',
      });
      expect(
        rs
          .messages('tcp')
          .filter((m) => m.raw.includes('"e2e"'))
          .map((m) => key(JSON.parse(m.raw)))
          .sort(),
      ).toEqual(sent.map(key).sort());
      const state = await ls.sink('syslog-results');
      expect(state.state).toMatchObject({ delivered: 120, backlog_entries: 0, rejected: 0 });
      // The status sink without the CA: nothing delivered, the error shown, the backlog kept.
      await until('the status sink to report its failure', async () => Boolean((await ls.sink('syslog-status')).state.last_error), 60);
      const failing = (await ls.sink('syslog-status')).state;
      expect(failing.last_error).toMatch(/self[- ]signed|unable to verify|SELF_SIGNED|UNABLE_TO_VERIFY/i);
      expect(failing.backlog_entries).toBe(status.length);
      expect(rs.messages('tls').filter((m) => m.msg.includes('e2e-status'))).toEqual([]);
      // fleetctl sinks test says why, exit 1; on the sink that works, what was written.
      const bad = await ls.srv.cli.run(['sinks', 'test', 'syslog-status', 'global']);
      expect(bad.exitCode).toBe(1);
      expect(bad.stdout + bad.stderr).toMatch(/self[- ]signed|unable to verify|SELF_SIGNED|UNABLE_TO_VERIFY/i);
      const good = await ls.srv.cli.run(['sinks', 'test', 'syslog-results', 'global']);
      expect(good.exitCode, good.stderr).toBe(0);
      expect(good.stdout + good.stderr).toMatch(/1 message written \(\d+ bytes\)/);
      await until('the test message', () => rs.messages('tls').some((m) => m.hostname === 'fleetctl-sink-test'), 30);
    } finally {
      await ls.stop();
    }
  });

  it('bad configs are refused naming the field', () => {
    expect(syslog.check?.({ url: 'http://x:1' } as any, ctx)?.field).toBe('url');
    expect(syslog.check?.({ url: 'tcp://x:1', ca: 'pem' } as any, ctx)?.field).toBe('ca');
    expect(syslog.check?.({ url: 'tcp://x:99999' } as any, ctx)?.field).toBe('url');
    expect(logstash.check?.({ url: 'tcp://x' } as any, ctx)?.message).toMatch(/port/);
  });

  it('logstash json_lines over TCP and UDP: each line arrives exactly as the agent sent it', async () => {
    const tcp = await sinkOf(logstash, { url: `tcp://127.0.0.1:${rs.tcp}` });
    const udp = await sinkOf(logstash, { url: `udp://127.0.0.1:${rs.udp}` });
    const a = makeEntries(200, 'ls-tcp');
    const b = makeEntries(50, 'ls-udp');
    await deliverAll(tcp, a);
    await deliverAll(udp, b);
    await until(
      'rsyslog got the json_lines',
      () =>
        rs.messages('tcp').filter((m) => m.raw.includes('"ls-tcp"')).length >= 200 &&
        rs.messages('udp').filter((m) => m.raw.includes('"ls-udp"')).length >= 50,
      60,
    );
    const raws = (input: 'tcp' | 'udp', run: string) =>
      rs
        .messages(input)
        .map((m) => m.raw)
        .filter((r) => r.includes(`"${run}"`));
    expect(raws('tcp', 'ls-tcp')).toEqual(a.map((e) => e.line));
    expect(raws('udp', 'ls-udp').sort()).toEqual(b.map((e) => e.line).sort());
  });

  it('rsyslog stopped until two sends failed, then started: retried, nothing acknowledged is lost, nothing doubled', async () => {
    const sink = await sinkOf(syslog, { url: `tcp://127.0.0.1:${rs.tcp}` });
    const before = makeEntries(100, 'outage-before');
    await deliverAll(sink, before);
    await until('the first 100', () => rs.messages('tcp').filter((m) => m.msg.includes('"outage-before"')).length >= 100, 60);
    await rs.pause();
    const during = makeEntries(100, 'outage');
    const failed = await sink.send(during, new AbortController().signal).then(
      () => 'sent',
      (e: Error) => e.message,
    );
    expect(failed).toMatch(/ECONNREFUSED|closed/);
    const retried = deliverThrough(sink, during, { pauseMs: 1000, maxAttempts: 120 });
    // Down until two sends failed: the outage was seen and retried.
    await retried.failures(2);
    await rs.resume();
    const d = await retried.done;
    expect(d.attempts).toBeGreaterThan(1);
    await until('the 100 sent during the outage', () => rs.messages('tcp').filter((m) => m.msg.includes('"outage"')).length >= 100, 60);
    const got = rs.messages('tcp').map((m) => JSON.parse(m.msg));
    expect(seqs(got, 'outage-before')).toEqual(range(100));
    expect(seqs(got, 'outage')).toEqual(range(100));
  });
});
