// Retry policy: which answers are retried and how long to wait. Pure, unit-tested.

export interface RetryPolicy {
  /** Attempts in all, the first one included. */
  maxAttempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { maxAttempts: 4, baseDelayMs: 250, maxDelayMs: 8000 };

const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE']);

export function isIdempotent(method: string): boolean {
  return IDEMPOTENT.has(method.toUpperCase());
}

/** Retryable: connection errors and 429/503, and only for idempotent requests. */
export function shouldRetry(method: string, outcome: { status?: number; networkError?: boolean }): boolean {
  if (!isIdempotent(method)) return false;
  if (outcome.networkError) return true;
  return outcome.status === 429 || outcome.status === 503;
}

/** Retry-After as seconds or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, nowMs: number): number | undefined {
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const t = Date.parse(value);
  return Number.isNaN(t) ? undefined : Math.max(0, Math.ceil((t - nowMs) / 1000));
}

/**
 * Delay before attempt `attempt + 1` (attempt counts from 1): the server's Retry-After when it
 * gave one, else exponential backoff with full jitter; capped either way.
 */
export function retryDelayMs(
  attempt: number,
  retryAfterSeconds: number | undefined,
  policy: RetryPolicy,
  random: () => number = Math.random,
): number {
  if (retryAfterSeconds !== undefined) return Math.min(retryAfterSeconds * 1000, policy.maxDelayMs);
  const exp = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
  return Math.floor(exp / 2 + random() * (exp / 2));
}
