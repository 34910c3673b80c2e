// The agent simulator: N synthetic osquery agents speaking the TLS remote API to one server.
// One timer wheel drives every agent (no timer per agent), requests in flight are bounded,
// and stop() waits for the requests already sent. Used by `fleetctl dev agents`, by
// `fleetctl server --dev --dev-agents N` and by bench/agents.mjs.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { NodeInvalid, SimAgent, type AgentEnv } from './agent.js';
import type { AgentFlags } from './flags.js';
import { localHost, syntheticHost } from './hosts.js';
import { Stats } from './stats.js';
import { Transport } from './transport.js';

export { parseAgentFlags, FlagsError, type AgentFlags } from './flags.js';
export { syntheticHost, type SimHost } from './hosts.js';
export { answer, carvePath } from './tables.js';
export { tarOne } from '../lib/tar.js';
export { Stats, percentile, type KindSummary } from './stats.js';

export interface SimulatorOptions {
  flags: AgentFlags;
  secret: string;
  /** Names the synthetic fleet: same seed, same hosts (UUIDs, hostnames). */
  seed: string;
  /** PEM of the CA that signed the server certificate (else the system CAs). */
  ca?: string | Buffer;
  insecure?: boolean;
  /** Connect to this address instead of --tls_hostname's (SNI and Host stay). */
  connect?: { host: string; port: number };
  /** Interval overrides in ms (else the flags'). */
  intervals?: { config?: number; log?: number; distributed?: number };
  /** One agent that is this machine: its hostname, real files for carves. */
  local?: boolean;
  /** Write every uploaded carve archive here as <request_id>_<uuid>.tar. */
  recordDir?: string;
  connections?: number;
  maxInFlight?: number;
  timeoutMs?: number;
  /** Start agents' check-ins at random phases within each interval (a fleet), instead of at once. */
  spread?: boolean;
  /** One TLS connection per agent, as a real fleet (the load benchmark), instead of a shared pool. */
  perAgentConnections?: boolean;
  /** Record latency from the moment a request is sent (AgentEnv.latencyFromSend). */
  latencyFromSend?: boolean;
  /** Source addresses for the per-agent connections (TransportOptions.localAddresses). */
  localAddresses?: string[];
  /** Progress and carve lines (stderr of the command). */
  log?: (line: string) => void;
  /** Every batch of log entries the server acknowledged (fault tests check none goes missing). */
  onLogs?: (uuid: string, type: 'status' | 'result', data: object[]) => void;
}

type Task = 'enroll' | 'config' | 'log' | 'read' | 'query';
interface Item {
  at: number;
  agent: number;
  task: Task;
}

/** A binary min-heap on `at`. */
class Heap {
  private a: Item[] = [];
  get size() {
    return this.a.length;
  }
  peek(): Item | undefined {
    return this.a[0];
  }
  push(x: Item): void {
    const a = this.a;
    a.push(x);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (a[p].at <= x.at) break;
      a[i] = a[p]!;
      i = p;
    }
    a[i] = x;
  }
  pop(): Item | undefined {
    const a = this.a;
    const top = a[0];
    const last = a.pop();
    if (a.length > 0 && last) {
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && a[l].at < (m === i ? last.at : a[m].at)) m = l;
        if (r < a.length && a[r].at < (m === i ? last.at : a[m].at)) m = r;
        if (m === i) break;
        a[i] = a[m]!;
        i = m;
      }
      a[i] = last;
    }
    return top;
  }
}

const MAX_ENROLL_ATTEMPTS = 6;

export class Simulator {
  readonly stats = new Stats();
  readonly agents: SimAgent[] = [];
  private heap = new Heap();
  private inFlight = 0;
  private timer?: NodeJS.Timeout;
  private stopped = false;
  private idle: (() => void)[] = [];
  private env: AgentEnv;
  private transport: Transport;
  private failed = 0;
  /** Distributed queries answered, carves uploaded, scheduled query runs (with rows). */
  answered = 0;
  scheduledRuns = 0;
  carves = 0;

  constructor(private o: SimulatorOptions) {
    this.transport = new Transport({
      host: o.flags.host,
      port: o.flags.port,
      connectHost: o.connect?.host,
      connectPort: o.connect?.port,
      ca: o.ca,
      insecure: o.insecure,
      connections: o.connections ?? 16,
      timeoutMs: o.timeoutMs ?? 30_000,
      perAgent: o.perAgentConnections,
      localAddresses: o.localAddresses,
    });
    this.env = {
      flags: o.flags,
      secret: o.secret,
      transport: this.transport,
      stats: this.stats,
      localFiles: Boolean(o.local),
      latencyFromSend: o.latencyFromSend,
      now: () => Date.now(),
      onLogs: o.onLogs,
      onCarve: async (c) => {
        this.carves++;
        o.log?.(`carve ${c.name}: ${c.hostname} uploaded ${c.path} (${c.archive.length} bytes, session ${c.sessionId})`);
        if (o.recordDir) {
          await mkdir(o.recordDir, { recursive: true });
          await writeFile(join(o.recordDir, `${c.name}_${c.uuid}.tar`), c.archive);
        }
      },
    };
  }

  private ms(task: Exclude<Task, 'enroll'>): number {
    const f = this.o.flags;
    const i = this.o.intervals ?? {};
    if (task === 'config') return i.config ?? f.configRefresh * 1000;
    if (task === 'log') return i.log ?? f.loggerPeriod * 1000;
    return i.distributed ?? f.distributedInterval * 1000;
  }

  /** Agents enrolled now (holding a node key). */
  get enrolled(): number {
    let n = 0;
    for (const a of this.agents) if (a.nodeKey) n++;
    return n;
  }

  /** How late the most overdue scheduled request is (ms; 0 when the simulator keeps up). */
  get lagMs(): number {
    const top = this.heap.peek();
    return top ? Math.max(0, Date.now() - top.at) : 0;
  }

  get gaveUp(): number {
    return this.failed;
  }

  /** Open connections of a per-agent transport. */
  get connections(): number {
    return this.transport.connections;
  }

  /** Adds `count` agents (the next hosts of the seed); they enroll as the in-flight bound allows. */
  add(count: number): void {
    const now = Date.now();
    for (let i = 0; i < count; i++) {
      const index = this.agents.length;
      const host = this.o.local && index === 0 ? localHost(this.o.seed) : syntheticHost(this.o.seed, index);
      this.agents.push(new SimAgent(host, this.env, index));
      this.heap.push({ at: now, agent: index, task: 'enroll' });
    }
    this.timer ??= setInterval(() => this.pump(), 10);
    this.pump();
  }

  private phase(interval: number): number {
    return this.o.spread ? Math.floor(Math.random() * interval) : 0;
  }

  private pump(): void {
    const max = this.o.maxInFlight ?? 256;
    const now = Date.now();
    while (!this.stopped && this.inFlight < max) {
      const top = this.heap.peek();
      if (!top || top.at > now) break;
      this.heap.pop();
      this.inFlight++;
      void this.run(top).finally(() => {
        this.inFlight--;
        if (this.inFlight === 0) this.idle.splice(0).forEach((f) => f());
        if (!this.stopped) this.pump();
      });
    }
  }

  private async run(item: Item): Promise<void> {
    const agent = this.agents[item.agent];
    agent.dueAt = item.at;
    const next = (task: Task, delay: number) => this.heap.push({ at: Date.now() + delay, agent: item.agent, task });
    if (item.task === 'enroll') {
      try {
        await agent.enroll();
        agent.reenrolling = false;
        // A fleet's agents start at different times: with `spread`, the first config fetch falls
        // anywhere in the first distributed interval instead of all right after enrollment.
        next('config', this.phase(this.ms('read')));
        next('log', this.phase(this.ms('log')) || this.ms('log'));
        next('read', this.phase(this.ms('read')));
      } catch (e) {
        agent.enrollFailures++;
        // A server that is busy or unavailable (5xx, 429) is waited for, as osquery does (it
        // retries its enroll for ever); only other failures count toward giving up.
        const status = (e as { status?: number }).status;
        if (status !== undefined && (status >= 500 || status === 429)) {
          next('enroll', Math.min(60_000, 500 * 2 ** Math.min(agent.enrollFailures, 7)) * (0.5 + Math.random() / 2));
          return;
        }
        if (agent.enrollFailures >= MAX_ENROLL_ATTEMPTS) {
          this.failed++;
          this.o.log?.(`agent ${agent.host.hostname} gave up enrolling after ${agent.enrollFailures} attempts: ${(e as Error).message}`);
        } else next('enroll', Math.min(60_000, 500 * 2 ** agent.enrollFailures));
      }
      return;
    }
    if (item.task === 'query') {
      // Scheduled queries run on their own clock (no request): results wait for the next log flush.
      if (agent.queryAt === item.at) agent.queryAt = undefined;
      this.scheduledRuns += agent.runDue();
      this.scheduleQueries(item.agent);
      return;
    }
    if (!agent.nodeKey) return; // re-enrolling: that task reschedules the rest
    try {
      if (item.task === 'config') {
        await agent.config();
        this.scheduleQueries(item.agent);
      } else if (item.task === 'log') await agent.log();
      else this.answered += await agent.distributed();
    } catch (e) {
      if (e instanceof NodeInvalid) {
        // osquery enrolls again when its node key is refused; the other loops restart after it.
        if (!agent.reenrolling) {
          agent.reenrolling = true;
          next('enroll', 0);
        }
        return;
      }
    }
    next(item.task, this.ms(item.task));
  }

  /** One pending 'query' task per agent, at its next due scheduled query. */
  private scheduleQueries(index: number): void {
    const agent = this.agents[index];
    const due = agent.nextDue();
    if (due === undefined || (agent.queryAt !== undefined && agent.queryAt <= due)) return;
    agent.queryAt = due;
    this.heap.push({ at: due, agent: index, task: 'query' });
  }

  /** Stops scheduling, waits (at most `graceMs`) for requests in flight, closes the connections. */
  async stop(graceMs = 5000): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    if (this.inFlight > 0)
      await Promise.race([new Promise<void>((r) => this.idle.push(r)), new Promise((r) => setTimeout(r, graceMs).unref())]);
    await this.transport.close().catch(() => {});
  }
}
