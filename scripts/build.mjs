// Bundles src/ into dist/ with esbuild:
// - dist/fleetctl.cjs: the CLI and the server as one CommonJS file, which bin/fleetctl.cjs compiles
//   with V8's code cache. Node 20 gives a code cache only to a script compiled through node:vm, not
//   to ES modules, and the cache is what brings `nodes list` under 100 ms (issue 31: 115 ms as ES
//   module chunks, 90 ms this way, docs/performance.md). Each module still runs only when first
//   used: esbuild wraps every module reached through `import()` in an init function, so a verb
//   evaluates what it imports and nothing else; the rest of the file is read, never compiled.
// - dist/agent-sim.js: the agent simulator as an ES module, for bench/*.mjs.
// Dependencies stay in node_modules (external) so native modules and wasm load as usual, except
// BUNDLED below.
import { build } from 'esbuild';
import { createHash } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

// Bundled rather than loaded from node_modules: a request pays for these at start-up, and one
// bundled copy costs less than their hundred-odd small files resolved and loaded one by one
// (issue 11: `nodes list` against a bare fetch). commander too: every command loads it, and its
// eight CommonJS files resolved and wrapped one by one cost more than the bundled copy (issue 31).
// undici: only a proxy, the server's HTTP sinks and the simulator use it, and bundled it is bytes
// read, not compiled, by the commands that do not.
const BUNDLED = new Set(['@sinclair/typebox', 'undici', 'commander']);
const pkg = JSON.parse(readFileSync('package.json', 'utf8'));
const external = Object.keys({ ...pkg.dependencies, ...pkg.optionalDependencies, ...pkg.devDependencies })
  .filter((name) => !BUNDLED.has(name))
  .flatMap((name) => [name, `${name}/*`]);

// FLEETCTL_OUTDIR lets parallel work build elsewhere (inside the repo, so node_modules resolve).
const outdir = process.env.FLEETCTL_OUTDIR || 'dist';
rmSync(outdir, { recursive: true, force: true });
const common = { bundle: true, platform: 'node', target: 'node20', external, sourcemap: 'linked', logLevel: 'warning' };

await build({
  ...common,
  entryPoints: { fleetctl: 'src/main.ts' },
  outdir,
  outExtension: { '.js': '.cjs' },
  format: 'cjs',
  // `import()` becomes require(): a script compiled through node:vm has no loader for `import()`
  // (it fails with ERR_VM_DYNAMIC_IMPORT_CALLBACK_MISSING), and every external is CommonJS or
  // dual (test/unit/startup.test.ts loads each).
  supported: { 'dynamic-import': false },
  // ASCII only, so the launcher reads the file as latin1: no UTF-8 decoding of 1.3 MB per start.
  charset: 'ascii',
  // Whitespace and syntax only: names stay as written, for stacks and the start-up test.
  minifyWhitespace: true,
  minifySyntax: true,
  define: { 'import.meta.url': '__fleetctl_url' },
  banner: { js: "const __fleetctl_url = require('node:url').pathToFileURL(__filename).href;" },
});

// V8 checks a code cache against the source's length, not its content: the launcher keys its cache
// on this digest, so a rebuild never runs bytecode compiled from another build.
const digest = createHash('sha256')
  .update(readFileSync(join(outdir, 'fleetctl.cjs')))
  .digest('hex')
  .slice(0, 16);
writeFileSync(join(outdir, 'fleetctl.cjs.id'), `${digest}\n`);

await build({
  ...common,
  entryPoints: { 'agent-sim': 'src/agent-sim/index.ts' },
  outdir,
  format: 'esm',
  // undici is CommonJS and requires Node built-ins: give the ES module a require.
  banner: { js: "import { createRequire as __fleetctlRequire } from 'node:module'; const require = __fleetctlRequire(import.meta.url);" },
});
