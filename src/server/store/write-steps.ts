// A write transaction whose later statements depend on the answers of earlier ones (the log
// spool's append when a differential result's stored report is read first), run as a few steps of
// statements rather than one statement at a time. On SQLite each step is one round trip to the
// agent door's writer thread (sqlite-writer.ts): at a few hundred agent requests a second the
// thread hand-offs, not the SQL, were what an append cost (issue 31: seven round trips for a
// result batch). On PostgreSQL the statements run one after another in a transaction.
import type { CompiledQuery, Kysely, QueryResult } from 'kysely';

/** Runs the statements in order in the transaction; `last`: the transaction commits after them. */
export type WriteStep = (statements: CompiledQuery[], last?: boolean) => Promise<QueryResult<unknown>[]>;

/**
 * Runs `fn` in one write transaction, its statements sent a step at a time. Commits when `fn`
 * resolves (with its last step when it said `last`); rolls back when a step or `fn` throws.
 */
export type WriteSteps = <T>(fn: (step: WriteStep) => Promise<T>) => Promise<T>;

/** WriteSteps over a Kysely transaction (PostgreSQL; SQLite without the writer thread, in tests). */
export function stepsOver<DB>(db: Kysely<DB>): WriteSteps {
  return (fn) =>
    db.transaction().execute((trx) =>
      fn(async (statements) => {
        const results: QueryResult<unknown>[] = [];
        for (const s of statements) results.push(await trx.executeQuery(s));
        return results;
      }),
    );
}

/** One step of a plan: statements run in order; `last`: the transaction commits after them. */
export interface PlanStep {
  statements: CompiledQuery[];
  last?: boolean;
}

/**
 * A write transaction written once and run by either runner below: a generator that yields its
 * steps and is handed each step's results. (The log spool's append: on the writer thread a step
 * is a round trip; on the event loop, where it is tried first, the whole plan runs at once.)
 */
export type StepPlan<T> = Generator<PlanStep, T, QueryResult<unknown>[]>;

/** Runs a plan through WriteSteps, a step at a time. */
export function runPlan<T>(steps: WriteSteps, plan: () => StepPlan<T>): Promise<T> {
  return steps(async (step) => {
    const gen = plan();
    let r = gen.next();
    while (!r.done) r = gen.next(await step(r.value.statements, r.value.last));
    return r.value;
  });
}

/**
 * Runs a plan at once, on the calling thread, when it can without waiting: SQLite's write lock
 * free and no transaction of the caller's own open. `undefined`: it did not start and nothing
 * changed (the caller runs it through WriteSteps); a database error is thrown, rolled back.
 */
export type WriteNow = <T>(plan: () => StepPlan<T>) => { value: T } | undefined;
