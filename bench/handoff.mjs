// What waking a thread costs on this machine (issue 31): the agent door hands SQLite work to
// worker threads (the writer, the admin readers), and at a few hundred requests a second each
// hand-off finds the thread asleep. Prints the process CPU of one round trip to an idle worker
// thread (the shape of a writer-thread message), the same back to back, and of one timer turn
// of the event loop alone, each the mean over N. Ratios, not timings, are what to compare
// across machines: a VM pays for every cross-thread wake-up.
// Usage: npm run bench:handoff -- [N]
import { Worker } from 'node:worker_threads';

const N = Number(process.argv[2] ?? 300);
if (!Number.isInteger(N) || N < 1) {
  console.error(`usage: npm run bench:handoff -- [N]: N runs of each measure, a positive integer (got ${process.argv[2]})`);
  process.exit(2);
}
const GAP_MS = 5;
const worker = new Worker(
  `const { parentPort } = require('node:worker_threads');
   parentPort.on('message', (m) => parentPort.postMessage({ id: m.id, results: [{ rows: [{ id: 1 }] }] }));`,
  { eval: true },
);
const waiting = new Map();
let next = 0;
worker.on('message', (r) => {
  waiting.get(r.id)?.(r);
  waiting.delete(r.id);
});
const ask = (m) =>
  new Promise((resolve) => {
    const id = next++;
    waiting.set(id, resolve);
    worker.postMessage({ id, ...m });
  });
// A spool append's first message: a statement's text and a JSON parameter of about a kilobyte.
const message = {
  statements: [{ sql: 'insert into log_spool (line) select value from json_each(?) returning id', params: ['x'.repeat(1000)] }],
  begin: true,
};
const pause = () => new Promise((r) => setTimeout(r, GAP_MS));

/** Mean process CPU (us) of `fn` over N runs. */
async function cpuOf(fn) {
  const c0 = process.cpuUsage();
  for (let i = 0; i < N; i++) await fn();
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / N;
}

for (let i = 0; i < 1000; i++) await ask(message); // warm
const timer = await cpuOf(pause);
const idle = await cpuOf(async () => {
  await ask(message);
  await pause();
});
const busy = await cpuOf(() => ask(message));
console.log(
  `${N} runs each, load ${(await import('node:os'))
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
console.log(`a timer turn of the event loop (${GAP_MS} ms), alone:       ${timer.toFixed(1)} us of CPU`);
console.log(`a round trip to a worker thread asleep before it:  ${(idle - timer).toFixed(1)} us (timer turn subtracted)`);
console.log(`a round trip, back to back (the thread awake):     ${busy.toFixed(1)} us`);
await worker.terminate();
