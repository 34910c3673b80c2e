// moto (PyPI, in a venv installed by scripts/test-deps.mjs): an AWS emulator serving Kinesis,
// Firehose and S3 on one port, for the kinesis and firehose sink tests. It is an emulator, not
// AWS (there is no installable Kinesis): the docs say so. It accepts any credentials, and its
// state is in memory: a restart loses the streams (tests read what arrived before stopping it).
import { PeerProcess, freePort, httpOk, requirePeer, tempDir } from './peer.js';

export interface Moto {
  endpoint: string;
  version: string;
  stop(): Promise<void>;
  pause(): Promise<void>;
  resume(): Promise<void>;
}

export async function startMoto(): Promise<Moto> {
  const peer = requirePeer('moto');
  const dir = tempDir('moto');
  const port = await freePort();
  const endpoint = `http://127.0.0.1:${port}`;
  const proc = new PeerProcess(
    {
      name: 'moto',
      cmd: peer.bin!,
      args: ['-m', 'moto.server', '-H', '127.0.0.1', '-p', String(port)],
      ready: () => httpOk(`${endpoint}/moto-api/`),
      readyTimeout: 60,
    },
    dir,
  );
  await proc.start();
  return {
    endpoint,
    version: peer.version,
    async stop() {
      await proc.stop();
      proc.remove();
    },
    pause: () => proc.stop(),
    resume: () => proc.start(),
  };
}
