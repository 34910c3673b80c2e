// Drives a destination module as the runner does (send; resend only the entries it asks to
// retry; count the rejected), for tests of one module against its real peer. The end-to-end
// tests go through the real runner and spool instead.
import type { Sink, SinkEntry } from '../../../src/server/services/delivery/sink.js';

export interface Delivery {
  attempts: number;
  errors: string[];
  rejected: SinkEntry[];
  answers: string[];
}

interface DeliverOptions {
  maxAttempts?: number;
  pauseMs?: number;
  /** Told after every attempt, with what happened so far. */
  onAttempt?: (d: Delivery) => void;
}

export async function deliverAll(sink: Sink, batch: SinkEntry[], o: DeliverOptions = {}): Promise<Delivery> {
  const out: Delivery = { attempts: 0, errors: [], rejected: [], answers: [] };
  let pending = batch;
  while (pending.length > 0) {
    if (out.attempts >= (o.maxAttempts ?? 60))
      throw new Error(`not delivered after ${out.attempts} attempts: ${out.errors.slice(-3).join(' | ')}`);
    out.attempts++;
    try {
      const r = await sink.send(pending, new AbortController().signal);
      out.answers.push(r.answer);
      for (const x of r.rejected ?? []) out.rejected.push(pending[x.index]);
      const retry = new Set((r.retry ?? []).map((x) => x.index));
      if (retry.size) out.errors.push(r.retry![0].error);
      pending = pending.filter((_, i) => retry.has(i));
    } catch (e) {
      out.errors.push((e as Error).message);
    }
    o.onAttempt?.(out);
    if (pending.length) await new Promise((r) => setTimeout(r, o.pauseMs ?? 500));
  }
  return out;
}

/**
 * deliverAll, running: an outage test stops the peer, starts this, waits until the destination
 * refused `n` sends (the outage seen and retried: an event, not a length of time), then starts
 * the peer again and awaits `done`.
 */
export function deliverThrough(sink: Sink, batch: SinkEntry[], o: Omit<DeliverOptions, 'onAttempt'> = {}) {
  const waiting: { n: number; resolve: () => void }[] = [];
  const done = deliverAll(sink, batch, {
    ...o,
    onAttempt: (d) => {
      for (const w of waiting.filter((w) => d.errors.length >= w.n)) {
        waiting.splice(waiting.indexOf(w), 1);
        w.resolve();
      }
    },
  });
  return {
    done,
    /** Resolves once `n` attempts have failed in all (or when the delivery ended first). */
    failures: (n: number) => Promise.race([new Promise<void>((resolve) => waiting.push({ n, resolve })), done.then(() => undefined)]),
  };
}
