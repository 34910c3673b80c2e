// Latencies and counts per request kind, for the simulator's summary and the load bench.
export type RequestKind = 'enroll' | 'config' | 'log' | 'read' | 'write' | 'carve';
export const REQUEST_KINDS: RequestKind[] = ['enroll', 'config', 'log', 'read', 'write', 'carve'];

export interface KindSummary {
  requests: number;
  errors: number;
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

export class Stats {
  private lat = new Map<RequestKind, number[]>();
  private errs = new Map<RequestKind, number>();
  lastError?: string;

  record(kind: RequestKind, ms: number): void {
    let a = this.lat.get(kind);
    if (!a) this.lat.set(kind, (a = []));
    a.push(ms);
  }

  error(kind: RequestKind, message: string): void {
    this.errs.set(kind, (this.errs.get(kind) ?? 0) + 1);
    this.lastError = message;
  }

  /** The raw latencies (ms) and error counts per kind since the last take, and resets them (the load benchmark merges several processes'). */
  take(): { latencies: Partial<Record<RequestKind, number[]>>; errors: Partial<Record<RequestKind, number>>; lastError?: string } {
    const out = { latencies: Object.fromEntries(this.lat), errors: Object.fromEntries(this.errs), lastError: this.lastError };
    this.lat.clear();
    this.errs.clear();
    this.lastError = undefined;
    return out;
  }

  /** Per kind, since the last reset (when `reset`). `checkin` = config, log and distributed read together. */
  summary(reset = false): Record<string, KindSummary> {
    const out: Record<string, KindSummary> = {};
    const sum = (all: number[], errors: number): KindSummary => {
      const s = [...all].sort((a, b) => a - b);
      const r = (n: number) => Math.round(n * 10) / 10;
      return { requests: s.length + errors, errors, p50_ms: r(percentile(s, 50)), p99_ms: r(percentile(s, 99)), max_ms: r(s.at(-1) ?? 0) };
    };
    const checkin: number[] = [];
    let checkinErrors = 0;
    for (const k of REQUEST_KINDS) {
      const a = this.lat.get(k) ?? [];
      const e = this.errs.get(k) ?? 0;
      if (a.length || e) out[k] = sum(a, e);
      if (k === 'config' || k === 'log' || k === 'read') {
        for (const v of a) checkin.push(v);
        checkinErrors += e;
      }
    }
    if (checkin.length || checkinErrors) out.checkin = sum(checkin, checkinErrors);
    if (reset) {
      this.lat.clear();
      this.errs.clear();
    }
    return out;
  }
}
