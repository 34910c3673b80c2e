// Colors for stdout. On/off is decided once, by io.color (TTY, NO_COLOR, FORCE_COLOR,
// --no-color: see src/io.ts). The few SGR styles are all the output uses, so they are written
// here rather than loaded from chalk at every start (it was most of what start-up loaded
// besides commander).
import type { IO } from '../io.js';

export interface Colors {
  bold(s: string): string;
  dim(s: string): string;
  red(s: string): string;
  green(s: string): string;
  yellow(s: string): string;
  blue(s: string): string;
  magenta(s: string): string;
  cyan(s: string): string;
}

const sgr = (open: number, close: number) => (s: string) => (s === '' ? s : `\x1b[${open}m${s}\x1b[${close}m`);
const ON: Colors = {
  bold: sgr(1, 22),
  dim: sgr(2, 22),
  red: sgr(31, 39),
  green: sgr(32, 39),
  yellow: sgr(33, 39),
  blue: sgr(34, 39),
  magenta: sgr(35, 39),
  cyan: sgr(36, 39),
};
const plain = (s: string) => s;
const OFF: Colors = { bold: plain, dim: plain, red: plain, green: plain, yellow: plain, blue: plain, magenta: plain, cyan: plain };

export function colorsFor(io: Pick<IO, 'color'>): Colors {
  return io.color ? ON : OFF;
}

const GREEN = new Set(['active', 'healthy', 'low', 'completed', 'complete', 'success', 'succeeded', 'ok', 'true', 'enabled', 'online']);
const YELLOW = new Set(['degraded', 'medium', 'pending', 'in progress', 'in_progress', 'in-progress', 'running', 'warning']);
const RED = new Set(['inactive', 'unhealthy', 'high', 'critical', 'expired', 'deleted', 'failed', 'error', 'fatal', 'offline', 'revoked']);
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
