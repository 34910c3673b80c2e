// A sink's config as the server checks, redacts and resolves it (issue 28): each type's schema
// and checks name the field; secrets are given once, as a value, an environment variable or a
// file; reads never show their values; an edit that sends "<redacted>" back keeps them. Also the
// two places that pick a log entry's fields (the event loop and the big-body worker) agree.
import { afterAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { Type } from '@sinclair/typebox';
import {
  changedKeys,
  checkConfig,
  ConfigError,
  redactConfig,
  resolveConfig,
  restoreRedacted,
} from '../../src/server/services/delivery/sink-config.js';
import { destinationOf } from '../../src/server/services/delivery/destinations/index.js';
import { entryFields } from '../../src/server/services/delivery/spool.js';
import { BigBodyDecoder } from '../../src/server/agent/big-body.js';
import type { Destination } from '../../src/server/services/delivery/sink.js';

const dir = mkdtempSync(join(tmpdir(), 'fleetctl-sinkcfg-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const ctx = { sinkDir: dir, env: { HEC_TOKEN: 'tok-from-env', FLEETCTL_JWT_SECRET: 'x' } };

/** The first problem as its message, or 'ok'. */
function problem(type: string, config: unknown): string {
  try {
    checkConfig(destinationOf(type)!, config, ctx);
    return 'ok';
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    return e.message;
  }
}

// A type with nested and top-level secrets, as the destinations of issue 28 have (kafka, splunk).
const fake: Destination = {
  type: 'fake',
  schema: Type.Object(
    {
      url: Type.String(),
      token: Type.String(),
      sasl: Type.Optional(Type.Object({ mechanism: Type.String(), password: Type.String() }, { additionalProperties: false })),
    },
    { additionalProperties: false },
  ),
  secrets: ['token', 'sasl.password'],
  batch: { maxEntries: 1, maxBytes: 1 },
  open: async () => ({ send: async () => ({ bytes: 0, answer: '' }), close: async () => undefined }),
  doc: { wire: '', verified: '' },
};

describe('the checks name the field', () => {
  it('file: path required and inside --sink-dir, sizes are integers in range, no other key', () => {
    expect(problem('file', { path: 'a/b.log', max_size_mb: 5, max_files: 0 })).toBe('ok');
    expect(problem('file', {})).toBe('config.path: required for a file sink');
    expect(problem('file', { path: '../x.log' })).toMatch(/^config\.path: file sinks write inside the sink directory/);
    expect(problem('file', { path: 'x', max_size_mb: 0 })).toBe('config.max_size_mb: expected integer to be greater or equal to 1');
    expect(problem('file', { path: 'x', max_files: 'five' })).toBe('config.max_files: expected integer');
    expect(problem('file', { path: 'x', rotate: true })).toBe(
      'config.rotate: unknown key for a file sink; its keys are path, max_size_mb, max_files',
    );
  });
  it('http: a URL with a scheme, host and port in range, no credentials; method and timeout checked', () => {
    expect(
      problem('http', { url: 'https://logs.example.com:8443/in', method: 'PUT', timeout_seconds: 2.5, headers: { 'X-Api-Key': 'k' } }),
    ).toBe('ok');
    expect(problem('http', {})).toBe('config.url: required for a http sink');
    expect(problem('http', { url: 'logs.example.com' })).toBe('config.url: "logs.example.com" is not a URL');
    expect(problem('http', { url: 'ftp://logs.example.com/' })).toBe('config.url: expected a http:// or https:// URL, got ftp://');
    expect(problem('http', { url: 'http://u:p@logs.example.com/' })).toMatch(/^config\.url: credentials in the URL are not accepted/);
    expect(problem('http', { url: 'http://logs.example.com:99999/' })).toBe('config.url: "http://logs.example.com:99999/" is not a URL');
    expect(problem('http', { url: 'http://x/', method: 'DELETE' })).toMatch(/^config\.method: /);
    expect(problem('http', { url: 'http://x/', timeout_seconds: 0 })).toMatch(/^config\.timeout_seconds: /);
    expect(problem('http', { url: 'http://x/', headers: { 'bad header': 'v' } })).toBe(
      'config.headers.bad header: not a valid HTTP header name',
    );
    expect(problem('http', { url: 'http://x/', headers: { A: 'v\r\nInjected: 1' } })).toBe(
      'config.headers.A: a header value cannot hold a line break or NUL',
    );
    expect(problem('http', { url: 'http://x/', headers: { a: 1 } })).toBe('config.headers.a: expected string');
  });
  it('stdout takes no key', () => {
    expect(problem('stdout', {})).toBe('ok');
    expect(problem('stdout', { pretty: true })).toBe('config.pretty: unknown key for a stdout sink; its keys are none');
  });
  it('a config that is not an object', () => {
    expect(problem('stdout', [1])).toBe('config must be a JSON object');
  });
});

describe('secrets', () => {
  it("are given once: as the value, as <key>_env (set, not the server's own) or as <key>_file (an absolute, readable file)", () => {
    const secretFile = join(dir, 'sasl.pw');
    writeFileSync(secretFile, 'pw-from-file\n');
    const check = (c: unknown) => {
      try {
        checkConfig(fake, c, ctx);
        return 'ok';
      } catch (e) {
        return (e as Error).message;
      }
    };
    expect(check({ url: 'u', token: 't' })).toBe('ok');
    expect(check({ url: 'u', token_env: 'HEC_TOKEN' })).toBe('ok');
    expect(check({ url: 'u' })).toBe('config.token: required for a fake sink');
    expect(check({ url: 'u', token: 't', token_env: 'HEC_TOKEN' })).toBe('config.token: give one of token, token_env, token_file');
    expect(check({ url: 'u', token_env: 'NOT_SET_HERE' })).toBe("config.token_env: NOT_SET_HERE is not set in the server's environment");
    expect(check({ url: 'u', token_env: 'FLEETCTL_JWT_SECRET' })).toBe(
      "config.token_env: FLEETCTL_JWT_SECRET is one of the server's own settings, not a sink secret",
    );
    expect(check({ url: 'u', token_env: 'a-b' })).toBe('config.token_env: "a-b" is not an environment variable name');
    expect(check({ url: 'u', token_file: 'relative.pw' })).toBe('config.token_file: "relative.pw" is not an absolute path');
    expect(check({ url: 'u', token_file: join(dir, 'missing') })).toMatch(/^config\.token_file: .* cannot be read \(ENOENT\)$/);
    expect(check({ url: 'u', token: 't', sasl: { mechanism: 'plain', password_file: secretFile } })).toBe('ok');
    expect(check({ url: 'u', token: 't', sasl: { mechanism: 'plain', password: 'p', password_env: 'HEC_TOKEN' } })).toBe(
      'config.sasl.password: give one of password, password_env, password_file',
    );
    expect(
      resolveConfig(
        fake,
        JSON.stringify({ url: 'u', token_env: 'HEC_TOKEN', sasl: { mechanism: 'plain', password_file: secretFile } }),
        ctx.env,
      ),
    ).toEqual({
      url: 'u',
      token: 'tok-from-env',
      sasl: { mechanism: 'plain', password: 'pw-from-file' },
    });
  });

  it('header values of an http sink: redacted, and given per header as headers_env / headers_file', () => {
    const http = destinationOf('http')!;
    expect(problem('http', { url: 'http://x/', headers_env: { Authorization: 'HEC_TOKEN' } })).toBe('ok');
    expect(problem('http', { url: 'http://x/', headers: { Authorization: 'a' }, headers_env: { Authorization: 'HEC_TOKEN' } })).toBe(
      'config.headers.Authorization: give one of headers, headers_env, headers_file',
    );
    expect(
      resolveConfig(
        http,
        JSON.stringify({ url: 'http://x/', headers: { 'X-A': '1' }, headers_env: { Authorization: 'HEC_TOKEN' } }),
        ctx.env,
      ),
    ).toEqual({
      url: 'http://x/',
      headers: { 'X-A': '1', Authorization: 'tok-from-env' },
    });
    expect(
      JSON.parse(
        redactConfig(
          JSON.stringify({ url: 'http://x/', headers: { Authorization: 'Bearer s3cret' }, headers_env: { B: 'HEC_TOKEN' } }),
          http,
        ),
      ),
    ).toEqual({
      url: 'http://x/',
      headers: { Authorization: '<redacted>' },
      headers_env: { B: 'HEC_TOKEN' },
    });
  });

  it('never leave in a read; "<redacted>" sent back keeps the stored value, anything else replaces it', () => {
    const stored = JSON.stringify({ url: 'u', token: 's3cret', sasl: { mechanism: 'plain', password: 'p4ss' } });
    const shown = redactConfig(stored, fake);
    expect(shown).not.toContain('s3cret');
    expect(shown).not.toContain('p4ss');
    expect(JSON.parse(shown)).toEqual({ url: 'u', token: '<redacted>', sasl: { mechanism: 'plain', password: '<redacted>' } });
    // Types this server has no module for: the usual secret names are redacted all the same.
    expect(JSON.parse(redactConfig(JSON.stringify({ brokers: ['k:9092'], sasl: { password: 'x' }, api_key: 'y' }), undefined))).toEqual({
      brokers: ['k:9092'],
      sasl: { password: '<redacted>' },
      api_key: '<redacted>',
    });
    const edited = restoreRedacted({ ...JSON.parse(shown), url: 'u2' }, stored, fake);
    expect(edited).toEqual({ url: 'u2', token: 's3cret', sasl: { mechanism: 'plain', password: 'p4ss' } });
    expect(restoreRedacted({ url: 'u', token: 'new' }, stored, fake)).toEqual({ url: 'u', token: 'new' });
    expect(() => restoreRedacted({ url: 'u', token: '<redacted>' }, JSON.stringify({ url: 'u', token_env: 'HEC_TOKEN' }), fake)).toThrow(
      /config\.token: "<redacted>" stands for the stored secret, and this sink has none there/,
    );
    expect(changedKeys(stored, JSON.stringify(edited))).toEqual(['url']);
  });
});

describe('the fields kept of an entry', () => {
  it('are the same on the event loop and in the big-body worker', async () => {
    const entries = [
      { name: 'pack_a_b', unixTime: 1700000000, columns: {} },
      { severity: '2', unixTime: '1700000001', message: 'm' },
      { severity: 0, unixTime: 1700000002.7 },
      { name: 7, severity: 'x', unixTime: '' },
      'not an object',
      null,
      { name: 'n'.repeat(2000), severity: 12, unixTime: 1e12 },
    ];
    const decoder = new BigBodyDecoder();
    try {
      const decoded = await decoder.decode(gzipSync(JSON.stringify({ node_key: 'k', log_type: 'result', data: entries })), 1 << 20);
      expect(decoded.entries.map(({ text: _t, ...f }) => f)).toEqual(entries.map((e) => entryFields(e)));
      expect(entryFields(entries[0])).toEqual({ name: 'pack_a_b', time: 1700000000 });
      expect(entryFields(entries[1])).toEqual({ severity: 2, time: 1700000001 });
      expect(entryFields(entries[6]).name).toHaveLength(1024);
    } finally {
      await decoder.close();
    }
  });
});
