// Generates completions/ and man/ from the command tree (src/gen), and lists the man pages in
// package.json "man". Run by `npm run gen`; test/gen checks that the checked-in files are current.
//
//   node scripts/gen.mjs [--out DIR]    write into DIR instead of the repository (package.json untouched)
//
// It bundles src/gen/index.ts on its own (esbuild) rather than adding an entry to the CLI build:
// a second entry would move shared code into chunks that every CLI start then has to load.
import { build } from 'esbuild';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const root = resolve(import.meta.dirname, '..');
const args = process.argv.slice(2);
const outIndex = args.indexOf('--out');
if (args.some((a, i) => a !== '--out' && i !== outIndex + 1) || (outIndex >= 0 && !args[outIndex + 1])) {
  process.stderr.write('usage: node scripts/gen.mjs [--out DIR]\n');
  process.exit(2);
}
const outDir = outIndex >= 0 ? resolve(args[outIndex + 1]) : root;

// The files must not depend on who generates them, or where: a help text may show a default
// read from the environment (e.g. the server's database path under $HOME). Read the tree as a
// user with no settings on Linux would see it; paths under the home directory then print as ~.
for (const k of Object.keys(process.env)) if (/^(FLEETCTL_|XDG_)/.test(k)) delete process.env[k];
process.env.HOME = '~';

mkdirSync(join(root, '.build'), { recursive: true });
const tmp = mkdtempSync(join(root, '.build', '.gen-'));
let files;
try {
  const outfile = join(tmp, 'gen.mjs');
  await build({
    entryPoints: [join(root, 'src/gen/index.ts')],
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    packages: 'external',
    logLevel: 'warning',
  });
  Object.defineProperty(process, 'platform', { value: 'linux' });
  const gen = await import(pathToFileURL(outfile).href);
  files = gen.generateFiles(await gen.fullProgram());
} finally {
  rmSync(tmp, { recursive: true, force: true });
}

for (const [path, text] of files) {
  mkdirSync(dirname(join(outDir, path)), { recursive: true });
  writeFileSync(join(outDir, path), text);
}
// A group that no longer exists leaves no page behind.
const pages = [...files.keys()].filter((p) => p.startsWith('man/'));
for (const name of readdirSync(join(outDir, 'man'))) {
  if (/^fleetctl.*\.1$/.test(name) && !pages.includes(`man/${name}`)) rmSync(join(outDir, 'man', name));
}

if (outDir === root) {
  const pkgPath = join(root, 'package.json');
  const text = readFileSync(pkgPath, 'utf8');
  const pkg = JSON.parse(text);
  if (JSON.stringify(pkg.man) !== JSON.stringify(pages)) {
    pkg.man = pages;
    writeFileSync(pkgPath, `${JSON.stringify(pkg, null, 2)}\n`);
    process.stderr.write('updated package.json "man"\n');
  }
}
process.stderr.write(`generated ${files.size} files in ${outDir === root ? '.' : outDir}: ${[...files.keys()].join(' ')}\n`);
