// Colors for stdout. On/off is decided once, by io.color (TTY, NO_COLOR, FORCE_COLOR,
// --no-color: see src/io.ts); chalk's own terminal detection is never consulted.
import { Chalk, type ChalkInstance } from 'chalk';
import type { IO } from '../io.js';

export type Colors = ChalkInstance;

export function colorsFor(io: Pick<IO, 'color'>): Colors {
  return new Chalk({ level: io.color ? 1 : 0 });
}

const GREEN = new Set(['active', 'healthy', 'low', 'completed', 'complete', 'success', 'succeeded', 'ok', 'true', 'enabled', 'online']);
const YELLOW = new Set(['degraded', 'medium', 'pending', 'in progress', 'in_progress', 'in-progress', 'running', 'warning']);
const RED = new Set(['inactive', 'unhealthy', 'high', 'critical', 'expired', 'deleted', 'failed', 'error', 'offline', 'revoked']);
const DIM = new Set(['unknown', 'false', 'disabled', 'never', 'none', '']);

export type StatusTone = 'good' | 'warn' | 'bad' | 'muted' | 'plain';

/** Meaning of a status word, case-insensitive. Words not listed are 'plain'. */
export function statusTone(value: string): StatusTone {
  const v = value.trim().toLowerCase();
  if (GREEN.has(v)) return 'good';
  if (YELLOW.has(v)) return 'warn';
  if (RED.has(v)) return 'bad';
  if (DIM.has(v)) return 'muted';
  return 'plain';
}

/** Colors `text` (already truncated/padded by the caller) by the tone of `value`. */
export function colorStatus(c: Colors, value: string, text: string): string {
  switch (statusTone(value)) {
    case 'good':
      return c.green(text);
    case 'warn':
      return c.yellow(text);
    case 'bad':
      return c.red(text);
    case 'muted':
      return c.dim(text);
    default:
      return text;
  }
}
