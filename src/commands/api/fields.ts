// `fleetctl api -f key=value -F key=value`: request parameters as gh api builds them.
// -f (raw) values are strings; -F (typed) turns true/false/null and numbers into JSON values
// and reads `@FILE` (or `@-`, stdin) as the string content. Keys may nest: `a[b]=1` sets
// {"a":{"b":1}}, `ids[]=x -f ids[]=y` builds ["x","y"].
import { UsageError } from '../../errors.js';

export interface FieldSpec {
  /** Key segments: `a[b][]` -> ['a', 'b', '']; '' appends to an array. */
  path: string[];
  value: unknown;
  /** As typed, for messages. */
  raw: string;
}

const NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;

export function parseKey(key: string, raw: string): string[] {
  const m = /^([^[\]]+)((?:\[[^[\]]*\])*)$/.exec(key);
  if (!m) throw new UsageError(`invalid field "${raw}": the key must look like name, name[sub] or name[]`);
  const rest = [...(m[2] ?? '').matchAll(/\[([^[\]]*)\]/g)].map((x) => x[1] ?? '');
  return [m[1], ...rest];
}

/** Splits `key=value` at the first `=`; `typed` converts as -F does (files are read by the caller). */
export function parseField(spec: string, typed: boolean): FieldSpec {
  const eq = spec.indexOf('=');
  if (eq <= 0) throw new UsageError(`invalid field "${spec}": expected key=value`);
  const path = parseKey(spec.slice(0, eq), spec);
  const text = spec.slice(eq + 1);
  return { path, value: typed ? typedValue(text) : text, raw: spec };
}

export function typedValue(text: string): unknown {
  if (text === 'true') return true;
  if (text === 'false') return false;
  if (text === 'null') return null;
  if (NUMBER.test(text)) return Number(text);
  return text;
}

/** The JSON body the fields describe. Conflicting shapes (`a=1` and `a[b]=2`) are usage errors. */
export function buildBody(fields: readonly FieldSpec[]): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  for (const f of fields) {
    let cur: Record<string, unknown> | unknown[] = root;
    f.path.forEach((seg, i) => {
      const last = i === f.path.length - 1;
      const nextIsArray = !last && f.path[i + 1] === '';
      const fresh = (): unknown => (last ? f.value : nextIsArray ? [] : {});
      if (Array.isArray(cur)) {
        if (seg !== '') throw new UsageError(`field "${f.raw}": ${f.path.slice(0, i).join('.')} is a list; use []`);
        const v = fresh();
        cur.push(v);
        if (!last) cur = v as Record<string, unknown> | unknown[];
        return;
      }
      if (seg === '') throw new UsageError(`field "${f.raw}": [] must follow a name`);
      if (last) {
        if (Object.hasOwn(cur, seg) && typeof cur[seg] === 'object' && cur[seg] !== null) {
          throw new UsageError(`field "${f.raw}" conflicts with another field that sets ${f.path.join('.')} as an object or list`);
        }
        cur[seg] = f.value;
        return;
      }
      if (!Object.hasOwn(cur, seg)) cur[seg] = fresh();
      const next = cur[seg];
      const wantArray = nextIsArray;
      if (typeof next !== 'object' || next === null || Array.isArray(next) !== wantArray) {
        throw new UsageError(`field "${f.raw}" conflicts with another field for ${f.path.slice(0, i + 1).join('.')}`);
      }
      cur = next as Record<string, unknown> | unknown[];
    });
  }
  return root;
}

/** Query parameters for GET: flat keys only (the client sends one value per name). */
export function buildQuery(fields: readonly FieldSpec[]): Record<string, string> {
  const q: Record<string, string> = {};
  for (const f of fields) {
    if (f.path.length !== 1) throw new UsageError(`field "${f.raw}": nested keys and lists go into a JSON body, not a query string`);
    q[f.path[0]] = typeof f.value === 'string' ? f.value : f.value === null ? '' : (JSON.stringify(f.value) ?? '');
  }
  return q;
}
