/** The options of the schedule verbs, shared by their declarations (index.ts) and their runs (run.ts). */
export interface QueryOpts {
  pack?: string;
  query?: string;
  queryFile?: string;
  interval?: number;
  platform?: string;
  minVersion?: string;
  shard?: number;
  snapshot?: boolean;
  removed?: boolean;
  denylist?: boolean;
  description?: string;
  yes?: boolean;
}
