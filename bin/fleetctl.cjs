#!/usr/bin/env node
// CommonJS, not an ES module: the ES module loader costs this launcher 5 ms of every start.
const { closeSync, fstatSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } = require('node:fs');
const { createRequire } = require('node:module');
const { homedir } = require('node:os');
const { dirname, isAbsolute, join } = require('node:path');
const { Script } = require('node:vm');

// `fleetctl --version` alone needs nothing but the version: answer it before the command tree
// loads (scripts and installers call it often). Everything else goes to the built bundle.
const args = process.argv.slice(2);
if (args.length === 1 && (args[0] === '--version' || args[0] === '-V')) {
  process.stdout.write(`${JSON.parse(readFileSync(join(__dirname, '../package.json'), 'utf8')).version}\n`);
} else {
  // A command that runs long holds at most a page or two of data at a time: V8 tuned for size
  // keeps an --all export of any fleet under 100 MiB (121 MiB without), at the speed of a raw page
  // loop (npm run bench). A one-page command keeps V8's defaults: tuned for size, the collector
  // ran through a fifth of `nodes list`'s start-up. The server and the simulator keep them too.
  const long = args.some((a) => a === '--all' || a === '--follow' || a === '--watch' || a === '-w' || a.startsWith('--watch='));
  const serves = args[0] === 'server' || args[0] === 'dev';
  if (long && !serves) require('node:v8').setFlagsFromString('--optimize-for-size');
  run(join(__dirname, '../dist/fleetctl.cjs'), !long && !serves);
}

/**
 * Compiles and runs the bundle with V8's code cache, as Node 22's module.enableCompileCache()
 * does: the bytecode of everything a command compiled, kept per user, so the next command skips
 * compiling it (25 ms of `nodes list`'s 115, docs/performance.md). The cache is written once, at
 * the exit of a short command (a server's would carry all of its code into every command's start),
 * and again when V8 rejects it (another Node, other V8 flags). Without a cache the bundle compiles
 * as any script does: the cache only saves time.
 */
function run(file, mayWrite) {
  // The build writes ASCII only (scripts/build.mjs): latin1 reads it without decoding UTF-8.
  const source = readFileSync(file, 'latin1');
  const cache = cachePath(file);
  const cachedData = cache && readOwn(cache);
  const script = new Script(`(function (exports, require, module, __filename, __dirname) {${source}\n})`, { filename: file, cachedData });
  if (cache && mayWrite && (!cachedData || script.cachedDataRejected)) process.once('exit', () => save(cache, script));
  const module = { exports: {} };
  script.runInThisContext()(module.exports, createRequire(file), module, file, dirname(file));
}

/** ~/.cache/fleetctl (XDG_CACHE_HOME), one file per build and Node: V8 checks only the source's length. */
function cachePath(file) {
  try {
    const build = readFileSync(`${file}.id`, 'utf8').trim();
    const base =
      process.env.XDG_CACHE_HOME && isAbsolute(process.env.XDG_CACHE_HOME) ? process.env.XDG_CACHE_HOME : join(homedir(), '.cache');
    // A relative home (HOME=~, as npm run gen renders help) would put a cache in the working directory.
    return isAbsolute(base) ? join(base, 'fleetctl', `${build}-${process.version}-${process.arch}.v8cache`) : undefined;
  } catch {
    return undefined; // no build id (a build of another kind) or no home: run without a cache
  }
}

/** The cache only if this user wrote it and no one else can: bytecode from it runs as this user. */
function readOwn(path) {
  let fd;
  try {
    fd = openSync(path, 'r');
    const st = fstatSync(fd);
    if (!st.isFile() || (process.getuid && st.uid !== process.getuid()) || st.mode & 0o022) return undefined;
    return readFileSync(fd);
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** Written whole or not at all (rename), and the caches of other builds removed. */
function save(path, script) {
  const dir = dirname(path);
  const tmp = `${path}.${process.pid}.tmp`;
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    writeFileSync(tmp, script.createCachedData(), { mode: 0o600 });
    renameSync(tmp, path);
    for (const f of readdirSync(dir)) if (f.endsWith('.v8cache') && join(dir, f) !== path) rmSync(join(dir, f), { force: true });
  } catch {
    // A cache that cannot be written costs the next start its compile time, nothing else.
    try {
      rmSync(tmp, { force: true });
    } catch {
      /* nothing left to do */
    }
  }
}
