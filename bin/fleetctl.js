#!/usr/bin/env node
// `fleetctl --version` alone needs nothing but the version: answer it before the command tree
// loads (scripts and installers call it often). Everything else goes to the built entry.
const args = process.argv.slice(2);
if (args.length === 1 && (args[0] === '--version' || args[0] === '-V')) {
  const { readFileSync } = await import('node:fs');
  process.stdout.write(`${JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).version}\n`);
} else {
  // A command that runs long holds at most a page or two of data at a time: V8 tuned for size
  // keeps an --all export of any fleet under 100 MiB (121 MiB without), at the speed of a raw page
  // loop (npm run bench). A one-page command keeps V8's defaults: tuned for size, the collector
  // ran through a fifth of `nodes list`'s start-up. The server and the simulator keep them too.
  const long = args.some((a) => a === '--all' || a === '--follow' || a === '--watch' || a === '-w' || a.startsWith('--watch='));
  if (long && args[0] !== 'server' && args[0] !== 'dev') (await import('node:v8')).setFlagsFromString('--optimize-for-size');
  await import('../dist/main.js');
}
