// An environment's osquery configuration (issue 22): the five parts osquery's tls config plugin
// receives, their shapes as osquery's configuration documentation describes them, checked before
// anything is stored, and one canonical form (map keys sorted, fields in a fixed order) so equal
// configurations have equal text and equal hashes whatever order they were written in.
// Shared by the reference server (authoritative) and the CLI (which checks before any request,
// also against servers that check nothing).
import { checkSql } from './sql-check.js';
import {
  CONFIG_PARTS,
  type ConfigPart,
  type OptionValue,
  type ScheduledQuery,
  type Pack,
  type Decorators,
  type AtcTable,
  type OsqueryConfigParts,
} from '../api/osquery-config.js';

/** osquery's own bounds (osquery/config/packs.cpp: an interval of 0 or above a week is dropped). */
export const INTERVAL_MIN = 1;
export const INTERVAL_MAX = 604_800;
/** Words osquery's checkPlatform() understands, alone or comma-separated. */
export const PLATFORMS = ['all', 'any', 'darwin', 'freebsd', 'linux', 'posix', 'windows', 'ubuntu', 'centos'] as const;
/** osquery names a pack's queries pack<delimiter><pack><delimiter><query>; the default delimiter. */
export const PACK_DELIMITER = '_';

/** One offending place and why, e.g. `schedule.users_query.interval: must be a positive integer`. */
export class ConfigError extends Error {
  constructor(
    readonly path: string,
    readonly reason: string,
  ) {
    super(`${path}: ${reason}`);
    this.name = 'ConfigError';
  }
}

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** A readable path segment: `.name` when it is an identifier, `["odd name"]` otherwise. */
export function pathOf(base: string, key: string): string {
  return IDENT.test(key) ? `${base}.${key}` : `${base}[${JSON.stringify(key)}]`;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const sorted = <T>(o: Record<string, T>): [string, T][] => Object.entries(o).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
const describe = (v: unknown) =>
  v === null
    ? 'null'
    : Array.isArray(v)
      ? 'an array'
      : typeof v === 'object'
        ? 'an object'
        : `${typeof v} ${JSON.stringify(v)}`.slice(0, 60);

function object(path: string, v: unknown): Record<string, unknown> {
  if (!isObject(v)) throw new ConfigError(path, `must be an object, not ${describe(v)}`);
  return v;
}

function knownFields(path: string, o: Record<string, unknown>, known: readonly string[]): void {
  for (const k of Object.keys(o))
    if (!known.includes(k)) throw new ConfigError(pathOf(path, k), `unknown field (valid: ${known.join(', ')})`);
}

function name(path: string, key: string, what: string): void {
  if (key.trim() === '') throw new ConfigError(path, `${what} name must not be empty`);
  if (key.length > 255) throw new ConfigError(path, `${what} name is longer than 255 characters`);
  // eslint-disable-next-line no-control-regex -- control characters are what this looks for
  if (/[\x00-\x1f\x7f]/.test(key) || key !== key.trim())
    throw new ConfigError(path, `${what} name must not hold control characters or start or end with spaces`);
}

function sql(path: string, v: unknown): string {
  if (typeof v !== 'string') throw new ConfigError(path, `must be an SQL string, not ${describe(v)}`);
  const problem = checkSql(v);
  if (problem) throw new ConfigError(path, problem);
  return v;
}

function sqlList(path: string, v: unknown): string[] {
  if (!Array.isArray(v)) throw new ConfigError(path, `must be a list of SQL strings, not ${describe(v)}`);
  return v.map((q, i) => sql(`${path}[${i}]`, q));
}

function bool(path: string, v: unknown): boolean {
  if (typeof v !== 'boolean') throw new ConfigError(path, `must be true or false, not ${describe(v)}`);
  return v;
}

function text(path: string, v: unknown, max = 4096): string {
  if (typeof v !== 'string') throw new ConfigError(path, `must be a string, not ${describe(v)}`);
  if (v.length > max) throw new ConfigError(path, `is longer than ${max} characters`);
  return v;
}

export function interval(path: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < INTERVAL_MIN)
    throw new ConfigError(path, 'must be a positive integer (seconds)');
  if (v > INTERVAL_MAX) throw new ConfigError(path, `must be at most ${INTERVAL_MAX} seconds (osquery's maximum, one week)`);
  return v;
}

export function platform(path: string, v: unknown): string {
  const s = text(path, v, 255);
  const words = s.split(',').map((w) => w.trim());
  const bad = words.find((w) => !(PLATFORMS as readonly string[]).includes(w));
  if (bad !== undefined)
    throw new ConfigError(path, `unknown platform "${bad}" (valid: ${PLATFORMS.join(', ')}, or several separated by commas)`);
  return words.join(',');
}

function version(path: string, v: unknown): string {
  const s = text(path, v, 64);
  if (!/^\d+(\.\d+){0,3}$/.test(s)) throw new ConfigError(path, `must be an osquery version such as "5.12.1", not ${JSON.stringify(s)}`);
  return s;
}

export function shard(path: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > 100)
    throw new ConfigError(path, 'must be an integer from 1 to 100 (the percentage of hosts)');
  return v;
}

export const QUERY_FIELDS = [
  'query',
  'interval',
  'platform',
  'version',
  'shard',
  'snapshot',
  'removed',
  'denylist',
  'description',
  'value',
] as const;

/** One scheduled query (in `schedule` or a pack's `queries`), fields in canonical order. */
export function scheduledQuery(path: string, v: unknown): ScheduledQuery {
  const o = object(path, v);
  knownFields(path, o, QUERY_FIELDS);
  if (o.query === undefined) throw new ConfigError(`${path}.query`, 'required (the SQL to run)');
  if (o.interval === undefined) throw new ConfigError(`${path}.interval`, `required (seconds, ${INTERVAL_MIN} to ${INTERVAL_MAX})`);
  const q: ScheduledQuery = { query: sql(`${path}.query`, o.query), interval: interval(`${path}.interval`, o.interval) };
  if (o.platform !== undefined) q.platform = platform(`${path}.platform`, o.platform);
  if (o.version !== undefined) q.version = version(`${path}.version`, o.version);
  if (o.shard !== undefined) q.shard = shard(`${path}.shard`, o.shard);
  for (const f of ['snapshot', 'removed', 'denylist'] as const) if (o[f] !== undefined) q[f] = bool(`${path}.${f}`, o[f]);
  if (o.description !== undefined) q.description = text(`${path}.description`, o.description);
  if (o.value !== undefined) q.value = text(`${path}.value`, o.value);
  return q;
}

function queries(path: string, v: unknown, what: string): Record<string, ScheduledQuery> {
  const out: Record<string, ScheduledQuery> = {};
  for (const [k, q] of sorted(object(path, v))) {
    const p = pathOf(path, k);
    name(p, k, what);
    out[k] = scheduledQuery(p, q);
  }
  return out;
}

/** Options the server sets from the environment's intervals (issue 26): not stored, never accepted and overridden. */
const INTERVAL_OPTIONS: Record<string, 'query' | 'log'> = { distributed_interval: 'query', logger_tls_period: 'log' };

/**
 * What is worth a warning in options that are valid (issue 26): host_identifier in the
 * configuration overrides each host's own --host_identifier, so a host enrolled by hostname or a
 * specified identifier sends results under another identifier than its node's, and comes back as
 * a new node after a restart and a delete.
 */
export function optionWarnings(options: Record<string, unknown>): string[] {
  return 'host_identifier' in options
    ? [
        `options.host_identifier (${JSON.stringify(options.host_identifier)}) overrides every host's own --host_identifier: hosts enrolled with another identifier send results under this one and re-enroll as new nodes after a restart; leave it to the flags unless every host uses it`,
      ]
    : [];
}

function options(v: unknown): Record<string, OptionValue> {
  const out: Record<string, OptionValue> = {};
  for (const [k, val] of sorted(object('options', v))) {
    const p = pathOf('options', k);
    if (!/^[A-Za-z0-9_]{1,128}$/.test(k)) throw new ConfigError(p, 'is not an osquery flag name (letters, digits and _)');
    const interval = INTERVAL_OPTIONS[k];
    if (interval)
      throw new ConfigError(
        p,
        `is the environment's ${interval} interval, which the server puts in the options agents receive: set it with fleetctl env intervals ENV --${interval} N`,
      );
    if (typeof val === 'number' && !Number.isFinite(val)) throw new ConfigError(p, 'must be a finite number');
    if (typeof val !== 'string' && typeof val !== 'number' && typeof val !== 'boolean')
      throw new ConfigError(p, `must be a string, number or boolean, not ${describe(val)}`);
    if (typeof val === 'string' && val.length > 4096) throw new ConfigError(p, 'is longer than 4096 characters');
    out[k] = val;
  }
  return out;
}

export const PACK_FIELDS = ['queries', 'discovery', 'platform', 'version', 'shard', 'oncall'] as const;

function packs(v: unknown): Record<string, Pack | string> {
  const out: Record<string, Pack | string> = {};
  for (const [k, val] of sorted(object('packs', v))) {
    const p = pathOf('packs', k);
    name(p, k, 'pack');
    if (typeof val === 'string') {
      // A local pack: osquery reads the pack file (or glob) from the agent's disk.
      if (val.trim() === '') throw new ConfigError(p, 'a local pack needs the path of its pack file on the agent');
      out[k] = text(p, val, 1024);
      continue;
    }
    const o = object(p, val);
    knownFields(p, o, PACK_FIELDS);
    if (o.queries === undefined) throw new ConfigError(`${p}.queries`, "required (the pack's scheduled queries)");
    const pack: Pack = { queries: queries(`${p}.queries`, o.queries, 'query') };
    if (o.discovery !== undefined) pack.discovery = sqlList(`${p}.discovery`, o.discovery);
    if (o.platform !== undefined) pack.platform = platform(`${p}.platform`, o.platform);
    if (o.version !== undefined) pack.version = version(`${p}.version`, o.version);
    if (o.shard !== undefined) pack.shard = shard(`${p}.shard`, o.shard);
    if (o.oncall !== undefined) pack.oncall = text(`${p}.oncall`, o.oncall, 255);
    out[k] = pack;
  }
  return out;
}

function decorators(v: unknown): Decorators {
  const o = object('decorators', v);
  knownFields('decorators', o, ['load', 'always', 'interval']);
  const out: Decorators = {};
  if (o.load !== undefined) out.load = sqlList('decorators.load', o.load);
  if (o.always !== undefined) out.always = sqlList('decorators.always', o.always);
  if (o.interval !== undefined) {
    const intervals: Record<string, string[]> = {};
    const entries = Object.entries(object('decorators.interval', o.interval)).sort(([a], [b]) => Number(a) - Number(b));
    for (const [k, list] of entries) {
      const p = `decorators.interval[${JSON.stringify(k)}]`;
      // osquery runs interval decorators on minute boundaries: other keys are ignored by the agent.
      if (!/^[1-9]\d*$/.test(k) || Number(k) % 60 !== 0 || Number(k) > INTERVAL_MAX) {
        throw new ConfigError(p, `the key must be seconds, a multiple of 60 up to ${INTERVAL_MAX}`);
      }
      intervals[k] = sqlList(p, list);
    }
    out.interval = intervals;
  }
  return out;
}

function atc(v: unknown): Record<string, AtcTable> {
  const out: Record<string, AtcTable> = {};
  for (const [k, val] of sorted(object('atc', v))) {
    const p = pathOf('atc', k);
    if (!IDENT.test(k)) throw new ConfigError(p, 'a table name is letters, digits and _, not starting with a digit');
    const o = object(p, val);
    knownFields(p, o, ['query', 'path', 'columns', 'platform']);
    for (const f of ['query', 'path', 'columns'] as const) if (o[f] === undefined) throw new ConfigError(`${p}.${f}`, 'required');
    const path = text(`${p}.path`, o.path, 1024);
    if (path.trim() === '') throw new ConfigError(`${p}.path`, 'must name the SQLite file on the agent');
    if (!Array.isArray(o.columns) || o.columns.length === 0)
      throw new ConfigError(`${p}.columns`, 'must be a non-empty list of column names');
    const columns = o.columns.map((c, i) => {
      if (typeof c !== 'string' || !IDENT.test(c))
        throw new ConfigError(`${p}.columns[${i}]`, 'must be a column name (letters, digits and _)');
      return c;
    });
    const dup = columns.find((c, i) => columns.indexOf(c) !== i);
    if (dup) throw new ConfigError(`${p}.columns`, `names "${dup}" twice`);
    const t: AtcTable = { query: sql(`${p}.query`, o.query), path, columns };
    if (o.platform !== undefined) t.platform = platform(`${p}.platform`, o.platform);
    out[k] = t;
  }
  return out;
}

/** Checks one part and returns its canonical form; throws ConfigError at the first problem. */
export function validatePart<P extends ConfigPart>(part: P, value: unknown): OsqueryConfigParts[P] {
  switch (part) {
    case 'options':
      return options(value) as OsqueryConfigParts[P];
    case 'schedule':
      return queries('schedule', value, 'scheduled query') as OsqueryConfigParts[P];
    case 'packs':
      return packs(value) as OsqueryConfigParts[P];
    case 'decorators':
      return decorators(value) as OsqueryConfigParts[P];
    case 'atc':
      return atc(value) as OsqueryConfigParts[P];
  }
  throw new ConfigError(String(part), `unknown part (valid: ${CONFIG_PARTS.join(', ')})`);
}

export function isConfigPart(s: string): s is ConfigPart {
  return (CONFIG_PARTS as readonly string[]).includes(s);
}

/**
 * Rules across parts, on the configuration as it would be stored: osquery runs a pack's query
 * under the name pack_<pack>_<query>, so a scheduled query of that name would mix their results.
 */
export function checkAcrossParts(c: Pick<OsqueryConfigParts, 'schedule' | 'packs'>): void {
  for (const [packName, pack] of Object.entries(c.packs)) {
    if (typeof pack === 'string') continue;
    for (const q of Object.keys(pack.queries)) {
      const flat = `pack${PACK_DELIMITER}${packName}${PACK_DELIMITER}${q}`;
      if (flat in c.schedule) {
        throw new ConfigError(pathOf('schedule', flat), `duplicate name: osquery also names query "${q}" of pack "${packName}" ${flat}`);
      }
    }
  }
}

/** Every part from its stored JSON text (an environment row, osctrl's config answer), read leniently. */
export function readStoredParts(texts: Record<ConfigPart, string>): OsqueryConfigParts {
  return Object.fromEntries(CONFIG_PARTS.map((p) => [p, readStoredPart(p, texts[p])])) as unknown as OsqueryConfigParts;
}

/** The stored text of a part (JSON), read leniently: older rows keep options as {"options": {...}}. */
function readStoredPart(part: ConfigPart, stored: string): unknown {
  let v: unknown;
  try {
    v = JSON.parse(stored || '{}');
  } catch {
    return {};
  }
  if (!isObject(v)) return {};
  if (part === 'options' && Object.keys(v).length === 1 && isObject(v.options)) return v.options;
  return v;
}

/** Deep equality of JSON values, map key order ignored (canonical forms are compared). */
export function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(canonicalJson(a)) === JSON.stringify(canonicalJson(b));
}

function canonicalJson(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonicalJson);
  if (isObject(v)) return Object.fromEntries(sorted(v).map(([k, x]) => [k, canonicalJson(x)]));
  return v;
}
