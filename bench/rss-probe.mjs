// Preloaded into a fleetctl process by bench/fleet.mjs: writes the peak RSS (KiB) on exit.
import { writeFileSync } from 'node:fs';

process.on('exit', () => {
  if (process.env.BENCH_RSS_FILE) writeFileSync(process.env.BENCH_RSS_FILE, String(process.resourceUsage().maxRSS));
});
