import { defineConfig } from 'vitest/config';

// The server suite runs twice: on SQLite (with everything else) and on a real PostgreSQL
// (a throwaway cluster started by test/helpers/pg-global.ts). Tests about SQLite itself (file
// modes, FTS5 query plans, SQLite triggers) stay in the sqlite project; their PostgreSQL
// counterparts live beside them and skip themselves on SQLite.
const SQLITE_ONLY = ['test/server/trust-files.test.ts'];

export default defineConfig({
  test: {
    // End-to-end tests start real servers and processes: generous timeouts, limited parallelism
    // (the CI machine has 2 cores).
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
    projects: [
      { extends: true, test: { name: 'sqlite', include: ['test/**/*.test.ts'] } },
      {
        extends: true,
        test: {
          name: 'postgres',
          include: ['test/server/**/*.test.ts'],
          exclude: SQLITE_ONLY,
          globalSetup: ['test/helpers/pg-global.ts'],
          env: { FLEETCTL_TEST_DB: 'postgres' },
        },
      },
    ],
  },
});
