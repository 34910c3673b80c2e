// tls/accelerated_seconds against the real osquery agent (issue 29): after `fleetctl settings set
// tls accelerated_seconds N`, a newly enrolled osqueryd reads `accelerate` in the answer to its
// first distributed read and says so in its own log, as it does with osctrl-tls.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeRealAgent, startAgentServer, startOsqueryd, type AgentServer, type Osqueryd } from '../helpers/osqueryd.js';

describeRealAgent('tls/accelerated_seconds with the real osquery agent', () => {
  let srv: AgentServer;
  let agent: Osqueryd | undefined;

  beforeAll(async () => {
    // A distributed interval of a minute: what acceleration shortens.
    srv = await startAgentServer({ intervals: { config: 5, log: 2, query: 60 } });
  });
  afterAll(async () => {
    await agent?.stop();
    await srv?.stop();
  });

  it('a newly enrolled osqueryd accelerates its distributed check-ins for what is left of the setting', async () => {
    const set = await srv.cli.run(['settings', 'set', 'tls', 'accelerated_seconds', '120', '--env', 'prod']);
    expect(set.exitCode, set.stderr).toBe(0);
    agent = startOsqueryd({ enrollment: await srv.enrollment() });
    const m = await agent.waitFor(/Accelerating distributed query checkins for (\d+) seconds/);
    const seconds = Number(m[1]);
    expect(seconds).toBeGreaterThan(60);
    expect(seconds).toBeLessThanOrEqual(120);
  });
});
