// `fleetctl server --workers N` (issue 21): N server processes on the same ports through Node's
// cluster module, every one serving both doors, on one SQLite file (WAL) or one PostgreSQL
// database. They share state exactly as replicas do (docs/api.md, "what replicas share"): what a
// process keeps in memory is a cache keyed by the database's change counters, or its own batch
// of check-ins and log deliveries, added (never overwritten) to the rows.
//
// The primary does what must happen once, before any worker opens the database: migrations and
// the bootstrap (settings, super-admin, demo fleet), the --dev temporary directory and its
// self-signed agent certificate. Then it forks the workers (each runs this same command, told by
// FLEETCTL_WORKER what was prepared), waits until every one listens, prints the banner, serves
// the aggregated Prometheus metrics, restarts a worker that dies, and on SIGTERM or Ctrl-C has
// every worker drain (their own bounded drain) before it removes the temporary directory.
import cluster, { type Worker } from 'node:cluster';
import { availableParallelism } from 'node:os';

/** What the primary tells a worker (env FLEETCTL_WORKER, JSON). */
export interface WorkerSetup {
  index: number;
  first: boolean;
  dbPath: string;
  tempDir?: string;
  agentCert?: { certFile: string; keyFile: string };
}

/** A worker's report once it listens. */
export interface WorkerReady {
  url: string;
  agent?: { url: string; address: string; certFile: string; certPem: string; trust: string };
}

/** Messages between the primary and its workers (besides prom-client's own). */
type Message =
  | { fleetctl: 'ready'; ready: WorkerReady }
  | { fleetctl: 'metrics-request'; id: number }
  | { fleetctl: 'metrics'; id: number; text?: string; error?: string };

/**
 * The default number of workers: one per core the process may use, less one, and at least one.
 * A process on every core left the database, TLS and the system to compete with them: on 2 cores
 * one process answered the lists (a local PostgreSQL or SQLite under check-ins) at a lower p99
 * than two in all lists measured but one, and an agent request cost about a fifth less CPU
 * (docs/api.md, "Every core: --workers N").
 */
export function defaultWorkers(cores = availableParallelism()): number {
  return Math.max(1, cores - 1);
}

/** In a worker this primary started: what it prepared; undefined in any other process. */
export function workerSetup(env: NodeJS.ProcessEnv = process.env): WorkerSetup | undefined {
  if (!cluster.isWorker || !env.FLEETCTL_WORKER) return undefined;
  return JSON.parse(env.FLEETCTL_WORKER) as WorkerSetup;
}

/**
 * A worker whose primary is gone (killed, or ended before the worker's start was done): its
 * requests to the primary (a listener's handle, `ready`, metrics) fail with EPIPE or a closed
 * channel, emitted on the worker. It ends quietly (Node's cluster ends a worker whose primary
 * disconnected with exit 0), instead of crashing with a stack.
 */
export function quietWithoutPrimary(): void {
  cluster.worker?.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE' || e.code === 'ERR_IPC_CHANNEL_CLOSED' || !process.connected) process.exit(0);
    throw e;
  });
}

/** Worker side: tells the primary it listens. */
export function reportReady(ready: WorkerReady): void {
  process.send?.({ fleetctl: 'ready', ready } satisfies Message);
}

/**
 * Worker side: the metrics of every worker, aggregated by the primary (what /metrics of the
 * admin API answers, whichever worker a scrape reaches). prom-client's own cluster support.
 */
export async function clusterMetricsText(registry: import('prom-client').Registry): Promise<() => Promise<string>> {
  const { AggregatorRegistry } = await import('prom-client');
  new AggregatorRegistry(); // answers the primary's requests for this worker's metrics
  AggregatorRegistry.setRegistries([registry]);
  let next = 0;
  const waiting = new Map<number, (m: Extract<Message, { fleetctl: 'metrics' }>) => void>();
  process.on('message', (m: Message) => {
    if (m?.fleetctl === 'metrics') waiting.get(m.id)?.(m);
  });
  return () =>
    new Promise<string>((resolve, reject) => {
      const id = next++;
      const timer = setTimeout(() => (waiting.delete(id), reject(new Error('the primary did not answer with the metrics'))), 10_000);
      waiting.set(id, (m) => {
        waiting.delete(id);
        clearTimeout(timer);
        if (m.text !== undefined) resolve(m.text);
        else reject(new Error(m.error ?? 'no metrics'));
      });
      process.send?.({ fleetctl: 'metrics-request', id } satisfies Message);
    });
}

export interface Primary {
  /** The first worker's report (URLs, the agent certificate). */
  ready: WorkerReady;
  /** Metrics of every worker, aggregated (the primary's --metrics-listen). */
  metrics(): Promise<string>;
  metricsContentType: string;
  /** Passes a signal on to every worker (SIGHUP: each reloads its agent certificate). */
  signal(sig: NodeJS.Signals): void;
  /** SIGTERM to every worker; resolves when all have exited (SIGKILL after `graceMs`). */
  stop(graceMs: number): Promise<void>;
}

/** The start was interrupted (SIGINT or SIGTERM): every worker has exited. */
export class StartInterrupted extends Error {
  constructor() {
    super('interrupted while the workers started');
  }
}

/** How the primary starts its workers. */
export interface StartOptions {
  log: (line: string) => void;
  /**
   * Resolves at SIGINT or SIGTERM. Before every worker listens, the start stops: each worker
   * gets SIGTERM and is waited for (SIGKILL after `graceMs`), then StartInterrupted. The
   * primary stays until its workers are gone: a worker still opening a listener asks the
   * primary for its handle, and with the primary gone that request fails (EPIPE).
   */
  stopped?: Promise<void>;
  graceMs: number;
}

/**
 * Forks `count` workers and resolves when every one listens. A worker that exits before it
 * listens fails the start (its own error is on stderr); one that dies later is restarted, after
 * a pause that doubles while it keeps dying (up to 30 s), so a crash loop cannot spin.
 */
export async function startWorkers(count: number, setup: Omit<WorkerSetup, 'index' | 'first'>, o: StartOptions): Promise<Primary> {
  const { log } = o;
  const { AggregatorRegistry } = await import('prom-client');
  const aggregator = new AggregatorRegistry();
  let stopping = false;
  const backoff = new Map<number, number>();

  const fork = (index: number): Worker => {
    const env = { FLEETCTL_WORKER: JSON.stringify({ ...setup, index, first: index === 0 } satisfies WorkerSetup) };
    const w = cluster.fork(env);
    w.on('message', (m: Message) => {
      if (m?.fleetctl !== 'metrics-request') return;
      aggregator.clusterMetrics().then(
        (text) => w.isConnected() && w.send({ fleetctl: 'metrics', id: m.id, text } satisfies Message),
        (e: Error) => w.isConnected() && w.send({ fleetctl: 'metrics', id: m.id, error: e.message } satisfies Message),
      );
    });
    return w;
  };

  const workers: Worker[] = [];
  /** SIGTERM to every live worker; resolves when all have exited (SIGKILL after `graceMs`). */
  const stopAll = async (graceMs: number) => {
    stopping = true;
    const alive = workers.filter((w) => !w.isDead());
    const exited = Promise.all(alive.map((w) => new Promise((r) => (w.isDead() ? r(undefined) : w.once('exit', r)))));
    for (const w of alive) w.process.kill('SIGTERM');
    const timer = setTimeout(() => {
      for (const w of alive) if (!w.isDead()) w.process.kill('SIGKILL');
    }, graceMs);
    await exited;
    clearTimeout(timer);
  };
  let interrupted = false;
  const ready = await new Promise<WorkerReady>((resolve, reject) => {
    let first: WorkerReady | undefined;
    let up = 0;
    void o.stopped?.then(() => {
      interrupted = true;
      reject(new StartInterrupted());
    });
    for (let i = 0; i < count; i++) {
      const w = fork(i);
      workers.push(w);
      const onExit = (code: number | null, signal: string | null) =>
        reject(
          Object.assign(new Error(`worker ${i + 1} of ${count} exited before it listened (${signal ?? `exit ${code}`})`), {
            exitCode: code ?? 1,
          }),
        );
      w.once('exit', onExit);
      w.on('message', (m: Message) => {
        if (m?.fleetctl !== 'ready') return;
        w.off('exit', onExit);
        if (i === 0) first = m.ready;
        if (++up === count) resolve(first!);
      });
    }
  }).catch(async (e: unknown) => {
    // Interrupted: each worker drains what it started. A worker that failed: the others are ended.
    if (interrupted) await stopAll(o.graceMs);
    else {
      stopping = true;
      for (const w of workers) w.process.kill('SIGKILL');
    }
    throw e;
  });

  // From here on a worker that dies is replaced (same index: the first worker's one-time work is done).
  workers.forEach((w, i) => watch(w, i));
  function watch(w: Worker, index: number) {
    w.on('exit', (code, signal) => {
      if (stopping) return;
      const wait = backoff.get(index) ?? 1000;
      backoff.set(index, Math.min(30_000, wait * 2));
      const said = `worker ${index + 1} exited (${signal ?? `exit ${code}`})`;
      // Exit 0 is a worker that drained at a signal of its own: Ctrl-C at a terminal reaches the
      // whole process group, and the worker can finish before the primary has seen it. Said (and
      // replaced) only if the primary is still not stopping by the restart.
      const clean = code === 0 && !signal;
      if (!clean) log(`${said}; starting another in ${wait / 1000} s`);
      setTimeout(() => {
        if (stopping) return;
        if (clean) log(`${said}; starting another`);
        const next = fork(index);
        workers[index] = next;
        next.on('message', (m: Message) => {
          // Healthy for a minute: the next crash restarts at once again.
          if (m?.fleetctl === 'ready') setTimeout(() => backoff.delete(index), 60_000).unref();
        });
        watch(next, index);
      }, wait).unref();
    });
  }

  return {
    ready,
    metrics: () => aggregator.clusterMetrics(),
    metricsContentType: aggregator.contentType,
    signal(sig) {
      for (const w of workers) if (!w.isDead()) w.process.kill(sig);
    },
    stop: stopAll,
  };
}
