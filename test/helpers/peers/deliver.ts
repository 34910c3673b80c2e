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

export async function deliverAll(sink: Sink, batch: SinkEntry[], o: { maxAttempts?: number; pauseMs?: number } = {}): Promise<Delivery> {
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
    if (pending.length) await new Promise((r) => setTimeout(r, o.pauseMs ?? 500));
  }
  return out;
}
