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
    const seg = segs[i]!;
    if (Array.isArray(cur) && !INDEX.test(seg)) {
      const rest = segs.slice(i);
      const values = cur.map((el) => lookupSegs(el, rest)).filter((r) => r.found).map((r) => r.value);
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
  return [...new Set(s.split(',').map((f) => f.trim()).filter((f) => f !== ''))];
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
export function validateFields(fields: readonly string[], sample: unknown, columns: readonly { key: string }[]): void {
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
        throw new FieldError(field, Object.keys(cur).map((k) => `${prefix}.${k}`));
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
