// What the agent door reads on every request, kept per process and keyed by the database's change
// counters (issue 21), so an agent request runs no SQL of its own in the common case:
// - the change counters themselves: one read per event-loop turn, shared by every request
//   handled in that turn (a write committed by another process is seen by the next turn);
// - environments by UUID or name: keyed by the configuration counter (4);
// - nodes by key (id, uuid, hostname, environment, last address written): keyed by the node-key
//   counter (7), which moves when a node is deleted or re-keyed, not when one enrolls;
// - the live queries and carves running, and which nodes still owe them an answer: keyed by the
//   live-query counter (8); a node that owes nothing is answered {} without a query, one that may
//   owe reads its pending queries (and is forgotten as soon as it owes nothing);
// - the log sinks of an environment and source: keyed by the configuration counter (4).
// With N processes or replicas each keeps its own caches; every write that matters moves a
// counter in the writing transaction (triggers), so each process sees it on its next turn.
import type { Kysely } from 'kysely';
import type { Deps } from '../context.js';
import type { DB, EnvironmentRow, LogSinkRow, NodeRow } from '../store/schema.js';
import { readGenerations, type Generations } from '../store/node-index.js';
import { NEVER } from '../../api/index.js';
import { enabledSinks } from '../services/delivery/log-delivery.js';
import { integerSetting } from '../services/environments/settings-values.js';

/** What the agent door needs of a node (a small part of its row: a fleet's worth is kept). */
export type AgentNode = Pick<NodeRow, 'id' | 'uuid' | 'hostname' | 'environment_id' | 'ip_address' | 'details_at' | 'created_at'>;

/** Most node keys kept per process: a fleet of this size needs no query to recognise its agents. */
const MAX_NODES = 1_000_000;

interface ActiveQueries {
  generation: number;
  /** The running live queries and carves: their expiry ('' or NEVER: none). */
  queries: { id: number; expiration: string }[];
  /** Nodes that may owe one of them an answer (loaded when they changed; shrinks as nodes answer). */
  owed: Set<number> | undefined;
  loadingOwed?: Promise<Set<number>>;
}

export class AgentState {
  private turn?: Promise<Generations>;
  private envs = new Map<string, Promise<EnvironmentRow | undefined>>();
  private envGeneration = -1;
  private nodes = new Map<string, AgentNode>();
  private nodeGeneration = -1;
  private active?: ActiveQueries;
  private activeLoading?: Promise<ActiveQueries>;
  private sinks = new Map<string, Promise<LogSinkRow[]>>();
  private sinkGeneration = -1;
  private accelerated = new Map<number, Promise<number>>();
  private acceleratedGeneration = -1;

  constructor(private readonly deps: Deps) {}

  private get db(): Kysely<DB> {
    return this.deps.db;
  }

  /** The change counters, read once per event-loop turn. */
  generations(): Promise<Generations> {
    if (!this.turn) {
      const read = readGenerations(this.db, this.deps.readNow);
      this.turn = read;
      setImmediate(() => {
        if (this.turn === read) this.turn = undefined;
      });
      // A failed read is not kept for the rest of the turn's requests to trip over again.
      read.catch(() => {
        if (this.turn === read) this.turn = undefined;
      });
    }
    return this.turn;
  }

  /** The environment an agent path names, by UUID (lower-cased) or by name. */
  async env(ref: string): Promise<EnvironmentRow | undefined> {
    const g = (await this.generations()).config;
    if (g !== this.envGeneration) {
      this.envs.clear();
      this.envGeneration = g;
    }
    let hit = this.envs.get(ref);
    if (!hit) {
      if (this.envs.size >= 1000) this.envs.clear(); // refs come from the network: bounded
      hit = this.db
        .selectFrom('environments')
        .selectAll()
        .where((eb) => eb.or([eb('uuid', '=', ref.toLowerCase()), eb('name', '=', ref)]))
        .orderBy((eb) => eb.case().when('uuid', '=', ref.toLowerCase()).then(0).else(1).end())
        .executeTakeFirst();
      const entries = this.envs;
      entries.set(ref, hit);
      hit.catch(() => entries.delete(ref));
    }
    return hit;
  }

  /** The node holding this key in this environment, or undefined (unknown, deleted, another environment's). */
  async node(env: EnvironmentRow, key: unknown): Promise<AgentNode | undefined> {
    if (typeof key !== 'string' || key.length === 0 || key.length > 128) return undefined;
    const g = (await this.generations()).nodeKeys;
    if (g !== this.nodeGeneration) {
      this.nodes.clear();
      this.nodeGeneration = g;
    }
    let n = this.nodes.get(key);
    if (!n) {
      n = await this.db
        .selectFrom('nodes')
        .select(['id', 'uuid', 'hostname', 'environment_id', 'ip_address', 'details_at', 'created_at'])
        .where('node_key', '=', key)
        .executeTakeFirst();
      if (!n) return undefined; // unknown keys are not kept: the network chooses them
      if (this.nodeGeneration === g) {
        if (this.nodes.size >= MAX_NODES) this.nodes.clear();
        this.nodes.set(key, n);
      }
    }
    return n.environment_id === env.id ? n : undefined;
  }

  /**
   * tls/accelerated_seconds of an environment (its own value, else the global one; 0: off), keyed
   * by the configuration counter (4), which settings changes move.
   */
  async acceleratedSeconds(envId: number): Promise<number> {
    const g = (await this.generations()).config;
    if (g !== this.acceleratedGeneration) {
      this.accelerated.clear();
      this.acceleratedGeneration = g;
    }
    let hit = this.accelerated.get(envId);
    if (!hit) {
      hit = integerSetting(this.deps, 'tls', 'accelerated_seconds', envId, 0);
      const entries = this.accelerated;
      entries.set(envId, hit);
      hit.catch(() => entries.delete(envId));
    }
    return hit;
  }

  /** A node just enrolled or re-keyed by this process: known without a query. */
  remember(key: string, node: AgentNode): void {
    if (this.nodes.size >= MAX_NODES) this.nodes.clear();
    this.nodes.set(key, node);
  }

  private async activeQueries(): Promise<ActiveQueries> {
    const g = (await this.generations()).liveQueries;
    if (this.active?.generation === g) return this.active;
    if (!this.activeLoading) {
      const loading = (async () => {
        const queries = await this.db
          .selectFrom('queries')
          .select(['id', 'expiration'])
          .where('active', '=', 1)
          .where('deleted', '=', 0)
          .where('expired', '=', 0)
          .where('completed', '=', 0)
          .execute();
        return { generation: g, queries, owed: undefined };
      })();
      this.activeLoading = loading;
      loading.then(
        (a) => {
          if (!this.active || this.active.generation <= a.generation) this.active = a;
          if (this.activeLoading === loading) this.activeLoading = undefined;
        },
        () => {
          if (this.activeLoading === loading) this.activeLoading = undefined;
        },
      );
    }
    return this.activeLoading;
  }

  /**
   * Whether this node may owe a live query or carve an answer: false means its distributed read
   * is `{}` without a query. Loaded once per change of the live queries (one indexed read of the
   * pending rows of the running ones).
   */
  async mayOwe(nodeId: number): Promise<boolean> {
    const a = await this.activeQueries();
    const now = this.deps.now().toISOString();
    const running = a.queries.filter((q) => !q.expiration || q.expiration === NEVER || q.expiration > now);
    if (running.length === 0) return false;
    if (!a.owed) {
      a.loadingOwed ??= this.db
        .selectFrom('node_queries')
        .select('node_id')
        .where('status', '=', 'pending')
        .where(
          'query_id',
          'in',
          running.map((q) => q.id),
        )
        .execute()
        .then((rows) => (a.owed = new Set(rows.map((r) => r.node_id))));
      a.loadingOwed.catch(() => (a.loadingOwed = undefined));
      await a.loadingOwed;
    }
    return a.owed!.has(nodeId);
  }

  /** The node owes nothing now (its pending queries read empty): no query for it until the live queries change. */
  owesNothing(nodeId: number): void {
    this.active?.owed?.delete(nodeId);
  }

  /** The enabled sinks of an environment (and the global ones) for one log source, in delivery order. */
  async sinksFor(envId: number, source: string): Promise<LogSinkRow[]> {
    const g = (await this.generations()).config;
    if (g !== this.sinkGeneration) {
      this.sinks.clear();
      this.sinkGeneration = g;
    }
    const key = `${envId}\u0000${source}`;
    let hit = this.sinks.get(key);
    if (!hit) {
      hit = enabledSinks(this.db, envId, source);
      const entries = this.sinks;
      entries.set(key, hit);
      hit.catch(() => entries.delete(key));
    }
    return hit;
  }
}
