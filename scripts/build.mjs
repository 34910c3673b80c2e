// Bundles src/ into dist/ with esbuild: one entry plus lazily loaded chunks (server, prompts,
// ...), so start-up resolves a handful of files instead of hundreds. Dependencies stay in
// node_modules (packages: external) so native modules and wasm load as usual.
import { build } from 'esbuild';
import { rmSync } from 'node:fs';

// FLEETCTL_OUTDIR lets parallel work build elsewhere (inside the repo, so node_modules resolve).
const outdir = process.env.FLEETCTL_OUTDIR || 'dist';
rmSync(outdir, { recursive: true, force: true });
await build({
  // agent-sim: the agent simulator as its own entry, for bench/agents.mjs (the CLI loads it lazily too).
  entryPoints: { main: 'src/main.ts', 'agent-sim': 'src/agent-sim/index.ts' },
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  packages: 'external',
  sourcemap: 'linked',
  chunkNames: 'chunks/[name]-[hash]',
  logLevel: 'warning',
});
