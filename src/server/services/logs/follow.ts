// Following (issue 30): a `GET /api/v1/logs/{env}?order=asc&wait=N` with nothing new is held until
// a line of its environment is committed, or N seconds pass (long polling). Every follower of a
// process waits on one LogWatch: woken at once by this process's own commits (the spool's
// `committed` event), and, while anyone waits, by one look at the newest line of each environment
// waited for (two index seeks) every POLL_MS for what other replicas or workers committed. So
// followers cost the database a few seeks per process every POLL_MS however many they are, and
// nothing on the agent door's path.
import type { Kysely } from 'kysely';
import type { DB } from '../../store/schema.js';

export const POLL_MS = 250;
/** Waiting followers per process beyond which a new one is answered at once (it asks again). */
export const MAX_WAITERS = 1000;

interface Waiter {
  env: number;
  after: number;
  done: () => void;
}

export class LogWatch {
  private waiters = new Set<Waiter>();
  private timer?: NodeJS.Timeout;
  private polling?: Promise<void>;
  closed = false;

  constructor(
    private readonly db: Kysely<DB>,
    private readonly onError: (e: unknown) => void = () => undefined,
  ) {}

  /** This process committed lines of these environments (the spool's `committed` event). */
  committed(envs: Iterable<number>): void {
    const set = new Set(envs);
    for (const w of this.waiters) if (set.has(w.env)) w.done();
  }

  /**
   * Resolves when a line of `env` with an id above `after` may exist, after `ms`, when `signal`
   * aborts (the client went away) or at close (shutdown). Resolves at once past MAX_WAITERS.
   */
  wait(env: number, after: number, ms: number, signal?: AbortSignal): Promise<void> {
    if (this.closed || ms <= 0 || signal?.aborted || this.waiters.size >= MAX_WAITERS) return Promise.resolve();
    return new Promise((resolve) => {
      const w: Waiter = {
        env,
        after,
        done: () => {
          if (!this.waiters.delete(w)) return;
          clearTimeout(t);
          signal?.removeEventListener('abort', w.done);
          if (this.waiters.size === 0) this.stopPolling();
          resolve();
        },
      };
      const t = setTimeout(w.done, ms);
      signal?.addEventListener('abort', w.done, { once: true });
      this.waiters.add(w);
      this.startPolling();
    });
  }

  private startPolling(): void {
    if (this.timer || this.closed) return;
    this.timer = setInterval(() => void this.poll(), POLL_MS);
    this.timer.unref();
  }

  private stopPolling(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /**
   * One look at the newest line of each waited-for environment: per environment and log type the
   * top of the spool's (environment_id, log_type, id) index, one seek each.
   */
  private poll(): Promise<void> {
    if (this.polling || this.waiters.size === 0) return this.polling ?? Promise.resolve();
    this.polling = this.look().finally(() => (this.polling = undefined));
    return this.polling;
  }

  private async look(): Promise<void> {
    try {
      const envs = [...new Set([...this.waiters].map((w) => w.env))];
      const last = new Map<number, number>();
      for (const env of envs) {
        let top = 0;
        for (const type of ['result', 'status']) {
          const r = await this.db
            .selectFrom('log_spool')
            .select((eb) => eb.fn.max('id').as('id'))
            .where('environment_id', '=', env)
            .where('log_type', '=', type)
            .executeTakeFirst();
          top = Math.max(top, Number(r?.id ?? 0));
        }
        last.set(env, top);
      }
      for (const w of this.waiters) if ((last.get(w.env) ?? 0) > w.after) w.done();
    } catch (e) {
      // A database that is away: the followers wait out their time and ask again.
      this.onError(e);
    }
  }

  /** Shutdown: every follower is answered now; resolves when a look in progress has ended (before the store closes). */
  close(): Promise<void> {
    this.closed = true;
    for (const w of [...this.waiters]) w.done();
    this.stopPolling();
    return this.polling ?? Promise.resolve();
  }

  get size(): number {
    return this.waiters.size;
  }
}
