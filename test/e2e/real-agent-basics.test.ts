// The real osquery agent (issue 26) against a real `fleetctl server`: it enrolls with the flags
// `fleetctl enroll show` hands out, fetches the configuration, and answers a live query started
// by `fleetctl query run`. Skipped without OSQUERYD (failed under CI): test/helpers/osqueryd.ts.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeRealAgent, startAgentServer, startOsqueryd, type AgentServer, type Osqueryd } from '../helpers/osqueryd.js';

describeRealAgent('real osquery agent: enroll, config, live query', () => {
  let srv: AgentServer;
  let agent: Osqueryd;
  let uuid: string;

  beforeAll(async () => {
    srv = await startAgentServer();
    agent = startOsqueryd({ enrollment: await srv.enrollment() });
    uuid = await agent.identifier();
  });

  afterAll(async () => {
    await agent?.stop();
    await srv?.stop();
  });

  it('enrolls with the handed-out flags and fetches the configuration', async () => {
    const node = await srv.waitForNode(uuid, (n) => n.config_hash !== '', 'the node to fetch its configuration');
    expect(node).toMatchObject({ uuid, environment: 'prod', osquery_version: expect.stringMatching(/^\d+\.\d+\.\d+/) });
    const cfg = await srv.api('GET', '/api/v1/environments/prod/config');
    expect(node.config_hash).toBe(cfg.body.hash);
    expect(node.health.signals).not.toContain('config_invalid');
    // The agent's own account of it: the config request went out and nothing failed.
    expect(agent.stderr()).toMatch(/TLS\/HTTPS POST request to URI: https:\/\/127\.0\.0\.1:\d+\/[0-9a-f-]+\/[0-9a-f]+\/config/);
  });

  it('answers a live query started by fleetctl query run', async () => {
    const r = await srv.cli.run(['query', 'run', 'SELECT version, instance_id FROM osquery_info', '--target', uuid, '--exit', '--wait', '3m', '-o', 'json']);
    expect(r.stderr).not.toMatch(/error/i);
    expect(r.exitCode).toBe(0);
    const answers = JSON.parse(r.stdout) as { uuid: string; status: number; rows: Record<string, string>[] }[];
    expect(answers).toHaveLength(1);
    expect(answers[0]).toMatchObject({ uuid, status: 0 });
    expect(answers[0]!.rows).toEqual([{ version: expect.stringMatching(/^\d+\.\d+\.\d+/), instance_id: uuid }]);
  });
});
