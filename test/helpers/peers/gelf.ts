// Graylog's own GELF reader (github.com/Graylog2/go-gelf, built from test/tools/gelf-reader by
// scripts/test-deps.mjs) on a UDP port: it reassembles chunks, decompresses and parses each GELF
// message as Graylog's library does, and prints it as one JSON line, which the tests read (whole
// lines only: the reader may be mid-line when we look).
import { LineFile } from './lines.js';
import { PeerProcess, requirePeer, tempDir } from './peer.js';

export interface GelfReader {
  port: number;
  version: string;
  messages(): Record<string, unknown>[];
  /** What the library refused (bad chunk, bad JSON), from its stderr. */
  errors(): string[];
  stop(): Promise<void>;
}

export async function startGelfReader(): Promise<GelfReader> {
  const peer = requirePeer('gelf-reader');
  const dir = tempDir('gelf');
  let port = 0;
  const proc = new PeerProcess(
    {
      name: 'gelf-reader',
      cmd: peer.bin!,
      args: ['-listen', '127.0.0.1:0'],
      // Its first line names the UDP address it listens on.
      ready: () => {
        const m = /"listening":"127\.0\.0\.1:(\d+)"/.exec(out.lines()[0] ?? '');
        if (m) port = Number(m[1]);
        return Promise.resolve(port > 0);
      },
      readyTimeout: 30,
    },
    dir,
  );
  const out = new LineFile(proc.logFile);
  await proc.start();
  const lines = () => out.lines().slice(1).filter(Boolean);
  return {
    port,
    version: peer.version,
    messages: () =>
      lines()
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>),
    errors: () => lines().filter((l) => l.startsWith('gelf-reader:')),
    async stop() {
      await proc.stop();
      proc.remove();
    },
  };
}
