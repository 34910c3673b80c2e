// Ctrl-C right after `fleetctl server --workers 2` says it listens (what the README's examples
// do): the first worker's `start` line comes while the other may still be opening its
// listeners. The primary used to end at once on that Ctrl-C (its handler was set only once every
// worker listened), and a worker still opening a listener asked the gone primary for its handle:
// "Error: write EPIPE ... at cluster._getServer", a crash with a stack. Now the primary stops and
// waits for its workers from its first moment, and exits 0 as after any stop; every worker
// finishes its start, then drains (the store closed after the background tasks, see
// shutdown-order.test.ts). Several times, as the race was about 1 run in 3.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { BIN } from '../helpers/cli.js';
import { testDatabaseUrl } from '../helpers/test-db.js';
import { selfSigned } from '../../src/server/agent/listener.js';

const RUNS = 5;
let dir: string;
let cert: { certFile: string; keyFile: string };

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'fleetctl-workers-stop-'));
  cert = selfSigned(dir, '127.0.0.1');
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Starts the server in a process group of its own, Ctrl-C to the whole group at the first `start` line. */
async function startThenInterrupt(db: string): Promise<{ exitCode?: number; signal?: string; stderr: string }> {
  const proc = execa(
    'node',
    [
      BIN,
      'server',
      '--db',
      db,
      '--workers',
      '2',
      '--listen',
      '127.0.0.1:0',
      '--create-env',
      'prod',
      '--log',
      '--agent-listen',
      '127.0.0.1:0',
      '--agent-tls-cert',
      cert.certFile,
      '--agent-tls-key',
      cert.keyFile,
    ],
    {
      env: { FLEETCTL_ADMIN_PASSWORD: 'workers-stop-password-1' },
      reject: false,
      buffer: true,
      detached: true, // a group of its own: the interrupt reaches the primary and its workers, as Ctrl-C does
      forceKillAfterDelay: 60_000,
    },
  );
  let seen = '';
  await new Promise<void>((resolve) => {
    proc.stderr.on('data', (d: Buffer) => {
      seen += d.toString();
      if (/"event":"start"/.test(seen)) resolve();
    });
    void proc.then(() => resolve());
  });
  try {
    process.kill(-proc.pid!, 'SIGINT');
  } catch {
    /* already gone */
  }
  const r = await proc;
  return { exitCode: r.exitCode, signal: r.signal, stderr: String(r.stderr) };
}

describe('fleetctl server --workers 2, Ctrl-C right after it listens', () => {
  it(`exits 0 with nothing but its info lines on stderr (${RUNS} starts)`, async () => {
    for (let i = 0; i < RUNS; i++) {
      // A new database each time (the postgres project: a fresh PostgreSQL database).
      const r = await startThenInterrupt((await testDatabaseUrl()) ?? join(dir, `fleet-${i}.db`));
      const context = `run ${i + 1}: exit ${r.exitCode ?? r.signal}\n${r.stderr}`;
      expect(r.stderr, context).toMatch(/"event":"start"/);
      // Under --log every line is one JSON object: a crash's stack is not, an error event is level error.
      const lines = r.stderr.split('\n').filter((l) => l.trim() !== '');
      const notJson = lines.filter((l) => {
        try {
          JSON.parse(l);
          return false;
        } catch {
          return true;
        }
      });
      expect(notJson, context).toEqual([]);
      expect(
        lines.map((l) => JSON.parse(l) as { level: string; msg: string }).filter((e) => e.level !== 'info'),
        context,
      ).toEqual([]);
      expect(r.exitCode, context).toBe(0);
    }
  });
});
