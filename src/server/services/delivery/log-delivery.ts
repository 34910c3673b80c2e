// What the agent door hands logs to (issues 13, 28): status and result entries go to the durable
// spool (spool.ts) and the agent is answered once they are committed; the sinks drain the spool
// on their own (delivery.ts), so a slow or dead sink never makes an agent wait or resend.
// - status and result entries are spooled whenever the environment logs over TLS, with or without
//   sinks: the spool is also what `fleetctl logs` reads (issue 30);
// - live query answers (`query`) are stored by the API before they get here; they are spooled
//   only when a query sink of the environment (or a global one) is enabled, and when that fails
//   they are counted and audited as dropped for those sinks: osquery cannot be asked to resend
//   answers the API already has.
import type { Kysely } from 'kysely';
import type { Deps } from '../../context.js';
import type { DB, EnvironmentRow, LogSinkRow, NodeRow } from '../../store/schema.js';
import { entryFields, type Spool, type SpoolInput, type SpoolLogType } from './spool.js';
import type { Delivery } from './delivery.js';

/** What a delivery needs of the node that sent the logs. */
type LogNode = Pick<NodeRow, 'id' | 'uuid' | 'hostname'>;

/** An entry already serialised (a big batch decoded in the worker thread), with its fields. */
export interface EntryText {
  text: string;
  name?: string;
  severity?: number;
  time?: number;
}

export class LogDelivery {
  constructor(
    private readonly deps: Deps,
    private readonly spool: Spool,
    private readonly delivery: Delivery | undefined,
    /** Where the sinks of an environment come from (the agent door's counter-keyed cache). */
    private readonly sinkSource: (envId: number, source: string) => Promise<LogSinkRow[]> = (envId, source) =>
      enabledSinks(deps.db, envId, source),
  ) {}

  /** Spools parsed entries; resolves once they are committed (rejects: the agent is answered 503). */
  deliver(env: EnvironmentRow, node: LogNode, logType: SpoolLogType, entries: unknown[]): Promise<void> {
    return this.deliverTexts(
      env,
      node,
      logType,
      entries.map((e) => ({ text: JSON.stringify(e) ?? 'null', ...entryFields(e) })),
    );
  }

  async deliverTexts(env: EnvironmentRow, node: LogNode, logType: SpoolLogType, entries: EntryText[]): Promise<void> {
    if (entries.length === 0) return;
    const rows: SpoolInput[] = entries.map((e) => ({
      environmentId: env.id,
      nodeId: node.id,
      hostIdentifier: node.uuid,
      hostname: node.hostname,
      logType,
      name: logType === 'status' ? null : (e.name ?? null),
      severity: logType === 'status' ? (e.severity ?? null) : null,
      time: e.time,
      line: e.text,
    }));
    if (logType !== 'query') return this.spool.append(rows);
    const sinks = await this.sinkSource(env.id, 'query');
    if (sinks.length === 0) return;
    try {
      await this.spool.append(rows);
    } catch (e) {
      this.deps.faults.report('log spool (query answers)', e);
      for (const s of sinks)
        this.delivery?.dropped(
          s,
          rows.length,
          'spool_failed',
          `live query answers could not be spooled (${(e as Error).message}); the API keeps them`,
        );
    }
  }
}

/** The enabled sinks a log of `source` from environment `envId` goes to: the environment's, then the global ones (id 0), in order. */
export function enabledSinks(db: Kysely<DB>, envId: number, source: string): Promise<LogSinkRow[]> {
  return db
    .selectFrom('log_sinks')
    .selectAll()
    .where('environment_id', 'in', [envId, 0])
    .where('source', '=', source)
    .where('enabled', '=', 1)
    .orderBy('environment_id')
    .orderBy('sort_order')
    .execute();
}
