// Check-ins written straight to the database, as the server's check-in flush writes them
// (services/agents/checkins.ts): node_seen's columns, and the change counters moved (both: a test
// moves last_seen across windows, which the flush marks by moving the counts counter).
import { sql, type Kysely } from 'kysely';
import type { DB } from '../../src/server/store/schema.js';

/** `last_seen` null: never seen (stored as ''). */
export async function setSeen(
  db: Kysely<DB>,
  nodeId: number,
  values: { last_seen?: string | null; bytes_received?: number },
): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const { last_seen, ...rest } = values;
    await trx
      .updateTable('node_seen')
      .set({ ...rest, ...(last_seen !== undefined ? { last_seen: last_seen ?? '' } : {}) })
      .where('node_id', '=', nodeId)
      .execute();
    await sql`update node_generation set generation = generation + 1 where id in (1, 2)`.execute(trx);
  });
}
