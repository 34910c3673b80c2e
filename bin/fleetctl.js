#!/usr/bin/env node
// `fleetctl --version` alone needs nothing but the version: answer it before the command tree
// loads (scripts and installers call it often). Everything else goes to the built entry.
const args = process.argv.slice(2);
if (args.length === 1 && (args[0] === '--version' || args[0] === '-V')) {
  const { readFileSync } = await import('node:fs');
  process.stdout.write(`${JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).version}\n`);
} else {
  await import('../dist/main.js');
}
