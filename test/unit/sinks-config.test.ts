import { describe, expect, it } from 'vitest';
import { decodeSinkConfig, parseSinkConfig } from '../../src/commands/sinks/config.js';
import { UsageError } from '../../src/errors.js';

const bytes = (s: string) => [...Buffer.from(s, 'utf8')];

describe('sink config', () => {
  it('decodes the UTF-8 JSON bytes the API sends', () => {
    expect(decodeSinkConfig(bytes('{"path":"/var/log/ö.log","port":514}'))).toEqual({ path: '/var/log/ö.log', port: 514 });
    expect(decodeSinkConfig([])).toEqual({});
  });
  it('keeps what it cannot decode: text that is not JSON as text, invalid UTF-8 as the bytes', () => {
    expect(decodeSinkConfig(bytes('not json'))).toBe('not json');
    expect(decodeSinkConfig([0xff, 0xfe])).toEqual([0xff, 0xfe]);
    expect(decodeSinkConfig([300])).toEqual([300]);
    expect(decodeSinkConfig({ already: 'object' })).toEqual({ already: 'object' });
  });
  it('accepts only a JSON object for --config', () => {
    expect(parseSinkConfig('{"a":1}')).toEqual({ a: 1 });
    expect(() => parseSinkConfig('[1]')).toThrow(UsageError);
    expect(() => parseSinkConfig('{a:1}')).toThrow(/not valid JSON/);
  });
});
