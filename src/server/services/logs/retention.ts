// How long the store of recent logs keeps an environment's lines (issue 30): by age and by bytes,
// per environment, from two settings (global values, overridden per environment with
// `settings set admin NAME VALUE --env ENV`), in days like the other retention settings (issue 27).
// The spool's pruner (services/delivery) asks `retention()` for each environment and deletes, in
// bounded steps, the lines every sink has taken that are older than the age or below the id where
// the bytes bound starts; this module also purges the query reports of nodes that stopped
// reporting for longer than the age.
import { sql, type Kysely } from 'kysely';
import type { Deps } from '../../context.js';
import type { DB } from '../../store/schema.js';
import { writeInTransaction } from '../../store/db.js';
import { integerSetting } from '../environments/settings-values.js';
import { Periodic } from '../../lib/periodic.js';
import { headId } from './time-bounds.js';

export const RETENTION_DAYS_SETTING = 'retention_logs_days';
export const RETENTION_MB_SETTING = 'retention_logs_mb';
/** A week of lines, and at most 1 GiB of them, per environment. */
export const RETENTION_DAYS_DEFAULT = 7;
export const RETENTION_MB_DEFAULT = 1024;
const DAY_MS = 86_400_000;
/** "No age bound" (retention_logs_days 0) as an age the pruner can subtract from now: a century. */
const NO_AGE_BOUND_MS = 36_500 * DAY_MS;

/** The settings catalogue entries (bootstrap.ts seeds them). */
export const RETENTION_SETTINGS = [
  {
    service: 'admin',
    name: RETENTION_DAYS_SETTING,
    type: 'integer' as const,
    value: RETENTION_DAYS_DEFAULT,
    info: "Days agents' log lines and query reports are kept (fleetctl logs; 0: no age bound, the size bound alone)",
  },
  {
    service: 'admin',
    name: RETENTION_MB_SETTING,
    type: 'integer' as const,
    value: RETENTION_MB_DEFAULT,
    info: "MiB of agents' log lines kept per environment; the oldest go first",
  },
];

export interface Retention {
  /** Lines received longer ago than this go. */
  maxAgeMs: number;
  /** Lines with a lower id go (the environment's bytes bound); 0: none for bytes. */
  keepFromId: number;
}

async function settings(deps: Pick<Deps, 'db'>, envId: number): Promise<{ days: number; mb: number }> {
  const d = deps as Deps;
  const [days, mb] = await Promise.all([
    integerSetting(d, 'admin', RETENTION_DAYS_SETTING, envId, RETENTION_DAYS_DEFAULT),
    integerSetting(d, 'admin', RETENTION_MB_SETTING, envId, RETENTION_MB_DEFAULT),
  ]);
  return { days: Math.max(0, days), mb: Math.max(1, mb) };
}

/**
 * The lowest id from which the environment's lines (every log type) take at most `maxBytes`.
 * Each spool row knows the bytes before it in its stream (epos) and each stream its total, so the
 * bytes from an id on are a subtraction per stream: a binary search over ids, one index seek per
 * stream and step, never a scan.
 */
export async function keepFromIdForBytes(db: Kysely<DB>, envId: number, maxBytes: number): Promise<number> {
  const streams = await db.selectFrom('log_streams').select(['log_type', 'bytes']).where('environment_id', '=', envId).execute();
  if (streams.length === 0) return 0;
  const eposFrom = async (type: string, id: number): Promise<{ id: number; epos: number } | undefined> => {
    const r = await db
      .selectFrom('log_spool')
      .select(['id', 'epos'])
      .where('environment_id', '=', envId)
      .where('log_type', '=', type)
      .where('id', '>=', id)
      .orderBy('id')
      .limit(1)
      .executeTakeFirst();
    return r ? { id: Number(r.id), epos: Number(r.epos) } : undefined;
  };
  const kept = async (id: number): Promise<{ bytes: number; lowest: number }> => {
    let bytes = 0;
    let lowest = Infinity;
    for (const s of streams) {
      const first = await eposFrom(s.log_type, id);
      if (!first) continue;
      bytes += Number(s.bytes) - first.epos;
      lowest = Math.min(lowest, first.id);
    }
    return { bytes, lowest };
  };
  const now = await kept(0);
  if (now.bytes <= maxBytes || now.lowest === Infinity) return 0;
  let lo = now.lowest;
  let hi = (await headId(db)) + 1;
  while (lo < hi) {
    const mid = lo + Math.floor((hi - lo) / 2);
    if ((await kept(mid)).bytes <= maxBytes) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/** What the spool's pruner keeps of an environment's lines (the pruner applies it below every sink's cursor). */
export async function retention(deps: Pick<Deps, 'db'>, envId: number): Promise<Retention> {
  const s = await settings(deps, envId);
  return {
    maxAgeMs: s.days === 0 ? NO_AGE_BOUND_MS : s.days * DAY_MS,
    keepFromId: await keepFromIdForBytes(deps.db, envId, s.mb * 1024 * 1024),
  };
}

/** Rows deleted per statement: each is short, so writers (the agent door's) wait little. */
const STEP = 1000;

/** Query reports not updated within the environment's retention age go (nodes that stopped reporting, queries removed). */
export class ReportPurger {
  private readonly task: Periodic;

  constructor(
    private readonly deps: Deps,
    everyMs = 10_000,
  ) {
    this.task = new Periodic('query report purge', everyMs, async () => void (await this.run()), deps.faults);
  }

  start(): void {
    this.task.start();
  }

  stop(): Promise<void> {
    return this.task.stop(false);
  }

  async run(): Promise<number> {
    let removed = 0;
    const envs = await this.deps.db.selectFrom('query_reports').select('environment_id').distinct().execute();
    for (const { environment_id: env } of envs) {
      const { days } = await settings(this.deps, env);
      if (days === 0) continue;
      const cutoff = new Date(this.deps.now().getTime() - days * DAY_MS).toISOString();
      for (;;) {
        // Through the store's writer (SQLite: a thread of its own), a thousand rows a statement.
        const q = sql`
          delete from query_reports where environment_id = ${env} and (name, node_id) in (
            select name, node_id from query_reports where environment_id = ${env} and reported_at < ${cutoff} limit ${STEP})`.compile(
          this.deps.db,
        );
        const [r] = this.deps.write ? await this.deps.write([q]) : await writeInTransaction(this.deps.db, [q]);
        const n = Number(r?.numAffectedRows ?? 0);
        removed += n;
        if (n < STEP) break;
      }
    }
    return removed;
  }
}
