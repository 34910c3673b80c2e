// describe() for the tests against installed sink peers (apart from peer.ts, which the benchmark
// imports outside vitest).
import { spawnSync } from 'node:child_process';
import { describe } from 'vitest';
import { installedPeer } from './peer.js';

/**
 * describe() for tests against installed peers: skipped with a notice when one is missing
 * (a bare `vitest run` without the dependency step), but failing under CI, where `npm test`'s
 * pretest installs them.
 */
export function describePeers(names: string[], title: string, fn: () => void): void {
  const missing = names.filter((n) => !installedPeer(n));
  const system = names
    .filter((n) => n === 'rsyslog')
    .filter(() => spawnSync('sh', ['-c', 'command -v rsyslogd'], { stdio: 'ignore' }).status !== 0);
  const absent = [...missing.filter((n) => n !== 'rsyslog'), ...system];
  if (absent.length > 0 && !process.env.CI) {
    process.stderr.write(`skipping "${title}": sink test peers not installed (${absent.join(', ')}); run node scripts/test-deps.mjs\n`);
    // Skipped, not failed: a developer's bare `vitest run` without the peers (named above); CI fails instead.
    describe.skip(title, fn);
    return;
  }
  describe(title, fn);
}
