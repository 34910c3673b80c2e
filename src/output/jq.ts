// `--jq EXPR`, evaluated in-process by jq-web (real jq 1.7 compiled to WebAssembly), loaded
// only when a command is given --jq (the module is 2.8 MB; start-up stays fast).
//
// Output, like gh's --jq: one result a line, strings without their quotes (so `.[].uuid`
// gives bare ids), everything else compact JSON.
//
// Why jq-web and not jq-wasm (used before): jq-wasm's build caps the WebAssembly heap at 256 MB
// and fed stdin one byte at a time, so `nodes list --all --jq length` aborted at ~27,000 nodes
// (`Aborted()` on stdout). jq-web's heap grows to 2 GB and reads the input from its in-memory
// file system: 100,000 nodes (47 MB of JSON) take about 1.5 s and 0.5 GB.
//
// When jq prints some results and then fails, jq-web throws and the results are lost. The
// expression is therefore run as `try (EXPR) catch {<marker>: .}`: an error shows up as a last,
// marked line, which is turned into JqError after the results before it. Compile errors are
// re-run without the wrapper so that jq's message shows the user's expression as typed.
import { createRequire } from 'node:module';
import { safeJson, safeText } from './sanitize.js';
import { JqError } from './errors.js';

const MARKER = '__fleetctl_jq_error_7f3a__';

type RawFn = (json: string, filter: string, flags?: string[]) => string;
let rawFn: Promise<RawFn> | undefined;

function loadJq(): Promise<RawFn> {
  // require, not import(): jq-web's module.exports is itself a promise, and an ESM namespace
  // with a `then` export cannot be the result of import().
  rawFn ??= (async () => {
    const mod = await (createRequire(import.meta.url)('jq-web') as Promise<{ raw?: RawFn }>);
    if (typeof mod.raw !== 'function') throw new Error('jq-web: raw() not found');
    return mod.raw;
  })();
  return rawFn;
}

/** Runs jq on `input` (JSON text). jq-web's errors carry jq's stderr. */
async function runRaw(input: string, filter: string, flags: string[]): Promise<string> {
  const raw = await loadJq();
  try {
    return raw(input, filter, [...flags]) ?? ''; // undefined when jq printed nothing
  } catch (e) {
    const stderr = (e as { stderr?: unknown }).stderr;
    // The WebAssembly heap is capped at 2 GB: past it jq aborts. Say so, and what works instead.
    if (/Aborted|OOM|out of memory|Cannot enlarge memory/i.test(errorText(e))) {
      throw new JqError('jq: the input is too large for the built-in jq (2 GB memory limit); pipe -o json into jq instead', 'runtime');
    }
    throw new Error(typeof stderr === 'string' && stderr.trim() ? stderr : errorText(e));
  }
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
 * A value already serialised: `--all` with --jq keeps each page as JSON text rather than as
 * objects, so 100,000 nodes are held once (as text), not as objects and then again as text.
 */
export class JsonText {
  constructor(readonly text: string) {}
}

/**
 * Evaluates `expr` on `value` and returns jq's results, one JSON text each (compact).
 * Throws JqError with jq's message.
 */
export async function jqResults(value: unknown, expr: string): Promise<string[]> {
  const input = value instanceof JsonText ? value.text : (JSON.stringify(value) ?? 'null');
  const wrapped = `try (\n${expr}\n) catch {"${MARKER}": .}`;
  let out: string;
  try {
    out = await runRaw(input, wrapped, ['-c']);
  } catch (e) {
    if (e instanceof JqError) throw e;
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
