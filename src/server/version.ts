// What the server runs (issue 27): its release, and the schema of the database it serves.
import type { Kysely } from 'kysely';
import pkg from '../../package.json' with { type: 'json' };
import type { DB } from './store/schema.js';

export const SERVER_VERSION: string = pkg.version;

/** The last migration applied to the database ('' before the first). */
export async function appliedSchema(db: Kysely<DB>): Promise<string> {
  const r = await (db as unknown as Kysely<{ kysely_migration: { name: string } }>)
    .selectFrom('kysely_migration')
    .select('name')
    .orderBy('name', 'desc')
    .limit(1)
    .executeTakeFirst();
  return r?.name ?? '';
}
