// How a sink's spool is cut into batches and how many of them may be out at once (issue 28):
// the destination's limits for the sink's config, the gather time of a batch that is not full,
// and the number of batches in flight past the sink's cursor.
import type { BatchLimits, Destination } from './sink.js';
import type { SpoolRowAt } from './sink-state.js';

/**
 * Batches a sink may have out past its cursor by default (sent and not yet written to the
 * cursor): the runner sends the next ones while earlier ones wait for their acknowledgement.
 * A sink's config may set 1..MAX_IN_FLIGHT (`in_flight`), within its destination's own bound
 * (`Destination.maxInFlight`: 1 for an ordered stream).
 */
export const DEFAULT_IN_FLIGHT = 4;
export const MAX_IN_FLIGHT = 16;

function parsed(configText: string): Record<string, unknown> {
  try {
    const v = JSON.parse(configText || '{}') as unknown;
    if (typeof v === 'object' && v !== null && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {
    /* the defaults */
  }
  return {};
}

/** A destination's batch limits for a sink's config (a config that does not parse: the defaults of {}). */
export function batchLimits(dest: Destination, configText: string): BatchLimits {
  if (!dest.batchOf) return dest.batch;
  return dest.batchOf(parsed(configText));
}

/** How many batches a sink may have in flight: its config's `in_flight`, else the default, within the destination's bound. */
export function inFlightOf(dest: Destination, configText: string): number {
  const config = parsed(configText);
  const bound = Math.min(dest.maxInFlight?.(config) ?? MAX_IN_FLIGHT, MAX_IN_FLIGHT);
  const n = config.in_flight;
  return typeof n === 'number' && Number.isInteger(n) && n >= 1 ? Math.min(n, bound) : Math.min(DEFAULT_IN_FLIGHT, bound);
}

/** How long a batch should still gather (ms): 0 when it is full or its oldest entry is old enough. */
export function gatherWait(rows: SpoolRowAt[], limits: BatchLimits, now: number): number {
  if (!limits.gatherMs) return 0;
  const bytes = rows.reduce((n, r) => n + r.row.line.length, 0);
  if (rows.length >= limits.maxEntries || bytes >= limits.maxBytes * 0.9) return 0;
  return Math.max(0, Date.parse(rows[0].row.received_at) + limits.gatherMs - now);
}
