// The real osquery agent (issue 26) against a real `fleetctl server`: it enrolls with the flags
// `fleetctl enroll show` hands out, fetches the configuration, and answers a live query started
// by `fleetctl query run`; the node record holds what osquery sent, cleaned (item 8); clones on
// one hostname are told apart; a node enrolled under a specified identifier is targeted by it.
// Skipped without OSQUERYD (failed under CI): test/helpers/osqueryd.ts.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { hostname } from 'node:os';
import { eventually } from '../helpers/osquery-agent.js';
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
    const r = await srv.cli.run([
      'query',
      'run',
      'SELECT version, instance_id FROM osquery_info',
      '--target',
      uuid,
      '--exit',
      '--wait',
      '3m',
      '-o',
      'json',
    ]);
    expect(r.stderr).not.toMatch(/error/i);
    expect(r.exitCode).toBe(0);
    const answers = JSON.parse(r.stdout) as { uuid: string; status: number; rows: Record<string, string>[] }[];
    expect(answers).toHaveLength(1);
    expect(answers[0]).toMatchObject({ uuid, status: 0 });
    expect(answers[0].rows).toEqual([{ version: expect.stringMatching(/^\d+\.\d+\.\d+/), instance_id: uuid }]);
  });

  it('the node record is cleaned: no NUL padding, config_valid as it is now, no assumed osquery user', async () => {
    const node = await srv.waitForNode(uuid, (n) => n.config_hash !== '');
    const text = JSON.stringify(node);
    expect(text).not.toContain('\\u0000');
    expect(node.cpu).toBe(node.cpu.trim());
    expect(node.system_info.system.cpu_brand).toBe(node.cpu);
    // osquery enrolls with config_valid "0" (no configuration yet); after its fetch the record says 1.
    expect(node.system_info.osquery.config_valid).toBe('1');
    expect(node.health.signals).not.toContain('config_invalid');
    expect(node.osquery_user).toBe('');
  });

  it("clones on one hostname are told apart in query run's table; a specified identifier is targeted with uuid:", async () => {
    const enrollment = await srv.enrollment();
    const clone = startOsqueryd({ enrollment });
    const named = startOsqueryd({ enrollment, hostIdentifier: { specified: 'web-01.example' } });
    try {
      const cloneId = await clone.identifier();
      expect(await named.identifier()).toBe('web-01.example');
      await srv.waitForNode(cloneId, (n) => n.config_hash !== '');
      const web = await srv.waitForNode('web-01.example', (n) => n.config_hash !== '');
      expect(web.hostname).toBe((await srv.waitForNode(uuid)).hostname);
      const r = await srv.cli.run(['query', 'run', 'SELECT 1 AS one', '--target', uuid, '--target', cloneId, '--exit', '--wait', '3m']);
      expect(r.exitCode, r.stderr).toBe(0);
      const lines = r.stdout.trim().split('\n').slice(1).sort();
      expect(lines).toEqual([`${web.hostname} (${cloneId.slice(0, 8)})\t1`, `${web.hostname} (${uuid.slice(0, 8)})\t1`].sort());
      const byId = await srv.cli.run([
        'query',
        'run',
        'SELECT 2 AS two',
        '--target',
        'uuid:web-01.example',
        '--exit',
        '--wait',
        '3m',
        '-o',
        'json',
      ]);
      expect(byId.exitCode, byId.stderr).toBe(0);
      expect(JSON.parse(byId.stdout)).toEqual([expect.objectContaining({ uuid: 'web-01.example', rows: [{ two: '2' }] })]);
    } finally {
      await Promise.all([clone.remove(), named.remove()]);
    }
  });

  it('a host identified by its hostname keeps that identifier: nothing in the configuration overrides its flag, so after nodes delete it enrolls again as the same node', async () => {
    // osquery reads --host_identifier=hostname afresh at each use (it caches the other kinds), so
    // a host_identifier in the configuration's options (the old default: uuid) took over as soon
    // as the agent fetched it, and the host came back under another identifier (issue 26 item 6).
    const byName = startOsqueryd({ enrollment: await srv.enrollment(), hostIdentifier: 'hostname' });
    try {
      const name = hostname();
      await srv.waitForNode(name, (n) => n.config_hash !== '', 'the node named by its hostname to fetch its configuration');
      const uuids = async () =>
        ((await srv.api('GET', '/api/v1/nodes/prod?page_size=500')).body as { items: { uuid: string }[] }).items.map((n) => n.uuid);
      const before = (await uuids()).length;
      const mark = byName.mark();
      const r = await srv.cli.run(['nodes', 'delete', name, '--yes']);
      expect(r.exitCode, r.stderr).toBe(0);
      await byName.waitFor(/TLS\/HTTPS POST request to URI: \S+\/enroll$/m, { after: mark });
      const after = await eventually(async () => {
        const list = await uuids();
        return list.length === before ? list : undefined;
      }, 'the agent enrolled again');
      expect(after).toContain(name);
    } finally {
      await byName.remove();
    }
  });
});
