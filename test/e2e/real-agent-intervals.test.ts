// Intervals that reach running agents (issue 26 item 4): `env intervals --query N` changes the
// options of the configuration agents receive (osquery applies distributed_interval from them at
// its next config fetch), and "online" follows each node's own cadence, so `query run --exit`
// right after lowering the interval waits for the agent and gets its rows instead of calling it
// offline.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeRealAgent, startAgentServer, startOsqueryd, type AgentServer, type Osqueryd } from '../helpers/osqueryd.js';
import { eventually } from '../helpers/osquery-agent.js';

/** "Online" by the environment's interval alone (the old rule): seen within 3 intervals, never less than 10 s. */
const OLD_RULE_WINDOW_MS = 10_000;

interface LiveQueryState {
  name: string;
  query: string;
  expected: number;
  online?: number;
  online_pending?: number;
}

describeRealAgent('real osquery agent: intervals through the configuration', () => {
  let srv: AgentServer;
  let agent: Osqueryd;
  let uuid: string;

  beforeAll(async () => {
    // The agent polls for queries every 30 s (its flags): that is its cadence, which the server
    // learns from what it told it (online within 3 of them: 90 s, room for a loaded machine while
    // it is frozen below). Config and logs at 5 s, so the new interval reaches it soon.
    srv = await startAgentServer({ intervals: { config: 5, log: 5, query: 30 } });
    agent = startOsqueryd({ enrollment: await srv.enrollment() });
    uuid = await agent.identifier();
    await srv.waitForNode(uuid, (n) => n.config_hash !== '', 'the node to fetch its configuration');
  });

  afterAll(async () => {
    await agent?.stop();
    await srv?.stop();
  });

  it('query run --exit right after env intervals --query 2 waits for the agent and gets its rows', async () => {
    // An agent in the middle of its 30 s pause whose last request of any kind was over 10 s ago:
    // frozen (SIGSTOP), so that no config or log request lands in between by chance. "Online"
    // computed from the lowered interval (3 x 2 s, at least 10 s) calls it offline, and query run
    // --exit ended at once with "the others are offline"; by its own cadence (30 s) it is online.
    agent.freeze();
    let running: ReturnType<AgentServer['cli']['run']> | undefined;
    try {
      const lastSeen = async () => ((await srv.api('GET', `/api/v1/nodes/prod/node/${uuid}`)).body as { last_seen: string }).last_seen;
      const stale = await eventually(async () => {
        const seen = await lastSeen();
        return Date.now() - Date.parse(seen) > OLD_RULE_WINDOW_MS + 2_000 ? seen : undefined;
      }, "the frozen agent's last request to be over 12 s ago");
      const set = await srv.cli.run(['env', 'intervals', 'prod', '--query', '2']);
      expect(set.exitCode, set.stderr).toBe(0);
      running = srv.cli.run(['query', 'run', 'SELECT 7 AS seven', '--target', uuid, '--exit', '--wait', '3m', '-o', 'json']);
      // What query run --exit reads while the agent is still frozen: one target, online, not answered.
      const state = await eventually(async () => {
        const list = (await srv.api('GET', '/api/v1/queries/prod')).body as { items: LiveQueryState[] };
        const q = list.items.find((i) => i.query === 'SELECT 7 AS seven');
        return q ? ((await srv.api('GET', `/api/v1/queries/prod/${q.name}`)).body as LiveQueryState) : undefined;
      }, 'the live query on the server');
      // Still the stale record (the agent is frozen): by the old rule this target was offline.
      expect(await lastSeen()).toBe(stale);
      expect(Date.now() - Date.parse(stale)).toBeGreaterThan(OLD_RULE_WINDOW_MS);
      expect(state).toMatchObject({ expected: 1, online: 1, online_pending: 1 });
    } finally {
      agent.thaw();
    }
    if (running === undefined) throw new Error('query run did not start');
    const r = await running;
    expect(r.stderr).not.toContain('offline');
    expect(r.exitCode, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual([expect.objectContaining({ uuid, status: 0, rows: [{ seven: '7' }] })]);
  });

  it('the agent receives the interval in its configuration options and polls at it', async () => {
    const agentConfig = await srv.api('GET', '/api/v1/environments/prod/agent-config');
    expect(agentConfig.body.config.options).toMatchObject({ distributed_interval: 2, logger_tls_period: 5 });
    const node = await srv.waitForNode(
      uuid,
      (n) => n.config_hash === agentConfig.body.hash,
      'the node to fetch the configuration with the new interval',
    );
    expect(node.config_hash).toBe(agentConfig.body.hash);
    // After that fetch osquery waits out its old pause, then reads every 2 s: two reads in a row
    // less than 8 s apart (the old interval was 30 s) show the new cadence.
    const mark = agent.mark();
    const gap = await agent.until(() => {
      const reads = agent.requests('read', mark);
      for (let i = 1; i < reads.length; i++) if (reads[i] - reads[i - 1] < 8_000) return reads[i] - reads[i - 1];
      return undefined;
    }, 'two distributed reads less than 8 s apart');
    expect(gap).toBeLessThan(8_000);
  });

  it("the configuration refuses the interval options: they are the environment's (env intervals)", async () => {
    const r = await srv.cli.run(['env', 'config', 'prod', '--set', 'options', '-'], { input: 'distributed_interval: 5\n' });
    expect(r.exitCode).not.toBe(0);
    expect(r.stderr).toContain("options.distributed_interval: is the environment's query interval");
    expect(r.stderr).toContain('fleetctl env intervals ENV --query N');
  });

  it("host_identifier in the options is stored with a warning: it overrides every host's own flag", async () => {
    const r = await srv.cli.run(['env', 'config', 'prod', '--set', 'options', '-'], { input: 'host_identifier: uuid\n' });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).toContain('warning: options.host_identifier ("uuid") overrides every host\'s own --host_identifier');
    expect((await srv.api('GET', '/api/v1/environments/prod/config/options')).body.options).toEqual({ host_identifier: 'uuid' });
  });
});
