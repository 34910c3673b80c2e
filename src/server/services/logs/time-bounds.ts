// Time bounds of a logs read as id bounds (issue 30). The spool's ids are its commit order and
// `received_at` is stamped at the commit, so time grows with id: the first id received at or
// after a time is found by a binary search over ids, each step one primary-key seek (about 24
// for 10 million lines), with no index on time to slow every append. Across replicas the clocks
// may differ a little, so the search looks MARGIN_MS earlier (later for an end) and the exact
// `received_at` condition is kept on the rows read.
import type { Kysely } from 'kysely';
import type { DB } from '../../store/schema.js';

export const MARGIN_MS = 60_000;

/** The newest id in the spool (0 when empty). Read before a page, it is where a follower goes on from. */
export async function headId(db: Kysely<DB>): Promise<number> {
  const r = await db
    .selectFrom('log_spool')
    .select((eb) => eb.fn.max('id').as('id'))
    .executeTakeFirst();
  return Number(r?.id ?? 0);
}

async function firstFrom(db: Kysely<DB>, id: number): Promise<{ id: number; at: string } | undefined> {
  const r = await db.selectFrom('log_spool').select(['id', 'received_at']).where('id', '>=', id).orderBy('id').limit(1).executeTakeFirst();
  return r ? { id: Number(r.id), at: r.received_at } : undefined;
}

/** The lowest id received at or after `iso` (as far as the clocks agree), or undefined when none is. */
export async function firstIdAtOrAfter(db: Kysely<DB>, iso: string): Promise<number | undefined> {
  // The two ends in two reads: SQLite answers min(id) or max(id) alone from the index, but both in
  // one select walk the whole table (1.9 s over 10 million lines in bench:logs).
  const first = await firstFrom(db, 0);
  if (!first) return undefined;
  let lo = first.id;
  const last = await firstFrom(db, await headId(db));
  if (!last || last.at < iso) return undefined;
  let hi = last.id;
  while (lo < hi) {
    const mid = lo + Math.floor((hi - lo) / 2);
    const row = await firstFrom(db, mid);
    if (!row) break;
    if (row.at >= iso) hi = row.id;
    else lo = row.id + 1;
  }
  return hi;
}

/** Id bounds for `since` (inclusive, as the lowest id to read) and `until` (the highest id to read). */
export async function idBounds(
  db: Kysely<DB>,
  since: string | undefined,
  until: string | undefined,
): Promise<{ low: number; high: number }> {
  const shift = (iso: string, ms: number) => new Date(Date.parse(iso) + ms).toISOString();
  let low = 0;
  let high = Number.MAX_SAFE_INTEGER;
  if (since) low = (await firstIdAtOrAfter(db, shift(since, -MARGIN_MS))) ?? Number.MAX_SAFE_INTEGER;
  if (until) {
    const after = await firstIdAtOrAfter(db, shift(until, MARGIN_MS));
    if (after !== undefined) high = after - 1;
  }
  return { low, high };
}
