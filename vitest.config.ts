import { defineConfig } from 'vitest/config';

// The server suite runs twice: on SQLite (with everything else) and on a real PostgreSQL
// (a throwaway cluster started by test/helpers/pg-global.ts). Files about one database only
// (SQLite's files, threads and page limits; PostgreSQL's TLS, pg_dump and a stopped server) are
// in that database's project alone, rather than skipped in the other.
const SQLITE_ONLY = [
  'test/server/trust-files.test.ts',
  'test/server/sqlite-wal.test.ts',
  'test/server/sqlite-writer-steps.test.ts',
  'test/server/admin-reads.test.ts',
  'test/server/sqlite-full-transaction.test.ts',
  'test/server/faults-sqlite.test.ts',
];
const POSTGRES_ONLY = ['test/server/postgres-tls.test.ts', 'test/server/upgrade-postgres.test.ts', 'test/server/faults-postgres.test.ts'];

export default defineConfig({
  test: {
    // End-to-end tests start real servers and processes: generous timeouts, limited parallelism
    // (the CI machine has 2 cores).
    // Bounds for a test that hangs, not measures of speed: generous, so a machine loaded many times
    // over (load 28 on 2 cores was seen while other work ran) still finishes the tests that do not hang.
    testTimeout: 180_000,
    hookTimeout: 300_000,
    pool: 'forks',
    // Files share their worker instead of a fresh process each (issue 20, test speed): measured on
    // the server suite (PostgreSQL), 44 s of CPU against 74 s with a fork per file; the end-to-end
    // files spend theirs in the processes they start, the same either way. Every file cleans up
    // after itself (servers stopped, env restored, real timers back), which this relies on.
    poolOptions: { forks: { maxForks: 2, minForks: 1, isolate: false } },
    projects: [
      { extends: true, test: { name: 'sqlite', include: ['test/**/*.test.ts'], exclude: POSTGRES_ONLY } },
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
