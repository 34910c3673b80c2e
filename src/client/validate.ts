// Every answer is checked against its src/api schema before a command touches it, so a server
// that sends another shape (osctrl, an old or broken server) gives one clear line, never a
// TypeError deep in a printer. The check walks the schema's JSON Schema keywords directly
// (type, properties, items, anyOf, const, patternProperties: all src/api uses), which costs
// nothing to load, where TypeBox's compiler took 40 ms to load on every request (issue 11).
//
// The API spec makes no response field required, and real servers leave fields out (osctrl's
// Go structs are `omitempty`: one empty BIOS field on one node). So (issue 19): the types of
// what is present are checked; a field is required only where the client marked it with
// `needs()` (what a command cannot work without: a login's token, a page's items, a node's
// uuid); and every field the schema always has that the server left out is filled with its
// zero value ('' 0 false [] {…}), so commands and printers see the whole shape and a missing
// optional field is never an error.
import type { TSchema } from '@sinclair/typebox';
import { CliError, ExitCode } from '../errors.js';

export const DEBUG_HINT = 'run the command again with --debug to see what the server sent';

export class UnexpectedAnswerError extends CliError {
  constructor(detail: string) {
    super(`unexpected answer from the server: ${detail}`, ExitCode.error, DEBUG_HINT);
  }
}

/** Where needs() keeps a schema's required keys: a symbol, so TypeBox and the server's serializer never see it. */
const NEEDED = Symbol('needed');

interface Schema {
  [NEEDED]?: string[];
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  anyOf?: Schema[];
  const?: unknown;
  patternProperties?: Record<string, Schema>;
}

/** What was wrong, and where: the keys from the root, filled in on the way back up. */
interface Mismatch {
  at: (string | number)[];
  missing: boolean;
  expected: string;
}

type Check = (v: unknown) => Mismatch | undefined;

const TYPE_TESTS: Record<string, (v: unknown) => boolean> = {
  string: (v) => typeof v === 'string',
  integer: (v) => Number.isInteger(v),
  number: (v) => typeof v === 'number' && Number.isFinite(v),
  boolean: (v) => typeof v === 'boolean',
  null: (v) => v === null,
  array: (v) => Array.isArray(v),
  object: (v) => typeof v === 'object' && v !== null && !Array.isArray(v),
};

const isObject = TYPE_TESTS.object;
const compiled = new WeakMap<Schema, Check>();

function inside(m: Mismatch | undefined, key: string | number): Mismatch | undefined {
  if (m) m.at.unshift(key);
  return m;
}

const wrongType = (expected: string): Mismatch => ({ at: [], missing: false, expected });

/** A check closure per schema, built once: a 500-node page is checked in about as long as it is parsed. */
function compile(s: Schema): Check {
  let c = compiled.get(s);
  if (c) return c;
  c = build(s);
  compiled.set(s, c);
  return c;
}

function build(s: Schema): Check {
  const checks: Check[] = [];
  if (s.anyOf) {
    const alts = s.anyOf.map(compile);
    checks.push((v) => (alts.some((alt) => !alt(v)) ? undefined : wrongType('union value')));
  }
  if ('const' in s) checks.push((v) => (v === s.const ? undefined : wrongType(JSON.stringify(s.const))));
  const types = s.type === undefined ? [] : Array.isArray(s.type) ? s.type : [s.type];
  const tests = types.map((t) => TYPE_TESTS[t]).filter((t) => t !== undefined);
  const expected = types.join(' or ');
  const one = tests.length === 1 ? tests[0] : undefined;
  if (one) checks.push((v) => (one(v) ? undefined : wrongType(expected)));
  else if (tests.length > 1) checks.push((v) => (tests.some((t) => t(v)) ? undefined : wrongType(expected)));
  if (s.items) {
    const item = compile(s.items);
    checks.push((v) => {
      if (!Array.isArray(v)) return undefined;
      for (let i = 0; i < v.length; i++) {
        const m = item(v[i]);
        if (m) return inside(m, i);
      }
      return undefined;
    });
  }
  const required = s[NEEDED] ?? [];
  const keys = Object.keys(s.properties ?? {});
  const props = keys.map((key) => compile(s.properties![key]));
  // The fields the schema always has: left out by the server, they get their zero value here, in the same pass.
  const always = new Set(s.required ?? []);
  const zero = keys.map((key) => (always.has(key) ? s.properties![key] : undefined));
  const patterns = Object.entries(s.patternProperties ?? {}).map(([re, sub]) => [new RegExp(re), compile(sub)] as const);
  if (required.length > 0 || keys.length > 0 || patterns.length > 0) {
    checks.push((v) => {
      if (!isObject(v)) return undefined;
      const o = v as Record<string, unknown>;
      for (let i = 0; i < required.length; i++) if (o[required[i]] === undefined) return { at: [required[i]], missing: true, expected: '' };
      for (let i = 0; i < keys.length; i++) {
        const value = o[keys[i]];
        if (value === undefined) {
          if (zero[i]) o[keys[i]] = emptyValue(zero[i] as TSchema);
          continue;
        }
        const m = props[i](value);
        if (m) return inside(m, keys[i]);
      }
      if (patterns.length > 0) {
        for (const key of Object.keys(o)) {
          const m = patterns.find(([re]) => re.test(key))?.[1](o[key]);
          if (m) return inside(m, key);
        }
      }
      return undefined;
    });
  }
  if (checks.length === 0) return () => undefined;
  if (checks.length === 1) return checks[0];
  if (checks.length === 2) {
    const [first, second] = checks as [Check, Check];
    return (v) => first(v) ?? second(v);
  }
  return (v) => {
    for (const check of checks) {
      const m = check(v);
      if (m) return m;
    }
    return undefined;
  };
}

/**
 * The schema with `keys` required in answers (a copy: the original, shared with the server,
 * is unchanged). Only what a command cannot do without; everything else may be missing.
 */
export function needs<T extends TSchema>(schema: T, ...keys: (keyof T['properties'] & string)[]): T {
  return { ...schema, [NEEDED]: keys };
}

const pathOf = (root: string, at: (string | number)[]) =>
  at.reduce<string>((path, key) => (typeof key === 'number' ? `${path}[${key}]` : path ? `${path}.${key}` : key), root);

/**
 * Returns `value` typed as the schema's type, with what the server left out filled with zero
 * values, or throws UnexpectedAnswerError naming the first field of the wrong type (or missing
 * where needs() requires it).
 */
export function checkAnswer<T>(schema: TSchema, value: unknown, what = ''): T {
  const m = compile(schema as Schema)(value);
  if (!m) return value as T;
  const where = pathOf(what, m.at) || 'the answer';
  throw new UnexpectedAnswerError(m.missing ? `${where} is missing` : `${where}: expected ${m.expected}`);
}

/**
 * The empty value of a schema (what a field the server left out stands for): '' for strings, 0
 * for numbers, false, null, [] and objects of their required properties, the first choice of a
 * union.
 */
function emptyValue(schema: TSchema): unknown {
  const s = schema as Schema;
  if ('const' in s) return s.const;
  if (s.anyOf) return s.anyOf.length > 0 ? emptyValue(s.anyOf[0] as TSchema) : undefined;
  const type = Array.isArray(s.type) ? s.type[0] : s.type;
  switch (type) {
    case 'string':
      return '';
    case 'integer':
    case 'number':
      return 0;
    case 'boolean':
      return false;
    case 'null':
      return null;
    case 'array':
      return [];
    case 'object':
      return Object.fromEntries((s.required ?? []).map((key) => [key, emptyValue(s.properties?.[key] as TSchema)]));
    default:
      return undefined;
  }
}
