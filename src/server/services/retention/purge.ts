// Retention (issue 27): what the database would otherwise keep for ever, purged by age in the
// background, in bounded steps. Settings (global, days; 0 keeps for ever):
// - admin/retention_query_results_days (30): live query answers; a query older than that which is
//   no longer running goes with its answers and the list of nodes it targeted;
// - admin/retention_carves_days (30): the blocks of carves older than that (a carve's archive is in
//   its blocks); the carve and its files stay listed, expired, their files PURGED;
// - admin/retention_audit_days (365): audit rows.
// Runs every admin/cleanup_expired seconds (900). Each statement deletes at most STEP rows (carve
// blocks: BLOCK_STEP, up to 8 MiB each) and yields the event loop between statements; a run stops
// after RUN_BUDGET_MS and the next run goes on, so a first purge of a year of rows never holds the
// database or the loop for long.
import { sql, type CompiledQuery, type ExpressionBuilder } from 'kysely';
import { writeInTransaction } from '../../store/db.js';
import type { DB } from '../../store/schema.js';
import type { Deps } from '../../context.js';
import { Periodic } from '../../lib/periodic.js';
import { integerSetting } from '../environments/settings-values.js';

export const RETENTION_SETTINGS = {
  queryResults: {
    service: 'admin',
    name: 'retention_query_results_days',
    value: 30,
    info: 'Days live query results are kept (0: for ever)',
  },
  carves: { service: 'admin', name: 'retention_carves_days', value: 30, info: 'Days the blocks of a carve are kept (0: for ever)' },
  audit: { service: 'admin', name: 'retention_audit_days', value: 365, info: 'Days audit log rows are kept (0: for ever)' },
} as const;

/** Rows one statement deletes. */
const STEP = 1000;
/** Carve blocks one statement deletes (each up to 8 MiB of base64). */
const BLOCK_STEP = 50;
/** A run gives up after this long; the next run continues. */
const RUN_BUDGET_MS = 2_000;
/** How often the interval setting is read again when purging is off or the interval is long. */
const TICK_MS = 5_000;
const DAY_MS = 86_400_000;

export interface PurgeCounts {
  query_results: number;
  queries: number;
  node_queries: number;
  carve_blocks: number;
  carve_files: number;
  audit_logs: number;
  /** The run stopped at its budget: more is due. */
  more: boolean;
}

const yieldLoop = () => new Promise<void>((r) => setImmediate(r));

/** One bounded run: what was purged. Each kind goes until it has nothing older left or the budget ends. */
export async function purgeByAge(deps: Deps, budgetMs = RUN_BUDGET_MS): Promise<PurgeCounts> {
  const t0 = Date.now();
  const left = () => Date.now() - t0 < budgetMs;
  const c: PurgeCounts = { query_results: 0, queries: 0, node_queries: 0, carve_blocks: 0, carve_files: 0, audit_logs: 0, more: false };
  const days = async (s: (typeof RETENTION_SETTINGS)[keyof typeof RETENTION_SETTINGS]) =>
    integerSetting(deps, s.service, s.name, 0, s.value);
  const cutoff = (d: number) => new Date(deps.now().getTime() - d * DAY_MS).toISOString();
  const db = deps.db;
  // Deletes through the store's writer (on SQLite a thread of its own, issue 31): a step's index and
  // trigger work never runs on the event loop. The ids are read first, on the connection for reads.
  const del = async (q: CompiledQuery) =>
    Number((await (deps.write ? deps.write([q]) : writeInTransaction(db, [q])))[0].numAffectedRows ?? 0n);

  const qDays = await days(RETENTION_SETTINGS.queryResults);
  if (qDays > 0) {
    const before = cutoff(qDays);
    // The oldest STEP at a time (index query_results_created), until none is older than the cutoff.
    for (let n = STEP; n === STEP && left(); await yieldLoop()) {
      const ids = (
        await db.selectFrom('query_results').select('id').where('created_at', '<', before).orderBy('created_at').limit(STEP).execute()
      ).map((r) => r.id);
      n = ids.length;
      if (n) c.query_results += await del(db.deleteFrom('query_results').where('id', 'in', ids).compile());
    }
    // Live queries (not carves) started before the cutoff and no longer running: what they targeted, then themselves.
    const finished = (eb: ExpressionBuilder<DB, 'queries'>) =>
      eb.and([
        eb('type', '=', 'query'),
        eb('created_at', '<', before),
        eb.or([
          eb('active', '=', 0),
          eb('completed', '=', 1),
          eb('deleted', '=', 1),
          eb('expired', '=', 1),
          eb.and([eb('expiration', '!=', ''), eb('expiration', '<', deps.now().toISOString())]),
        ]),
      ]);
    for (let n = STEP; n === STEP && left(); await yieldLoop()) {
      const pairs = await db
        .selectFrom('node_queries')
        .select(['query_id', 'node_id'])
        .where('query_id', 'in', db.selectFrom('queries').select('id').where(finished))
        .limit(STEP)
        .execute();
      n = pairs.length;
      for (const qid of new Set(pairs.map((p) => p.query_id))) {
        const nodes = pairs.filter((p) => p.query_id === qid).map((p) => p.node_id);
        c.node_queries += await del(db.deleteFrom('node_queries').where('query_id', '=', qid).where('node_id', 'in', nodes).compile());
      }
    }
    if (left()) {
      const gone = await db
        .selectFrom('queries')
        .select('id')
        .where(finished)
        .where((eb) =>
          eb.not(
            eb.exists(
              eb
                .selectFrom('query_results')
                .select(sql`1`.as('one'))
                .whereRef('query_results.query_id', '=', 'queries.id'),
            ),
          ),
        )
        .where((eb) =>
          eb.not(
            eb.exists(
              eb
                .selectFrom('node_queries')
                .select(sql`1`.as('one'))
                .whereRef('node_queries.query_id', '=', 'queries.id'),
            ),
          ),
        )
        .limit(STEP)
        .execute();
      if (gone.length)
        c.queries += await del(
          db
            .deleteFrom('queries')
            .where(
              'id',
              'in',
              gone.map((g) => g.id),
            )
            .compile(),
        );
    }
  }

  const cDays = await days(RETENTION_SETTINGS.carves);
  if (cDays > 0 && left()) {
    const before = cutoff(cDays);
    const files = await db
      .selectFrom('carve_files')
      .select(['id', 'session_id', 'query_id'])
      .where('created_at', '<', before)
      .where('status', '!=', 'PURGED')
      .limit(STEP)
      .execute();
    for (const f of files) {
      if (!left()) break;
      for (let n = BLOCK_STEP; n === BLOCK_STEP && left(); await yieldLoop()) {
        const blocks = await db
          .selectFrom('carve_blocks')
          .select('block_id')
          .where('session_id', '=', f.session_id)
          .limit(BLOCK_STEP)
          .execute();
        n = blocks.length;
        if (n)
          c.carve_blocks += await del(
            db
              .deleteFrom('carve_blocks')
              .where('session_id', '=', f.session_id)
              .where(
                'block_id',
                'in',
                blocks.map((b) => b.block_id),
              )
              .compile(),
          );
      }
      if (!left()) break;
      // The file stays listed: its archive is gone (downloads say so), and its carve is over.
      await del(db.updateTable('carve_files').set({ status: 'PURGED' }).where('id', '=', f.id).compile());
      await del(
        db
          .updateTable('queries')
          .set({ expired: 1, active: 0, updated_at: deps.now().toISOString() })
          .where('id', '=', f.query_id)
          .where('expired', '=', 0)
          .compile(),
      );
      c.carve_files++;
    }
  }

  const aDays = await days(RETENTION_SETTINGS.audit);
  if (aDays > 0) {
    const before = cutoff(aDays);
    for (let n = STEP; n === STEP && left(); await yieldLoop()) {
      const ids = (
        await db.selectFrom('audit_logs').select('id').where('created_at', '<', before).orderBy('created_at').limit(STEP).execute()
      ).map((r) => r.id);
      n = ids.length;
      if (n) c.audit_logs += await del(db.deleteFrom('audit_logs').where('id', 'in', ids).compile());
    }
  }
  c.more = !left();
  return c;
}

/**
 * The purge as a background task of the server (start.ts): every admin/cleanup_expired seconds,
 * at once again while a run ends at its budget. Failures are reported and retried (lib/periodic.ts).
 */
export class RetentionPurger {
  private readonly task: Periodic;
  private last = 0;
  /** What the last run purged (tests and the log line read it). */
  lastRun?: PurgeCounts;

  constructor(
    private readonly deps: Deps,
    private readonly log?: (line: string) => void,
  ) {
    this.task = new Periodic('retention purge', TICK_MS, () => this.tick(), deps.faults, 60_000);
  }

  private async tick(): Promise<void> {
    const seconds = await integerSetting(this.deps, 'admin', 'cleanup_expired', 0, 900);
    if (seconds <= 0 || Date.now() - this.last < seconds * 1000) return;
    await this.runOnce();
  }

  /** One run now (also the tests' way to purge without waiting). */
  async runOnce(): Promise<PurgeCounts> {
    this.last = Date.now();
    const c = await purgeByAge(this.deps);
    this.lastRun = c;
    const total = c.query_results + c.queries + c.node_queries + c.carve_blocks + c.audit_logs;
    if (total > 0) {
      this.log?.(
        `retention: purged ${c.query_results} query results, ${c.queries} queries, ${c.node_queries} query targets, ${c.carve_blocks} carve blocks (${c.carve_files} files), ${c.audit_logs} audit rows${c.more ? '; more next run' : ''}`,
      );
    }
    // More is due: go on soon instead of a whole interval later.
    if (c.more) this.last = 0;
    return c;
  }

  start(): void {
    this.last = Date.now();
    this.task.start();
  }

  async stop(): Promise<void> {
    await this.task.stop(false);
  }
}
