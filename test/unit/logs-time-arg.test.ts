// Issue 30: --since/--until as users type them, and the flags `fleetctl logs` refuses together.
import { describe, expect, it } from 'vitest';
import { parseAge, parseTimeArg } from '../../src/lib/time-arg.js';
import { logFilters } from '../../src/commands/logs/run.js';
import { UsageError } from '../../src/errors.js';

const now = new Date('2026-11-25T12:00:00.000Z');

describe('--since and --until', () => {
  it('an age is that long before now', () => {
    expect(parseTimeArg('10m', '--since', now)).toBe('2026-11-25T11:50:00.000Z');
    expect(parseTimeArg('1h', '--since', now)).toBe('2026-11-25T11:00:00.000Z');
    expect(parseTimeArg('2d', '--since', now)).toBe('2026-11-23T12:00:00.000Z');
    expect(parseTimeArg('1w', '--since', now)).toBe('2026-11-18T12:00:00.000Z');
    expect(parseTimeArg('30s', '--since', now)).toBe('2026-11-25T11:59:30.000Z');
    expect(parseAge('1.5h')).toBe(5_400_000);
  });
  it('a time with a zone is that time; without one, local time', () => {
    expect(parseTimeArg('2026-11-25T10:00:00Z', '--since', now)).toBe('2026-11-25T10:00:00.000Z');
    expect(parseTimeArg('2026-11-25T10:00:00+02:00', '--since', now)).toBe('2026-11-25T08:00:00.000Z');
    expect(parseTimeArg('2026-11-25 10:00', '--since', now)).toBe(new Date(2026, 10, 25, 10, 0).toISOString());
    expect(parseTimeArg('2026-11-25', '--since', now)).toBe(new Date(2026, 10, 25).toISOString());
  });
  it('anything else is a usage error naming the flag', () => {
    for (const bad of ['yesterday', '10', '5y', '2026-13-45x', '']) {
      expect(() => parseTimeArg(bad, '--until', now), bad).toThrow(UsageError);
      expect(() => parseTimeArg(bad, '--until', now), bad).toThrow(/--until/);
    }
  });
});

describe('fleetctl logs filters', () => {
  it('--query or --pack means results, --severity status lines', () => {
    expect(logFilters({ query: 'q' }, now)).toMatchObject({ type: 'result', query: 'q' });
    expect(logFilters({ pack: 'web' }, now)).toMatchObject({ type: 'result', pack: 'web' });
    expect(logFilters({ severity: 'warning' }, now)).toMatchObject({ type: 'status', severity: 'warning' });
    expect(logFilters({ since: '1h', search: 'sshd' }, now)).toMatchObject({
      since: '2026-11-25T11:00:00.000Z',
      q: 'sshd',
      type: undefined,
    });
  });
  it('refuses what cannot go together', () => {
    for (const o of [
      { severity: 'warning' as const, type: 'result' as const },
      { query: 'q', type: 'status' as const },
      { pack: 'p', severity: 'error' as const },
      { follow: true, until: '1h' },
      { follow: true, all: true },
      { since: '1h', until: '2h' },
    ])
      expect(() => logFilters(o, now), JSON.stringify(o)).toThrow(UsageError);
  });
});
