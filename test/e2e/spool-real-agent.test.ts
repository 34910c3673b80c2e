// The log spool with the real osquery agent as the source (issue 28): a scheduled query's results
// and osquery's status logs reach a file sink with their node and query name, and an http sink
// whose destination is down for a while gets every line once it is back. The reference for
// "every line" is osquery itself: the agent also writes its results with its own filesystem
// logger (--logger_plugin=tls,filesystem), and every line it wrote there must be at each sink,
// exactly once.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { describeRealAgent, startAgentServer, startOsqueryd, type AgentServer, type Osqueryd } from '../helpers/osqueryd.js';
import { eventually } from '../helpers/osquery-agent.js';

describeRealAgent('the log spool with the real osquery agent', () => {
  let srv: AgentServer;
  let agent: Osqueryd;
  let uuid: string;
  let collector: Server;
  let up = false;
  const posted: any[] = [];

  /** Lines of a file as JSON (whole lines only: a writer may be appending). */
  const jsonLines = (file: string): any[] => {
    if (!existsSync(file)) return [];
    const text = readFileSync(file, 'utf8');
    return text
      .slice(0, text.lastIndexOf('\n') + 1)
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
  };

  beforeAll(async () => {
    collector = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        if (!up) return res.writeHead(503).end('down');
        posted.push(...JSON.parse(body));
        res.writeHead(200).end('ok');
      });
    });
    await new Promise<void>((r) => collector.listen(0, '127.0.0.1', r));
    srv = await startAgentServer();
    for (const args of [
      ['sinks', 'add', 'prod', '--name', 'results', '--type', 'file', '--source', 'result', '--config', '{"path":"results.jsonl"}'],
      ['sinks', 'add', 'prod', '--name', 'status', '--type', 'file', '--source', 'status', '--config', '{"path":"status.jsonl"}'],
      [
        'sinks',
        'add',
        'global',
        '--name',
        'collector',
        '--type',
        'http',
        '--source',
        'result',
        '--config',
        JSON.stringify({ url: `http://127.0.0.1:${(collector.address() as { port: number }).port}/` }),
      ],
      ['schedule', 'add', 'prod', 'spool_time', '--query', 'SELECT unix_time, seconds FROM time', '--interval', '2'],
    ]) {
      const r = await srv.cli.run(args);
      expect(r.exitCode, r.stderr).toBe(0);
    }
    agent = startOsqueryd({ enrollment: await srv.enrollment(), flags: ['--logger_plugin=tls,filesystem'] });
    uuid = await agent.identifier();
  }, 300_000);

  afterAll(async () => {
    await agent?.remove();
    await srv?.stop();
    collector?.close();
  });

  it('results and status logs land with node and query name; after the down sink is back, every line osquery logged is at each sink once', async () => {
    const results = join(srv.dir, 'results.jsonl');
    await eventually(
      async () => (jsonLines(results).filter((l) => l.name === 'spool_time').length >= 5 ? true : undefined),
      'five results of spool_time in the file sink',
    );
    const first = jsonLines(results).find((l) => l.name === 'spool_time');
    expect(first).toMatchObject({ environment: 'prod', node_uuid: uuid, log_type: 'result', name: 'spool_time' });
    expect(first.entry).toMatchObject({ name: 'spool_time', hostIdentifier: expect.any(String) });
    const status = await eventually(
      async () => jsonLines(join(srv.dir, 'status.jsonl')).find((l) => l.node_uuid === uuid),
      'a status log of the agent',
    );
    expect(status).toMatchObject({ environment: 'prod', log_type: 'status' });
    expect(status.entry).toHaveProperty('severity');

    // The collector has been down all along: its backlog grows, then it comes back.
    const down = (await srv.api('GET', '/api/v1/log-sinks')).body.find((s: any) => s.name === 'collector').state;
    expect(down.backlog_entries).toBeGreaterThan(0);
    expect(down.last_error).toMatch(/503/);
    up = true;
    // Stop the agent once its own log has a few more lines, and after its last TLS log batch.
    const ownLog = join(agent.dir, 'logs', 'osqueryd.results.log');
    const sent = (
      await eventually(async () => (jsonLines(ownLog).length >= 8 ? jsonLines(ownLog) : undefined), "osquery's own results log")
    ).length;
    await eventually(
      async () => (jsonLines(results).filter((l) => l.node_uuid === uuid).length >= sent ? true : undefined),
      'the file sink to have what osquery logged',
    );
    // What osquery logged before it stops: a batch it had not sent yet it keeps in its database
    // and sends when it starts again, so it is restarted once before the count.
    await agent.stop();
    const own = jsonLines(ownLog).map((l) => JSON.stringify(l));
    agent = await agent.restart();
    const key = (e: unknown) => JSON.stringify(e);
    await eventually(async () => {
      const inFile = new Set(jsonLines(results).map((l) => key(l.entry)));
      const atCollector = new Set(posted.map((l) => key(l.entry)));
      return own.every((l) => inFile.has(l) && atCollector.has(l)) ? true : undefined;
    }, 'every line osquery logged at both sinks').catch((e: Error) => {
      const inFile = new Set(jsonLines(results).map((l) => key(l.entry)));
      const atCollector = new Set(posted.map((l) => key(l.entry)));
      throw new Error(
        `${e.message}: missing in the file ${own
          .filter((l) => !inFile.has(l))
          .slice(0, 2)
          .join(' | ')}; at the collector ${own
          .filter((l) => !atCollector.has(l))
          .slice(0, 2)
          .join(' | ')}; a file line: ${[...inFile][0]}`,
      );
    });
    const count = (lines: any[]) => {
      const m = new Map<string, number>();
      for (const l of lines) m.set(key(l.entry), (m.get(key(l.entry)) ?? 0) + 1);
      return m;
    };
    const fileCounts = count(jsonLines(results));
    const collectorCounts = count(posted);
    for (const l of own) {
      expect(fileCounts.get(l), l).toBe(1);
      expect(collectorCounts.get(l), l).toBe(1);
    }
    expect(own.length).toBeGreaterThanOrEqual(8);
  });
});
