// Bundles src/ into dist/ with esbuild: one entry plus lazily loaded chunks (server, prompts,
// ...), so start-up resolves a handful of files instead of hundreds. Dependencies stay in
// node_modules (external) so native modules and wasm load as usual, except BUNDLED below.
import { build } from 'esbuild';
import { readFileSync, rmSync } from 'node:fs';

// Bundled rather than loaded from node_modules: a request pays for these at start-up, and one
// bundled chunk parses in a few milliseconds where their hundred-odd small files take 60 ms each
// to resolve and load (issue 11: `nodes list` against a bare fetch). commander too: every command
// loads it, and its eight CommonJS files resolved and wrapped one by one cost more than the
// bundled copy (issue 31).
const BUNDLED = new Set(['@sinclair/typebox', 'undici', 'commander']);
const pkg = JSON.parse(readFileSync('package.json', 'utf8'));
const external = Object.keys({ ...pkg.dependencies, ...pkg.optionalDependencies, ...pkg.devDependencies })
  .filter((name) => !BUNDLED.has(name))
  .flatMap((name) => [name, `${name}/*`]);

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
  external,
  // undici is CommonJS and requires Node built-ins: give the ESM chunks a require.
  banner: { js: "import { createRequire as __fleetctlRequire } from 'node:module'; const require = __fleetctlRequire(import.meta.url);" },
  sourcemap: 'linked',
  chunkNames: 'chunks/[name]-[hash]',
  logLevel: 'warning',
});
