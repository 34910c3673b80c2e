// Which database a test server runs on: SQLite (a temporary file, the default) or, in the
// `postgres` vitest project (FLEETCTL_TEST_DB=postgres), a fresh database of the run's cluster.
import { inject } from 'vitest';
import { createDatabaseAt } from '../../scripts/pg-cluster.mjs';

export const onPostgres = process.env.FLEETCTL_TEST_DB === 'postgres';

/** A new empty PostgreSQL database URL in the postgres project; undefined on SQLite. */
export async function testDatabaseUrl(): Promise<string | undefined> {
  if (!onPostgres) return undefined;
  return createDatabaseAt(inject('pgAdminUrl'));
}
