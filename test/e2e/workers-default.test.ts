// `fleetctl server` without --workers (issue 31): one process per core the process may use, less
// one, and at least one. The real command under `taskset` (Linux CPU affinity, which Node's
// availableParallelism() follows) on two cores: one process, where one per core made two.
import { afterEach, describe, expect, it } from 'vitest';
import { execa, type ResultPromise } from 'execa';
import { BIN, DEV_PASSWORD } from '../helpers/cli.js';
import { childrenOf } from '../helpers/processes.js';
import { defaultWorkers } from '../../src/server/cluster.js';

let server: ResultPromise | undefined;

afterEach(async () => {
  server?.kill('SIGTERM');
  await server;
  server = undefined;
});

/** Starts the server on CPUs `cpus`; resolves with its output once it matches `ready`. */
async function serveOn(cpus: string, ready: RegExp, extra: string[] = []): Promise<string> {
  const args = ['-c', cpus, 'node', BIN, 'server', '--dev', '--dev-password', DEV_PASSWORD, '--listen', '127.0.0.1:0', ...extra];
  const proc = execa('taskset', args, { reject: false, all: true, buffer: false });
  server = proc;
  let out = '';
  return new Promise<string>((resolve, reject) => {
    proc.all.on('data', (d: Buffer) => {
      out += d.toString();
      if (ready.test(out)) resolve(out);
    });
    void proc.then((r) => reject(new Error(`server exited (${r.exitCode}): ${out}`)));
  });
}

describe('fleetctl server without --workers', () => {
  it('runs the cores less one, and at least one', () => {
    expect([1, 2, 3, 4, 8].map((n) => defaultWorkers(n))).toEqual([1, 1, 2, 3, 7]);
  });

  it('on two cores is one process, serving both doors itself', async () => {
    // Its last line: a primary prints the banner only once every worker listens.
    await serveOn('0,1', /Agents connect to/);
    expect(childrenOf(server!.pid!)).toEqual([]);
  });

  it('--workers 2 on the same two cores still starts two', async () => {
    await serveOn('0,1', /Workers: 2 server processes/, ['--workers', '2']);
    expect(childrenOf(server!.pid!)).toHaveLength(2);
  });
});
