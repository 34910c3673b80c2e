// Big log batches decoded off the event loop (issue 18). A gzip body that inflates past 1 MiB
// (osquery batches up to 1,024 lines, and a line can be a large snapshot) costs tens of
// milliseconds to inflate, parse and serialise again; done on the event loop, every other
// agent's request waits behind it. Here a worker thread inflates and parses it and serialises
// each entry back to JSON text, so the main thread only wraps ready texts in the sink envelope.
import { Worker } from 'node:worker_threads';

export interface DecodedLog {
  /** The body without `data`: node_key, log_type. */
  head: Record<string, unknown>;
  /** Each entry of `data` as JSON text, with its query name, status severity and own time (if any). */
  entries: { text: string; name?: string; severity?: number; time?: number }[];
}

/** A body the worker could not decode: the agent's fault (400/413). */
export class DecodeError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

const CODE = `
const { parentPort } = require('node:worker_threads');
const { gunzipSync } = require('node:zlib');
parentPort.on('message', ({ id, body, limit }) => {
  let raw;
  try {
    raw = gunzipSync(Buffer.from(body.buffer, body.byteOffset, body.byteLength), { maxOutputLength: limit });
  } catch (e) {
    return parentPort.postMessage({ id, status: e.code === 'ERR_BUFFER_TOO_LARGE' ? 413 : 400, error: e.code === 'ERR_BUFFER_TOO_LARGE' ? 'the body inflates to more than ' + limit + ' bytes' : 'the body is not valid gzip' });
  }
  let v;
  try {
    v = JSON.parse(raw.toString('utf8'));
  } catch {
    return parentPort.postMessage({ id, status: 400, error: 'the body is not valid JSON' });
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return parentPort.postMessage({ id, status: 400, error: 'the body must be a JSON object' });
  const data = Array.isArray(v.data) ? v.data : [];
  // The same fields as spool.ts's entryFields (kept in step by test/unit/spool-fields.test.ts).
  const entries = data.map((e) => {
    const out = { text: JSON.stringify(e) };
    if (e && typeof e === 'object') {
      if (typeof e.name === 'string') out.name = e.name.slice(0, 1024);
      const sev = Number(e.severity);
      if (e.severity !== undefined && e.severity !== '' && Number.isInteger(sev) && sev >= 0 && sev <= 9) out.severity = sev;
      const t = Number(e.unixTime);
      if (e.unixTime !== undefined && e.unixTime !== '' && Number.isFinite(t) && t > 0 && t < 1e11) out.time = Math.floor(t);
    }
    return out;
  });
  delete v.data;
  parentPort.postMessage({ id, head: v, entries });
});
`;

/** One worker, started on first use, kept while the agent door runs. */
export class BigBodyDecoder {
  private worker?: Worker;
  private next = 0;
  private readonly waiting = new Map<number, { resolve: (d: DecodedLog) => void; reject: (e: Error) => void }>();

  private start(): Worker {
    // Its own heap is capped: it holds one batch at a time, and a tight heap is collected early.
    const w = new Worker(CODE, { eval: true, resourceLimits: { maxOldGenerationSizeMb: 128, maxYoungGenerationSizeMb: 16 } });
    w.unref();
    w.on(
      'message',
      (m: { id: number; status?: number; error?: string; head?: Record<string, unknown>; entries?: DecodedLog['entries'] }) => {
        const p = this.waiting.get(m.id);
        this.waiting.delete(m.id);
        if (!p) return;
        if (m.error !== undefined) p.reject(new DecodeError(m.error, m.status ?? 400));
        else p.resolve({ head: m.head ?? {}, entries: m.entries ?? [] });
      },
    );
    // A worker that dies (out of memory) fails what it held; the next body starts a new one.
    const fail = (e: Error) => {
      for (const p of this.waiting.values()) p.reject(e);
      this.waiting.clear();
      if (this.worker === w) this.worker = undefined;
    };
    w.on('error', fail);
    w.on('exit', (code) => fail(new Error(`the log decoder stopped (exit ${code})`)));
    return w;
  }

  decode(gzipped: Buffer, limit: number): Promise<DecodedLog> {
    this.worker ??= this.start();
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.worker!.postMessage({ id, body: gzipped, limit });
    });
  }

  async close(): Promise<void> {
    const w = this.worker;
    this.worker = undefined;
    await w?.terminate();
  }
}
