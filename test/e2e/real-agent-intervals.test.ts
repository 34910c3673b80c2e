// Intervals that reach running agents (issue 26 item 4): `env intervals --query N` changes the
// options of the configuration agents receive (osquery applies distributed_interval from them at
// its next config fetch), and "online" follows each node's own cadence, so `query run --exit`
// right after lowering the interval waits for the agent and gets its rows instead of calling it
// offline.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeRealAgent, startAgentServer, startOsqueryd, type AgentServer, type Osqueryd } from '../helpers/osqueryd.js';

describeRealAgent('real osquery agent: intervals through the configuration', () => {
  let srv: AgentServer;
  let agent: Osqueryd;
  let uuid: string;

  beforeAll(async () => {
    // The agent starts with every interval at 20 s (its flags): its requests are seconds apart, so
    // "online" computed from a lowered interval (three of 2 s, at least 10 s) would miss it.
    srv = await startAgentServer({ intervals: { config: 20, log: 20, query: 20 } });
    agent = startOsqueryd({ enrollment: await srv.enrollment() });
    uuid = await agent.identifier();
    await srv.waitForNode(uuid, (n) => n.config_hash !== '', 'the node to fetch its configuration');
  });

  afterAll(async () => {
    await agent?.stop();
    await srv?.stop();
  });

  it('query run --exit right after env intervals --query 2 waits for the agent and gets its rows', async () => {
    const set = await srv.cli.run(['env', 'intervals', 'prod', '--query', '2']);
    expect(set.exitCode, set.stderr).toBe(0);
    const r = await srv.cli.run(['query', 'run', 'SELECT 7 AS seven', '--target', uuid, '--exit', '--wait', '3m', '-o', 'json']);
    expect(r.stderr).not.toContain('offline');
    expect(r.exitCode, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual([expect.objectContaining({ uuid, status: 0, rows: [{ seven: '7' }] })]);
  });

  it('the agent receives the interval in its configuration options and polls at it', async () => {
    const agentConfig = await srv.api('GET', '/api/v1/environments/prod/agent-config');
    expect(agentConfig.body.config.options).toMatchObject({ distributed_interval: 2, logger_tls_period: 20 });
    const node = await srv.waitForNode(uuid, (n) => n.config_hash === agentConfig.body.hash, 'the node to fetch the configuration with the new interval');
    expect(node.config_hash).toBe(agentConfig.body.hash);
    // After that fetch osquery waits out its old pause, then reads every 2 s: two reads in a row
    // less than 8 s apart (the old interval was 20 s) show the new cadence.
    const mark = agent.mark();
    const gap = await agent.until((err) => {
      const reads = agent.requests('read', mark);
      for (let i = 1; i < reads.length; i++) if (reads[i]! - reads[i - 1]! < 8_000) return reads[i]! - reads[i - 1]!;
      void err;
      return undefined;
    }, 'two distributed reads less than 8 s apart');
    expect(gap).toBeLessThan(8_000);
  });

  it('the configuration refuses the interval options: they are the environment\'s (env intervals)', async () => {
    const r = await srv.cli.run(['env', 'config', 'prod', '--set', 'options', '-'], { input: 'distributed_interval: 5\n' });
    expect(r.exitCode).not.toBe(0);
    expect(r.stderr).toContain("options.distributed_interval: is the environment's query interval");
    expect(r.stderr).toContain('fleetctl env intervals ENV --query N');
  });

  it('host_identifier in the options is stored with a warning: it overrides every host\'s own flag', async () => {
    const r = await srv.cli.run(['env', 'config', 'prod', '--set', 'options', '-'], { input: 'host_identifier: uuid\n' });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).toContain("warning: options.host_identifier (\"uuid\") overrides every host's own --host_identifier");
    expect((await srv.api('GET', '/api/v1/environments/prod/config/options')).body.options).toEqual({ host_identifier: 'uuid' });
  });
});
