// Demo second factors (--dev): filled in by the MFA work.
import type { Kysely } from 'kysely';
import type { DB } from './store/schema.js';

/** Returns extra banner text for the dev server. */
export async function seedAuthExtras(db: Kysely<DB>, opts: { now: Date; password: string }): Promise<string> {
  void db;
  void opts;
  return '';
}
