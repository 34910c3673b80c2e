// One load-generating process of `npm run bench:agents` (bench/agents.mjs forks several, so the
// simulated fleet is driven by more than one event loop): a Simulator whose agents each hold
// their own TLS connection to the server, adding agents when told (the enrollment ramp), and
// answering samples: the latencies measured since the last sample (from the moment each request
// was sent), errors, enrolled agents, open connections, and how well this process kept up (its
// event-loop delay, how late its most overdue task was, its CPU time) so the orchestrator can
// tell the server's latency from the driver's own.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { Simulator } = await import(join(root, 'dist', 'agent-sim.js'));

let sim;
let lagMax = 0;
const delay = monitorEventLoopDelay({ resolution: 10 });
delay.enable();
let cpu = process.cpuUsage();
const lateTimer = setInterval(() => {
  if (sim) lagMax = Math.max(lagMax, sim.lagMs);
}, 250);

process.on('message', async (m) => {
  try {
    if (m.type === 'init') {
      sim = new Simulator({
        flags: m.flags,
        secret: m.secret,
        seed: m.seed,
        ca: m.ca,
        connect: m.connect,
        intervals: m.intervals,
        // No bound of ours on requests in flight: a real fleet has none (each agent waits for its own).
        maxInFlight: 1_000_000,
        spread: false,
        timeoutMs: m.timeoutMs,
        perAgentConnections: true,
        latencyFromSend: true,
        localAddresses: m.localAddresses,
      });
      process.send({ type: 'ready' });
    } else if (m.type === 'add') {
      sim.add(m.count);
    } else if (m.type === 'sample') {
      const taken = sim.stats.take();
      const used = process.cpuUsage(cpu);
      cpu = process.cpuUsage();
      const out = {
        type: 'sample',
        id: m.id,
        ...taken,
        enrolled: sim.enrolled,
        agents: sim.agents.length,
        gaveUp: sim.gaveUp,
        connections: sim.connections,
        loopDelayP99: delay.percentile(99) / 1e6,
        loopDelayMax: delay.max / 1e6,
        lateMax: Math.max(lagMax, sim.lagMs),
        cpuMs: (used.user + used.system) / 1000,
        rssMiB: process.memoryUsage().rss / 1048576,
      };
      delay.reset();
      lagMax = 0;
      process.send(out);
    } else if (m.type === 'stop') {
      clearInterval(lateTimer);
      await sim?.stop(2000);
      process.send({ type: 'stopped' });
      process.exit(0);
    }
  } catch (e) {
    process.send({ type: 'error', message: String(e?.stack ?? e) });
  }
});
process.on('disconnect', () => process.exit(0));
