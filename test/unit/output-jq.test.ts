import { describe, expect, it } from 'vitest';
import { createListWriter, JqError, printList, printObject, type OutputOptions } from '../../src/output/index.js';
import { memoryIO } from '../helpers/memory-io.js';

const nodes = [
  { uuid: 'u1', hostname: 'h1', n: 1, health: { status: 'healthy' }, note: 'two\nlines' },
  { uuid: 'u2', hostname: 'h2', n: 2, health: { status: 'degraded' }, note: 'x' },
];

async function jq(expr: string, more: Partial<OutputOptions> = {}, data: unknown[] = nodes): Promise<string> {
  const io = memoryIO();
  await printList(io, { format: 'table', jq: expr, ...more }, data, [{ key: 'uuid' }]);
  return io.stdoutText();
}

describe('--jq', () => {
  it('single value: numbers and objects as compact JSON', async () => {
    expect(await jq('length')).toBe('2\n');
    expect(await jq('.[0].health')).toBe('{"status":"healthy"}\n');
    expect(await jq('map(.n * 2)')).toBe('[2,4]\n');
  });
  it('strings are printed without quotes', async () => {
    expect(await jq('.[0].uuid')).toBe('u1\n');
    expect(await jq('.[0].note')).toBe('two\nlines\n');
  });
  it('multiple results: one per line', async () => {
    expect(await jq('.[] | .uuid')).toBe('u1\nu2\n');
    expect(await jq('.[] | {uuid, n}')).toBe('{"uuid":"u1","n":1}\n{"uuid":"u2","n":2}\n');
  });
  it('no result prints nothing; null prints null', async () => {
    expect(await jq('empty')).toBe('');
    expect(await jq('.[5]')).toBe('null\n');
  });
  it('runs after --fields', async () => {
    expect(await jq('.[0] | keys_unsorted', { fields: ['hostname', 'health.status'] })).toBe('["hostname","health.status"]\n');
  });
  it('on an empty list sees []', async () => {
    expect(await jq('length', {}, [])).toBe('0\n');
  });
  it('on a single object', async () => {
    const io = memoryIO();
    await printObject(io, { format: 'json', jq: '.health.status' }, nodes[0]);
    expect(io.stdoutText()).toBe('healthy\n');
  });
  it('buffers a streamed list and runs once at end()', async () => {
    const io = memoryIO();
    const w = createListWriter(io, { format: 'json', jq: 'map(.uuid) | join(",")' }, []);
    await w.write([nodes[0]]);
    await w.write([nodes[1]]);
    expect(io.stdoutText()).toBe('');
    await w.end();
    expect(io.stdoutText()).toBe('u1,u2\n');
  });
  it('syntax error: JqError (compile, exit 2) with jq message, nothing printed', async () => {
    const io = memoryIO();
    const err = await printList(io, { format: 'json', jq: '.[' }, nodes, []).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(JqError);
    const je = err as JqError;
    expect(je.phase).toBe('compile');
    expect(je.exitCode).toBe(2);
    expect(je.message).toMatch(/^jq: syntax error/);
    expect(je.message).toContain('line 1');
    expect(je.message).not.toContain('\n');
    expect(io.stdoutText()).toBe('');
  });
  it('undefined function is a compile error too', async () => {
    await expect(jq('nosuchfn')).rejects.toThrow(/nosuchfn\/0 is not defined/);
  });
  it('runtime error: JqError (runtime, exit 1)', async () => {
    const err = (await jq('.[0].n.x').catch((e: unknown) => e)) as JqError;
    expect(err).toBeInstanceOf(JqError);
    expect(err.phase).toBe('runtime');
    expect(err.exitCode).toBe(1);
    expect(err.message).toBe('jq: Cannot index number with string "x"');
  });
  it('runtime error after some results is still an error (not silently dropped)', async () => {
    await expect(jq('.[] | if .n == 2 then error("boom") else .uuid end')).rejects.toThrow('jq: boom');
  });
  it('a trailing comment in the expression is fine', async () => {
    expect(await jq('length # count them')).toBe('2\n');
  });
  it('works on a 100,000-node list (jq-wasm aborted at ~27,000)', async () => {
    const node = (i: number) => ({
      uuid: `4b8bc382-49a7-42c7-a26f-${String(i).padStart(12, '0')}`,
      hostname: `prod-web-${i}`,
      platform: 'ubuntu',
      osquery_version: '5.12.1',
      tags: [{ name: 'pci' }],
      cpu: 'Intel(R) Xeon(R) CPU E5-2670',
      config_hash: 'a'.repeat(40),
    });
    const big = Array.from({ length: 100_000 }, (_, i) => node(i));
    expect(await jq('length', {}, big)).toBe('100000\n');
    expect(await jq('map(select(.hostname == "prod-web-99999")) | .[0].uuid', {}, big)).toBe('4b8bc382-49a7-42c7-a26f-000000099999\n');
  });
});
