// stdout: one envelope (sink.ts) per line on the server's standard output, NDJSON, so
// `fleetctl server ... | jq` works; the server's own messages are all on stderr. A batch is
// acknowledged when the stream has taken it (its write callback). Written by one process per
// machine (perHost): the workers of --workers share the primary's stdout, and lines longer than
// a pipe's atomic write could interleave.
import { Type } from '@sinclair/typebox';
import { envelope, type Destination, type Sink, type SinkEntry } from '../sink.js';

class StdoutSink implements Sink {
  constructor(private readonly out: NodeJS.WritableStream) {}

  async send(batch: SinkEntry[]) {
    const data = Buffer.from(batch.map(envelope).join('\n') + '\n', 'utf8');
    await new Promise<void>((resolve, reject) => this.out.write(data, (e) => (e ? reject(e) : resolve())));
    return { bytes: data.length, answer: `wrote ${data.length} bytes to stdout` };
  }

  async close(): Promise<void> {}
}

export const stdout: Destination<Record<string, never>> = {
  type: 'stdout',
  schema: Type.Object({}, { additionalProperties: false }),
  secrets: [],
  batch: { maxEntries: 1000, maxBytes: 1024 * 1024 },
  perHost: true,
  // One stream, in spool order.
  maxInFlight: () => 1,
  open: () => Promise.resolve(new StdoutSink(process.stdout)),
  doc: {
    wire: "one JSON envelope per line (NDJSON) on the server's stdout",
    verified: "our own tests (the server process's stdout read by the test)",
  },
};
