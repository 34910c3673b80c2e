// Field selection (`--fields a,b.c`): dotted-path lookup, validation and projection.
import { FieldError } from './errors.js';
import type { Column } from './format.js';

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const INDEX = /^\d+$/;

/**
 * Looks a dotted path up in a value: `health.status`, `system_info.os.name`, `tags.0.name`.
 * Through an array, a segment that is not an index applies to every element: `tags.name` is
 * the list of tag names (elements without it are skipped). A key that itself contains dots
 * wins over the nested lookup when it exists.
 */
export function lookupPath(value: unknown, path: string): { found: boolean; value: unknown } {
  if (typeof value !== 'object' || value === null) return { found: false, value: undefined };
  if (Object.hasOwn(value, path)) return { found: true, value: (value as Record<string, unknown>)[path] };
  return lookupSegs(value, path.split('.'));
}

function lookupSegs(value: unknown, segs: readonly string[]): { found: boolean; value: unknown } {
  let cur: unknown = value;
  for (let i = 0; i < segs.length; i++) {
    const seg = segs[i];
    if (Array.isArray(cur) && !INDEX.test(seg)) {
      const rest = segs.slice(i);
      const values = cur
        .map((el) => lookupSegs(el, rest))
        .filter((r) => r.found)
        .map((r) => r.value);
      return { found: true, value: values.flat() };
    }
    if (typeof cur !== 'object' || cur === null || !Object.hasOwn(cur, seg)) return { found: false, value: undefined };
    cur = (cur as Record<string, unknown>)[seg];
  }
  return { found: true, value: cur };
}

export function getPath(value: unknown, path: string): unknown {
  return lookupPath(value, path).value;
}

/** `"uuid, hostname,,health.status"` -> `["uuid", "hostname", "health.status"]` (deduplicated). */
export function parseFields(s: string): string[] {
  return [
    ...new Set(
      s
        .split(',')
        .map((f) => f.trim())
        .filter((f) => f !== ''),
    ),
  ];
}

/** The field names `--fields` accepts: top-level keys of the sample, then declared column keys. */
export function validFieldNames(sample: unknown, columns: readonly { key: string }[]): string[] {
  const names = isPlainObject(sample) ? Object.keys(sample) : [];
  for (const c of columns) if (!names.includes(c.key)) names.push(c.key);
  return names;
}

/**
 * Throws FieldError for the first field that is not valid.
 *
 * Valid: a declared column key, or a path whose first segment is a top-level key of `sample`
 * (the first item of a list). Deeper segments are checked too while the sample holds a plain
 * object there (`health.bogus` fails and lists `health.status, health.reason, ...`); through an
 * array, against its first object element (`tags.nope` fails and lists `tags.name, ...`); below a
 * null, an empty array or a missing value anything is accepted, because other items may differ.
 * With no sample (empty list) only the declared columns count; with no columns either,
 * everything is accepted (nothing to check against).
 */
export function validateFields(fields: readonly string[], sample: unknown, columns: readonly { key: string }[], schema?: object): void {
  if (schema) return validateFieldsBySchema(fields, schema, columns);
  const hasSample = sample !== undefined;
  if (!hasSample && columns.length === 0) return;
  const columnKeys = new Set(columns.map((c) => c.key));
  const topLevel = validFieldNames(hasSample ? sample : undefined, columns);
  for (const field of fields) {
    if (columnKeys.has(field)) continue;
    if (hasSample && isPlainObject(sample) && Object.hasOwn(sample, field)) continue;
    const segs = field.split('.');
    const first = segs[0] ?? '';
    if (!hasSample || !isPlainObject(sample) || !Object.hasOwn(sample, first)) {
      throw new FieldError(field, topLevel);
    }
    let cur: unknown = sample[first];
    for (let i = 1; i < segs.length; i++) {
      const seg = segs[i] ?? '';
      if (Array.isArray(cur)) cur = INDEX.test(seg) ? undefined : cur.find(isPlainObject);
      if (!isPlainObject(cur)) break; // null, empty array, scalar: other items may differ
      if (!Object.hasOwn(cur, seg)) {
        const prefix = segs.slice(0, i).join('.');
        throw new FieldError(
          field,
          Object.keys(cur).map((k) => `${prefix}.${k}`),
        );
      }
      cur = cur[seg];
    }
  }
}

/**
 * The value of one selected field for the machine formats (json, jsonl, yaml, jq): the data's
 * own value when the path exists (API field names and shapes stay the contract), otherwise a
 * declared column's `get` (computed columns), otherwise null.
 */
export function fieldValue<T>(row: T, field: string, columns: readonly Column<T>[]): unknown {
  const hit = lookupPath(row, field);
  if (hit.found) return hit.value ?? null;
  const col = columns.find((c) => c.key === field);
  if (col?.get) return col.get(row) ?? null;
  return null;
}

/** `{ "uuid": ..., "health.status": ... }`: exactly the given keys, in the given order. */
export function selectFields<T>(row: T, fields: readonly string[], columns: readonly Column<T>[] = []): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of fields) out[f] = fieldValue(row, f, columns);
  return out;
}

/** The JSON Schema keywords a field path walks through (TypeBox's output for src/api). */
interface SchemaNode {
  type?: string | string[];
  properties?: Record<string, SchemaNode>;
  patternProperties?: Record<string, SchemaNode>;
  additionalProperties?: boolean | SchemaNode;
  items?: SchemaNode;
  anyOf?: SchemaNode[];
  oneOf?: SchemaNode[];
  allOf?: SchemaNode[];
}

type PathCheck = { ok: true } | { ok: false; at: string; keys: string[] };

/** Whether `segs[i..]` exists below `s`; on failure, the prefix and the keys that exist there. */
function checkPath(s: SchemaNode, segs: readonly string[], i: number): PathCheck {
  if (i >= segs.length) return { ok: true };
  const branches = s.anyOf ?? s.oneOf;
  if (branches) {
    let fail: PathCheck = { ok: false, at: segs.slice(0, i).join('.'), keys: [] };
    for (const b of branches) {
      const r = checkPath(b, segs, i);
      if (r.ok) return r;
      if (!fail.ok && !r.ok && r.keys.length > fail.keys.length) fail = r;
    }
    return fail;
  }
  if (s.allOf) {
    const properties = Object.assign({}, ...s.allOf.map((b) => b.properties ?? {})) as Record<string, SchemaNode>;
    return checkPath({ properties, patternProperties: s.allOf.find((b) => b.patternProperties)?.patternProperties }, segs, i);
  }
  const seg = segs[i];
  if (s.items || s.type === 'array') {
    // Through a list: an index picks an element, any other segment applies to every element.
    return checkPath(s.items ?? {}, segs, INDEX.test(seg) ? i + 1 : i);
  }
  if (s.properties && Object.hasOwn(s.properties, seg)) return checkPath(s.properties[seg], segs, i + 1);
  // A record (patternProperties) or an open object: any key may be there.
  if (s.patternProperties || (s.additionalProperties !== undefined && s.additionalProperties !== false)) return { ok: true };
  if (s.properties) return { ok: false, at: segs.slice(0, i).join('.'), keys: Object.keys(s.properties) };
  // No type at all (unknown): anything below may exist. A scalar has nothing below it.
  if (s.type === undefined) return { ok: true };
  return { ok: false, at: segs.slice(0, i).join('.'), keys: [] };
}

/**
 * `--fields` checked against the item's schema (src/api), not the data: `tags.nope` fails even
 * when the first rows carry no tags, and before any request is made. Declared column keys
 * (computed columns such as `type`) are valid too.
 */
export function validateFieldsBySchema(fields: readonly string[], schema: object, columns: readonly { key: string }[]): void {
  const columnKeys = new Set(columns.map((c) => c.key));
  const root = schema as SchemaNode;
  const topLevel = [
    ...Object.keys(root.properties ?? {}),
    ...columns.map((c) => c.key).filter((k) => !Object.hasOwn(root.properties ?? {}, k)),
  ];
  for (const field of fields) {
    if (columnKeys.has(field)) continue;
    if (root.properties && Object.hasOwn(root.properties, field)) continue; // a key holding dots
    const r = checkPath(root, field.split('.'), 0);
    if (r.ok) continue;
    if (r.at === '') throw new FieldError(field, topLevel);
    throw new FieldError(field, r.keys.length ? r.keys.map((k) => `${r.at}.${k}`) : [r.at]);
  }
}
