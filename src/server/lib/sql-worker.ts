// The SQL of configuration writes parsed off the event loop. The grammar parser costs about 60 µs
// of CPU and 10 KB of heap a character (src/lib/sql-check.ts): on the event loop, one write of
// long queries held every other request, the agent door's included, for 19 s, and a 60 KB query
// took 640 MB of the server's heap (texts are now at most 16 KB, and sql-budget.ts bounds the
// worker's time per request and per user). A worker thread with a heap of its own parses what the cache
// does not know yet, one text at a time; the synchronous checks that follow (validatePart) find
// every answer in the cache. A text that exhausts the worker's heap is refused, never retried
// on the event loop; the worker is started again for the rest.
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { PARSER_MODULE, remember, type ParseOutcome } from '../../lib/sql-check.js';

/**
 * The worker's heap: enough for the longest SQL accepted (SQL_MAX, about 200 MB) with room to
 * spare; a text that needs more is refused as too complex, and the worker starts again.
 */
export const HEAP_MB = 384;

const CODE = `
const { parentPort, workerData } = require('node:worker_threads');
const parse = require(workerData.parser);
parentPort.on('message', ({ id, sql }) => {
  let outcome;
  try {
    const ast = parse(sql);
    outcome = { variants: ((ast && ast.statement) || []).map((s) => s && s.variant) };
  } catch (e) {
    const at = e && e.location && e.location.start;
    outcome = { error: at ? { line: at.line, column: at.column, offset: at.offset } : null };
  }
  parentPort.postMessage({ id, outcome });
});
`;

interface Pending {
  sql: string;
  resolve: () => void;
}

let worker: Worker | undefined;
let next = 0;
/** Sent to the worker, answered in order. */
const pending = new Map<number, Pending>();

function send(id: number): void {
  worker ??= start();
  worker.postMessage({ id, sql: pending.get(id)!.sql });
}

function start(): Worker {
  const parser = createRequire(import.meta.url).resolve(PARSER_MODULE);
  const w = new Worker(CODE, { eval: true, workerData: { parser }, resourceLimits: { maxOldGenerationSizeMb: HEAP_MB } });
  // The server's lifetime is its listeners': an idle parser never keeps it running.
  w.unref();
  w.on('message', (m: { id: number; outcome: ParseOutcome }) => {
    const p = pending.get(m.id);
    pending.delete(m.id);
    if (!p) return;
    remember(p.sql, m.outcome);
    p.resolve();
  });
  let stopped = false;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    if (worker === w) worker = undefined;
    // The text it was on (the oldest unanswered) is what stopped it; the others go to a new one.
    const [culprit, ...rest] = [...pending.keys()];
    if (culprit === undefined) return;
    const p = pending.get(culprit)!;
    pending.delete(culprit);
    remember(p.sql, { problem: 'is too complex for the SQL check (the parser ran out of memory); shorten it' });
    p.resolve();
    for (const id of rest) send(id);
  };
  w.on('error', stop);
  w.on('exit', stop);
  return w;
}

/** Parses `texts` in the worker and keeps the answers for checkSql. */
export async function parseOffLoop(texts: string[]): Promise<void> {
  await Promise.all(
    texts.map(
      (sql) =>
        new Promise<void>((resolve) => {
          const id = next++;
          pending.set(id, { sql, resolve });
          send(id);
        }),
    ),
  );
}
