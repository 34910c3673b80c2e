// The real osquery agent through a fleet's life (issue 26, the suite): a configuration change by
// `fleetctl apply -f` reaches it; its scheduled results land in a file sink, every line osquery
// logged locally and none twice, across the server stopped for 20 s (no re-enroll); after
// `fleetctl nodes delete` it enrolls again. Waits are for events (requests in the agent's stderr,
// lines in files, rows through the API), never for durations.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describeRealAgent, startAgentServer, startOsqueryd, type AgentServer, type Osqueryd } from '../helpers/osqueryd.js';
import { eventually } from '../helpers/osquery-agent.js';

/** Whole JSON lines of a file (a writer may be appending the last one). */
const lines = (file: string): any[] => {
  if (!existsSync(file)) return [];
  const text = readFileSync(file, 'utf8');
  return text
    .slice(0, text.lastIndexOf('\n') + 1)
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
};

describeRealAgent('real osquery agent: configuration, results, outage, delete', () => {
  let srv: AgentServer;
  let agent: Osqueryd;
  let uuid: string;
  let sinkFile: string;
  /** osquery's own copy of its results (the filesystem logger beside tls): what the sink must hold. */
  let localResults: string;

  beforeAll(async () => {
    srv = await startAgentServer();
    sinkFile = join(srv.dir, 'results.jsonl');
    const sink = await srv.api('POST', '/api/v1/log-sinks', {
      name: 'results-file',
      type: 'file',
      source: 'result',
      environment_id: 0,
      config: { path: 'results.jsonl' },
    });
    expect(sink.status).toBe(200);
    // osquery's log forwarder backs off after failed sends (the period times the failures squared,
    // up to logger_tls_backoff_max, an hour by default): after the 20 s outage its next send came
    // half a minute after the server was back. Capped at 4 s through the configuration's options,
    // the wait for the outage's last result is a few seconds; nothing else changes.
    const opts = await srv.cli.run(['env', 'config', 'prod', '--set', 'options', '-'], {
      input: 'disable_distributed: false\nlogger_tls_backoff_max: 4\n',
    });
    expect(opts.exitCode, opts.stderr).toBe(0);
    agent = startOsqueryd({ enrollment: await srv.enrollment(), flags: ['--logger_plugin=tls,filesystem'] });
    localResults = join(agent.dir, 'logs', 'osqueryd.snapshots.log'); // snapshot results go here
    uuid = await agent.identifier();
    await srv.waitForNode(uuid, (n) => n.config_hash !== '', 'the node to fetch its configuration');
  });

  afterAll(async () => {
    await agent?.stop();
    await srv?.stop();
  });

  it('a schedule applied with fleetctl apply -f reaches the agent, and its results land in the file sink under its node', async () => {
    const doc = join(srv.dir, 'prod.yaml');
    writeFileSync(
      doc,
      'apiVersion: fleetctl/v1\nkind: OsqueryConfig\nmetadata:\n  environment: prod\nspec:\n  schedule:\n    heartbeat:\n      query: SELECT unix_time FROM time\n      interval: 2\n      snapshot: true\n',
    );
    const r = await srv.cli.run(['apply', '-f', doc]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/osqueryconfig\/prod configured/);
    const hash = (await srv.api('GET', '/api/v1/environments/prod/agent-config')).body.hash as string;
    await srv.waitForNode(uuid, (n) => n.config_hash === hash, 'the agent to fetch the applied configuration');
    const first = await eventually(
      async () => lines(sinkFile).find((l) => l.entry?.name === 'heartbeat'),
      'a heartbeat result in the file sink',
    );
    expect(first).toMatchObject({
      environment: 'prod',
      node_uuid: uuid,
      log_type: 'result',
      entry: { name: 'heartbeat', action: 'snapshot', snapshot: [{ unix_time: expect.any(String) }] },
    });
  });

  it('the server stopped for 20 s: no re-enroll, and every result osquery logged reaches the sink once', async () => {
    const enrollsBefore = agent.requests('enroll').length;
    const mark = agent.mark();
    await srv.halt();
    // The outage, measured by the agent's own clock: its failed requests span 20 s.
    await agent.until(() => {
      const failed = [
        ...agent
          .stderr()
          .slice(mark)
          .matchAll(/^[IWE]\d{4} (\d\d):(\d\d):(\d\d)\.\d+ .*(?:Request error|Failed to|error|refused)/gim),
      ];
      const t = failed.map((m) => (Number(m[1]) * 60 + Number(m[2])) * 60 + Number(m[3]));
      return t.length >= 2 && t[t.length - 1] - t[0] >= 20 ? true : undefined;
    }, 'failed requests spanning 20 s while the server is stopped');
    await srv.resume();
    // What osquery logged locally up to now must all arrive: wait for the newest of them.
    const local = () => lines(localResults).filter((l) => l.name === 'heartbeat');
    const wanted = local();
    expect(wanted.length).toBeGreaterThan(10);
    const last = wanted[wanted.length - 1]!;
    await eventually(
      async () => (lines(sinkFile).some((l) => l.entry?.name === 'heartbeat' && l.entry.unixTime === last.unixTime) ? true : undefined),
      'the last result logged during the outage in the sink',
    );
    const inSink = lines(sinkFile)
      .filter((l) => l.entry?.name === 'heartbeat')
      .map((l) => l.entry.unixTime as number);
    expect(new Set(inSink).size).toBe(inSink.length); // none twice
    const missing = wanted.map((l) => l.unixTime as number).filter((t) => !inSink.includes(t));
    expect(missing).toEqual([]); // none lost
    expect(agent.requests('enroll').length).toBe(enrollsBefore);
    expect((await srv.waitForNode(uuid)).uuid).toBe(uuid);
  });

  it('after fleetctl nodes delete the agent enrolls again', async () => {
    const before = agent.requests('enroll').length;
    const r = await srv.cli.run(['nodes', 'delete', uuid, '--yes']);
    expect(r.exitCode, r.stderr).toBe(0);
    await agent.until(() => (agent.requests('enroll').length > before ? true : undefined), 'a new enroll request');
    const node = await srv.waitForNode(uuid, (n) => n.config_hash !== '', 'the node enrolled again');
    expect(node.uuid).toBe(uuid);
  });
});
