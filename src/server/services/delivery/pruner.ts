// The spool's pruner (issue 28): deletes spooled entries every sink reading them has passed and
// that are outside the logs retention (issue 30 plugs its per-environment settings in through
// `retention`; until then it keeps nothing beyond the sinks' need). One process at a time prunes
// (the lease on sink_state row 0), every 10 s, in statements of at most 1,000 rows with a turn of
// the event loop between them, for at most a second per run.
//
// Per environment stream (environment, log type): the rows to delete are a prefix of it by id,
// since the sinks' cursors, the receive times and the stream positions all grow with ids: up to
// the lowest cursor of the enabled sinks reading it (its own and the global ones of that type),
// and up to the first row the retention keeps.
import type { Kysely } from 'kysely';
import type { Deps } from '../../context.js';
import type { DB } from '../../store/schema.js';
import { Periodic } from '../../lib/periodic.js';
import { destinationOf } from './destinations/index.js';
import { boundCursor, takeLease } from './sink-state.js';

/**
 * What the logs store keeps of an environment beyond the sinks' need (issue 30): rows received
 * within maxAgeMs and with an id of at least keepFromId (its bytes bound, as an id). A row is
 * deleted once every sink reading it has passed it and it is out of either.
 */
export interface Retention {
  maxAgeMs: number;
  keepFromId: number;
}

/** Without issue 30's settings: nothing is kept once every sink has it. */
export const NO_RETENTION: Retention = { maxAgeMs: 0, keepFromId: Infinity };

const EVERY_MS = 10_000;
const STEP_ROWS = 1000;
const BUDGET_MS = 1000;
const LEASE_MS = 30_000;

export class SpoolPruner {
  /** The retention of an environment (issue 30's settings), asked once per environment and run. */
  retention: (environmentId: number, now: Date) => Retention | Promise<Retention> = () => NO_RETENTION;
  private readonly task: Periodic;

  constructor(
    private readonly deps: Deps,
    private readonly readDb: Kysely<DB>,
    private readonly owner: string,
  ) {
    this.task = new Periodic('log spool prune', EVERY_MS, () => this.prune().then(() => undefined), deps.faults);
  }

  start(): void {
    this.task.start();
  }

  stop(): Promise<void> {
    return this.task.stop(false);
  }

  /** One run; returns the rows deleted (tests call it directly). */
  async prune(): Promise<number> {
    if (!(await takeLease(this.deps.db, 0, this.owner, Date.now(), LEASE_MS))) return 0;
    const started = Date.now();
    const [sinks, streams, all] = await Promise.all([
      this.readDb
        .selectFrom('log_sinks')
        .innerJoin('sink_state', 'sink_state.sink_id', 'log_sinks.id')
        .select(['log_sinks.environment_id', 'log_sinks.source', 'log_sinks.type', 'log_sinks.enabled', 'sink_state.cursor_id'])
        .execute(),
      this.readDb.selectFrom('log_streams').selectAll().where('environment_id', '!=', 0).execute(),
      this.readDb
        .selectFrom('log_streams')
        .select('last_id')
        .where('environment_id', '=', 0)
        .where('log_type', '=', '*')
        .executeTakeFirst(),
    ]);
    const lastId = Number(all?.last_id ?? 0);
    // State rows of sinks deleted by other ways than the sink API (an environment deleted with its sinks).
    await this.deps.db
      .deleteFrom('sink_state')
      .where('sink_id', '!=', 0)
      .where('sink_id', 'not in', (eb) => eb.selectFrom('log_sinks').select('id'))
      .execute();
    const readers = sinks.filter((s) => s.enabled && destinationOf(s.type));
    let deleted = 0;
    const now = this.deps.now();
    const kept = new Map<number, Retention>();
    for (const st of streams) {
      const mine = readers.filter((s) => s.source === st.log_type && (s.environment_id === 0 || s.environment_id === st.environment_id));
      let upTo = mine.length ? Math.min(...mine.map((s) => Number(s.cursor_id))) : lastId;
      let keep = kept.get(st.environment_id);
      if (!keep) kept.set(st.environment_id, (keep = await this.retention(st.environment_id, now)));
      // The rows the age keeps are a suffix of the stream: the first one found by a binary search.
      const stream = { id: 0, environment_id: st.environment_id, source: st.log_type };
      const cutoff = new Date(now.getTime() - keep.maxAgeMs).toISOString();
      const b = await boundCursor(
        this.readDb,
        stream,
        { id: 0, seq: 0, pos: 0 },
        { entries: Number(st.entries), bytes: Number(st.bytes) },
        lastId,
        { maxBytes: Infinity, cutoff },
      );
      // Undefined: the age keeps the whole stream; the bytes bound (keepFromId) may not.
      const byAge = b ? b.to.id : 0;
      const byBytes = Number.isFinite(keep.keepFromId) ? keep.keepFromId - 1 : lastId;
      upTo = Math.min(upTo, Math.max(byAge, byBytes));
      while (upTo > 0 && Date.now() - started < BUDGET_MS) {
        const ids = this.deps.db
          .selectFrom('log_spool')
          .select('id')
          .where('environment_id', '=', st.environment_id)
          .where('log_type', '=', st.log_type)
          .where('id', '<=', upTo)
          .orderBy('id')
          .limit(STEP_ROWS);
        const r = await this.deps.db.deleteFrom('log_spool').where('id', 'in', ids).executeTakeFirst();
        const n = Number(r.numDeletedRows);
        deleted += n;
        if (n < STEP_ROWS) break;
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
    return deleted;
  }
}
