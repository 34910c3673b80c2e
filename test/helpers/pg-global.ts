// vitest globalSetup of the `postgres` project: one throwaway PostgreSQL cluster for the run;
// each test server gets a database of its own in it (test/helpers/test-db.ts).
import type { TestProject } from 'vitest/node';
import { startCluster } from '../../scripts/pg-cluster.mjs';

declare module 'vitest' {
  export interface ProvidedContext {
    pgAdminUrl: string;
    /** The cluster's directory (owned by the user the cluster runs as), for test certificates. */
    pgClusterDir: string;
  }
}

export default async function setup(project: TestProject): Promise<() => void> {
  const cluster = await startCluster();
  project.provide('pgAdminUrl', cluster.url);
  project.provide('pgClusterDir', cluster.dir);
  return () => cluster.stop();
}
