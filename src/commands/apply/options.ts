/** The options of the apply verbs, shared by their declarations (index.ts) and their runs (run.ts). */
export interface FileOpts {
  file: string[];
  recursive?: boolean;
  prune?: boolean;
  dryRun?: boolean;
}
