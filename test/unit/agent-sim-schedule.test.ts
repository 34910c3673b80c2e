// How the agent simulator runs the schedule of a config it fetched (issue 22), as osquery does:
// pack queries named pack_<pack>_<query>, queries for another platform or with an interval
// osquery drops left out, snapshot results as one entry, differential ones as added/removed events.
import { describe, expect, it } from 'vitest';
import { SimAgent, type AgentEnv } from '../../src/agent-sim/agent.js';
import { syntheticHost } from '../../src/agent-sim/index.js';

function agentAt(clock: { now: number }, platform: 'linux' | 'windows') {
  let i = 0;
  let host = syntheticHost('sched', i);
  while ((platform === 'windows') !== (host.platform === 'windows')) host = syntheticHost('sched', ++i);
  const env = { flags: {}, now: () => clock.now } as unknown as AgentEnv;
  const agent = new SimAgent(host, env);
  const logs = () => (agent as unknown as { resultLogs: any[] }).resultLogs;
  return { agent, host, logs };
}

const CONFIG = {
  schedule: {
    users: { query: 'SELECT username FROM users', interval: 10 },
    up: { query: 'SELECT total_seconds FROM uptime', interval: 5, snapshot: true },
    never: { query: 'SELECT 1 FROM users', interval: 0 },
    too_long: { query: 'SELECT 1 FROM users', interval: 604801 },
    win_only: { query: 'SELECT * FROM users', interval: 5, platform: 'windows' },
  },
  packs: {
    web: { platform: 'linux', queries: { procs: { query: 'SELECT name FROM processes', interval: 5 } } },
    gone: { discovery: ['SELECT * FROM kernel_extensions'], queries: { x: { query: 'SELECT 1 FROM users', interval: 5 } } },
  },
};

describe('simulated schedule', () => {
  it("runs what osquery would, under osquery's names, at their intervals", () => {
    const clock = { now: 1_000_000 };
    const { agent, logs } = agentAt(clock, 'linux');
    agent.loadSchedule(CONFIG);
    expect(agent.nextDue()).toBe(1_000_000 + 5000);
    clock.now += 5000;
    agent.runDue();
    const names = [...new Set(logs().map((l) => l.name))].sort();
    expect(names).toEqual(['pack_web_procs', 'up']);
    const snap = logs().find((l) => l.name === 'up');
    expect(snap).toMatchObject({ action: 'snapshot', snapshot: [{ total_seconds: expect.any(String) }] });
    const procs = logs().filter((l) => l.name === 'pack_web_procs');
    expect(procs.length).toBeGreaterThan(1);
    expect(procs.every((l) => l.action === 'added' && typeof l.columns.name === 'string')).toBe(true);
    clock.now += 5000;
    agent.runDue();
    // users (every 10 s) now; procs again, but unchanged rows add no events.
    expect(logs().filter((l) => l.name === 'users').length).toBeGreaterThan(0);
    expect(logs().filter((l) => l.name === 'pack_web_procs').length).toBe(procs.length);
  });

  it('a Windows host runs the Windows query and not the Linux pack', () => {
    const clock = { now: 1_000_000 };
    const { agent, logs } = agentAt(clock, 'windows');
    agent.loadSchedule(CONFIG);
    clock.now += 5000;
    agent.runDue();
    expect([...new Set(logs().map((l) => l.name))].sort()).toEqual(['up', 'win_only']);
  });
});
