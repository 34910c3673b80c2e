// A real S3-compatible server for the s3 sink tests: versitygw (Versity's S3 gateway, Go,
// installed by scripts/test-deps.mjs) with its POSIX backend, so every object is a plain file
// under <dir>/data/<bucket>/<key>. It checks SigV4 signatures: a wrong secret is a 403.
import { mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { PeerProcess, freePort, httpOk, requirePeer, tempDir } from './peer.js';

export const S3_ACCESS_KEY = 'fleetctl-test-access';
export const S3_SECRET_KEY = 'fleetctl-test-secret-1';

export interface S3Server {
  endpoint: string;
  version: string;
  /** Creates a bucket as a directory of the backend (what versitygw's posix backend does). */
  createBucket(name: string): void;
  /** Every object of a bucket: key -> content. */
  objects(bucket: string): Map<string, Buffer>;
  stop(): Promise<void>;
  pause(): Promise<void>;
  resume(): Promise<void>;
}

function walk(root: string, dir: string, out: Map<string, Buffer>): void {
  for (const name of readdirSync(dir)) {
    if (name.startsWith('.sgwtmp')) continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(root, p, out);
    else out.set(relative(root, p), readFileSync(p));
  }
}

export async function startVersitygw(): Promise<S3Server> {
  const peer = requirePeer('versitygw');
  const dir = tempDir('versitygw');
  const data = join(dir, 'data');
  mkdirSync(data);
  const port = await freePort();
  const endpoint = `http://127.0.0.1:${port}`;
  const proc = new PeerProcess(
    {
      name: 'versitygw',
      cmd: peer.bin!,
      args: ['--port', `127.0.0.1:${port}`, 'posix', data],
      env: { ROOT_ACCESS_KEY: S3_ACCESS_KEY, ROOT_SECRET_KEY: S3_SECRET_KEY },
      // Any HTTP answer (an unsigned request is a 403) means it is serving.
      ready: async () =>
        (await httpOk(endpoint)) ||
        (await fetch(endpoint)
          .then((r) => r.status > 0)
          .catch(() => false)),
      readyTimeout: 60,
    },
    dir,
  );
  await proc.start();
  return {
    endpoint,
    version: peer.version,
    createBucket(name) {
      mkdirSync(join(data, name), { recursive: true });
    },
    objects(bucket) {
      const out = new Map<string, Buffer>();
      walk(join(data, bucket), join(data, bucket), out);
      return out;
    },
    async stop() {
      await proc.stop();
      proc.remove();
    },
    pause: () => proc.stop(),
    resume: () => proc.start(),
  };
}
