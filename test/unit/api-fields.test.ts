import { describe, expect, it } from 'vitest';
import { buildBody, buildQuery, parseField, typedValue } from '../../src/commands/api/fields.js';
import { requestPath } from '../../src/commands/api/index.js';
import { UsageError } from '../../src/errors.js';

const raw = (...specs: string[]) => specs.map((s) => parseField(s, false));
const typed = (...specs: string[]) => specs.map((s) => parseField(s, true));

describe('fleetctl api fields', () => {
  it('-f keeps strings, -F types true/false/null/numbers', () => {
    expect(buildBody(raw('a=true', 'b=12', 'c=x=y'))).toEqual({ a: 'true', b: '12', c: 'x=y' });
    expect(buildBody(typed('a=true', 'b=false', 'c=null', 'd=12', 'e=-1.5e3', 'f=012', 'g=hello', 'h='))).toEqual({
      a: true,
      b: false,
      c: null,
      d: 12,
      e: -1500,
      f: '012',
      g: 'hello',
      h: '',
    });
    expect(typedValue('1.')).toBe('1.');
  });
  it('nests keys and builds lists', () => {
    expect(buildBody([...raw('name=pci', 'uuids[]=u1', 'uuids[]=u2'), ...typed('cfg[port]=514', 'cfg[tls]=true')])).toEqual({
      name: 'pci',
      uuids: ['u1', 'u2'],
      cfg: { port: 514, tls: true },
    });
    expect(buildBody(typed('t[][type]=uuid', 't[][type]=host'))).toEqual({ t: [{ type: 'uuid' }, { type: 'host' }] });
  });
  it('rejects malformed fields and conflicting shapes with usage errors', () => {
    expect(() => parseField('novalue', false)).toThrow(UsageError);
    expect(() => parseField('=x', false)).toThrow(/key=value/);
    expect(() => parseField('a[b=1', false)).toThrow(/name\[sub\]/);
    expect(() => buildBody(raw('a=1', 'a[b]=2'))).toThrow(UsageError);
    expect(() => buildBody(raw('a[b]=2', 'a=1'))).toThrow(UsageError);
    expect(() => buildBody(raw('a[]=1', 'a[b]=2'))).toThrow(UsageError);
  });
  it('makes flat query parameters for GET and refuses nested ones', () => {
    expect(buildQuery(typed('status=active', 'page=2', 'x=null'))).toEqual({ status: 'active', page: '2', x: '' });
    expect(() => buildQuery(raw('a[]=1'))).toThrow(/query string/);
  });
  it('sends the token only to the configured server', () => {
    expect(requestPath('/api/v1/stats', 'http://127.0.0.1:8080')).toBe('api/v1/stats');
    expect(requestPath('api/v1/stats', 'http://127.0.0.1:8080')).toBe('api/v1/stats');
    expect(requestPath('http://127.0.0.1:8080/api/v1/stats?x=1', 'http://127.0.0.1:8080/')).toBe('http://127.0.0.1:8080/api/v1/stats?x=1');
    expect(() => requestPath('https://evil.example.com/api/v1/stats', 'http://127.0.0.1:8080')).toThrow(UsageError);
  });
});
