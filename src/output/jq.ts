// `--jq EXPR`, evaluated in-process by jq-wasm (real jq 1.7.1 compiled to WebAssembly), loaded
// only when a command is given --jq (the module is 1.3 MB; start-up stays fast).
//
// Output, like gh's --jq: one result a line, strings without their quotes (so `.[].uuid`
// gives bare ids), everything else compact JSON.
//
// Two things jq-wasm@1 gets in the way of, worked around here:
// 1. When jq prints some results and then fails, jq-wasm returns the results and drops the
//    error. The expression is therefore run as `try (EXPR) catch {<marker>: .}`: an error shows
//    up as a last, marked line, which is turned into JqError. Compile errors are re-run
//    without the wrapper so that jq's message shows the user's expression as typed.
// 2. jq-wasm feeds stdin to jq one byte at a time with `buffer.slice(1)`: O(n^2) in the input
//    size (a 780 kB list of 2,000 nodes takes 12 s). While our call runs, the TextEncoder that
//    jq-wasm uses to encode its input is swapped for one that returns, for that exact input
//    string only, a Uint8Array whose slice() is a view (O(1)); 12 s becomes 0.1 s. Every other
//    caller gets the standard encoder's result unchanged, the global is restored in
//    `finally`, and if jq-wasm ever stops using TextEncoder this silently does nothing.
//    Output is still collected byte by byte (quadratic): results beyond a few hundred kB are
//    slow; for `--jq .` on a huge list, prefer `-o json | jq`.
import { safeJson, safeText } from './sanitize.js';
import { JqError } from './errors.js';

const MARKER = '__fleetctl_jq_error_7f3a__';

type RawFn = (data: string | object, filter: string, flags?: string[]) => Promise<string>;
let rawFn: Promise<RawFn> | undefined;

function loadJq(): Promise<RawFn> {
  rawFn ??= import('jq-wasm').then((m) => {
    const mod = m as unknown as { raw?: RawFn; default?: { raw?: RawFn } };
    const fn = mod.raw ?? mod.default?.raw;
    if (!fn) throw new Error('jq-wasm: raw() not found');
    return fn;
  });
  return rawFn;
}

class ViewSliceBytes extends Uint8Array<ArrayBuffer> {
  override slice(start?: number, end?: number): Uint8Array<ArrayBuffer> {
    return this.subarray(start, end);
  }
}

let queue: Promise<unknown> = Promise.resolve();

/** Runs jq-wasm's raw() on `input` (JSON text), one call at a time, with the fast encoder. */
function runRaw(input: string, filter: string, flags: string[]): Promise<string> {
  const run = async (): Promise<string> => {
    const raw = await loadJq();
    const Original = globalThis.TextEncoder;
    class InputEncoder extends Original {
      override encode(s?: string): Uint8Array<ArrayBuffer> {
        const bytes = super.encode(s);
        if (s !== input) return bytes;
        return new ViewSliceBytes(bytes.buffer, bytes.byteOffset, bytes.length) as Uint8Array<ArrayBuffer>;
      }
    }
    globalThis.TextEncoder = InputEncoder;
    try {
      return await raw(input, filter, flags);
    } finally {
      globalThis.TextEncoder = Original;
    }
  };
  const result = queue.then(run, run);
  queue = result.catch(() => undefined);
  return result;
}

function errorText(e: unknown): string {
  return (e instanceof Error ? e.message : String(e)).trim();
}

/** `jq: error: syntax error, ... at <top-level>, line 1:\n.[ \njq: 1 compile error` -> one line. */
function compileMessage(stderr: string): string {
  const lines = stderr
    .split('\n')
    .filter((l) => l.startsWith('jq: error'))
    .map((l) => l.replace(/^jq: error(?: \([^)]*\))?: /, '').replace(/:$/, ''));
  return `jq: ${lines.length > 0 ? lines.join('; ') : stderr.replace(/\s+/g, ' ')}`;
}

function runtimeMessage(v: unknown): string {
  if (typeof v === 'string') return `jq: ${v}`;
  return `jq: ${JSON.stringify(v)} (not a string)`;
}

/**
 * Evaluates `expr` on `value` and returns jq's results, one JSON text each (compact).
 * Throws JqError with jq's message.
 */
export async function jqResults(value: unknown, expr: string): Promise<string[]> {
  const input = JSON.stringify(value) ?? 'null';
  const wrapped = `try (\n${expr}\n) catch {"${MARKER}": .}`;
  let out: string;
  try {
    out = await runRaw(input, wrapped, ['-c']);
  } catch (e) {
    // Compile error (or jq gave up with nothing on stdout). Ask again without the wrapper, on
    // `null` (compile errors do not depend on the input), for jq's message about EXPR itself.
    let msg = errorText(e);
    if (/compile error/.test(msg)) {
      try {
        await runRaw('null', expr, ['-c']);
      } catch (e2) {
        if (/compile error/.test(errorText(e2))) msg = errorText(e2);
      }
      throw new JqError(compileMessage(msg), 'compile', msg);
    }
    throw new JqError(`jq: ${msg.replace(/^jq: error(?: \([^)]*\))?: /, '')}`, 'runtime', msg);
  }
  const lines = out === '' ? [] : out.split('\n');
  const last = lines[lines.length - 1];
  if (last !== undefined && last.startsWith(`{"${MARKER}":`)) {
    const parsed = JSON.parse(last) as Record<string, unknown>;
    throw new JqError(runtimeMessage(parsed[MARKER]), 'runtime');
  }
  return lines;
}

/**
 * The text to print for jq's results: strings unquoted, other values compact JSON, one a line.
 * A raw string keeps its data when piped; when stdout is a terminal (`terminal`), its control
 * and bidi characters are shown escaped (sanitize.ts). JSON results are always escaped as JSON.
 */
export async function evalJq(value: unknown, expr: string, o: { terminal?: boolean } = {}): Promise<string> {
  const lines = await jqResults(value, expr);
  let text = '';
  for (const line of lines) {
    if (!line.startsWith('"')) text += `${safeJson(line)}\n`;
    else {
      const str = JSON.parse(line) as string;
      text += `${o.terminal ? safeText(str) : str}\n`;
    }
  }
  return text;
}
