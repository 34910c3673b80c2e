// Issue 20: the quick start shows the product. `npm run demo`'s script (after npm test's build),
// piped as in CI: a demo fleet with simulated agents, a live query they answer, a carve downloaded
// and checked, then the server stopped and exit 0.
import { describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { resolve } from 'node:path';
import { baseEnv } from '../helpers/cli.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const DEMO = resolve(import.meta.dirname, '../../scripts/demo.mjs');

describe('npm run demo', () => {
  it('starts agents, shows a live query answered by them and a carve downloaded, then stops (exit 0)', async () => {
    const home = mkdtempSync(join(tmpdir(), 'fleetctl-demo-home-'));
    try {
      const env = { ...baseEnv(home), FLEETCTL_CONFIG_DIR: undefined, HOME: home };
      const r = await execa('node', [DEMO], { env, extendEnv: false, reject: false, stdin: 'ignore', timeout: 240_000 });
      expect(r.exitCode, r.stderr).toBe(0);
      expect(r.stderr).toMatch(/Simulated agents: 5 of 5 enrolled in prod over https:\/\/127\.0\.0\.1:\d+, tagged live-agents/);
      expect(r.stderr).toMatch(/Agent API \(osquery TLS\) listening on https:\/\/127\.0\.0\.1:\d+/);
      // The live query: a table whose NODE column names the five agents, one row each.
      const table = r.stdout.split('\n');
      const header = table.findIndex((l) => l === 'NODE\tNAME\tVERSION\tPLATFORM');
      expect(header, r.stdout).toBeGreaterThanOrEqual(0);
      const rows = table.slice(header + 1, header + 6);
      expect(rows).toHaveLength(5);
      for (const row of rows) expect(row).toMatch(/^[a-z]+-[a-z]+-\d{5}-[0-9a-f]{4}\t.+\t.+\t\w+$/);
      expect(r.stderr).toMatch(/Query query_\w+ started on 5 nodes in prod/);
      // The carve: run, shown with its node, downloaded and checked.
      expect(r.stderr).toMatch(
        /Downloaded carve_\w+ of [\w-]+ \(\d+ bytes, \d+ blocks?, size and block count checked\) to carve_\w+_[\w-]+_[0-9a-f]{12}\.tar/,
      );
      expect(r.stdout).toMatch(/^NODE\tSESSION\tPATH\tSTATUS/m);
      expect(r.stderr).toContain('Demo done');
      expect(r.stderr).not.toMatch(/demo failed|^error:/m);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  }, 300_000);
});
