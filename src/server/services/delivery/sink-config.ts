// A sink's configuration (issue 28): checked against its type's schema when a sink is added or
// changed (400 naming the field, nothing stored), its secrets kept out of every read, and
// resolved from the server's environment or a file when the sink is opened.
//
// Secrets are dotted paths a destination declares (`token`, `sasl.password`, `headers.*`). Each
// may be given as the value, as `<key>_env` (an environment variable of the server) or as
// `<key>_file` (a file on the server), beside the key: `sasl: {password_env: "X"}`; for a map of
// secrets (`headers.*`) the variants are maps beside it: `headers_env: {Authorization: "X"}`.
import { readFileSync, statSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { Value } from '@sinclair/typebox/value';
import type { Destination } from './sink.js';
import { MAX_IN_FLIGHT } from './batching.js';
import { REDACTED_SECRET, SinkSecretKeys } from '../../../api/index.js';

/** What every read shows in place of a secret's value; sent back by an edit, it keeps the stored one. */
export const REDACTED = REDACTED_SECRET;
/** Secret keys redacted whatever the type (also for types this server cannot deliver). */
const ALWAYS_SECRET = [...SinkSecretKeys, 'sasl.password', 'headers.*'];
/** Largest secret file. */
const MAX_SECRET_FILE = 64 * 1024;

/** A config refused: 400, naming the field (`config.url: ...`). */
export class ConfigError extends Error {}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Where a secret path lives: the object holding it and its key ('*': every key of a map). */
interface Slot {
  parent: string[];
  key: string;
}
function slot(path: string): Slot {
  const parts = path.split('.');
  if (parts[parts.length - 1] === '*') return { parent: parts.slice(0, -2), key: parts[parts.length - 2] + '.*' };
  return { parent: parts.slice(0, -1), key: parts[parts.length - 1] };
}
function objectAt(config: Obj, parent: string[]): Obj | undefined {
  let o: unknown = config;
  for (const p of parent) o = isObj(o) ? o[p] : undefined;
  return isObj(o) ? o : undefined;
}
const field = (parent: string[], key: string) => [...parent, key].join('.');

/** Every secret path of a type (its own, or the usual names when it has no module). */
function secretsOf(dest: Destination | undefined): readonly string[] {
  return dest
    ? [...new Set([...dest.secrets, ...ALWAYS_SECRET.filter((p) => !p.includes('.') || dest.secrets.includes(p))])]
    : ALWAYS_SECRET;
}

/** Each (holder, key, value) of the literal secret values in a config. */
function* literalSecrets(config: Obj, paths: readonly string[]): Generator<{ holder: Obj; key: string; path: string }> {
  for (const p of paths) {
    const s = slot(p);
    const o = objectAt(config, s.parent);
    if (!o) continue;
    if (s.key.endsWith('.*')) {
      const map = o[s.key.slice(0, -2)];
      if (isObj(map)) for (const k of Object.keys(map)) yield { holder: map, key: k, path: field(s.parent, `${s.key.slice(0, -2)}.${k}`) };
    } else if (s.key in o) yield { holder: o, key: s.key, path: field(s.parent, s.key) };
  }
}

/** The config as every read shows it: secret values replaced by REDACTED (their _env/_file names stay). */
export function redactConfig(text: string, dest: Destination | undefined): string {
  let config: unknown;
  try {
    config = JSON.parse(text);
  } catch {
    return '{}';
  }
  if (!isObj(config)) return '{}';
  for (const s of literalSecrets(config, secretsOf(dest))) s.holder[s.key] = REDACTED;
  return JSON.stringify(config);
}

/** An edit's config with each REDACTED put back to the stored value (or a 400 when there is none). */
export function restoreRedacted(config: Obj, storedText: string, dest: Destination | undefined): Obj {
  let stored: Obj = {};
  try {
    const v = JSON.parse(storedText) as unknown;
    if (isObj(v)) stored = v;
  } catch {
    /* nothing to restore from */
  }
  const out = structuredClone(config);
  for (const s of literalSecrets(out, secretsOf(dest))) {
    if (s.holder[s.key] !== REDACTED) continue;
    const parts = s.path.split('.');
    let o: unknown = stored;
    for (const p of parts) o = isObj(o) ? o[p] : undefined;
    if (o === undefined)
      throw new ConfigError(`config.${s.path}: "${REDACTED}" stands for the stored secret, and this sink has none there`);
    s.holder[s.key] = o;
  }
  return out;
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Checks one `_env` / `_file` value; returns the problem or undefined. */
function variantProblem(kind: 'env' | 'file', value: unknown, env: NodeJS.ProcessEnv): string | undefined {
  if (typeof value !== 'string' || value === '')
    return kind === 'env' ? 'expected the name of an environment variable' : 'expected an absolute file path';
  if (kind === 'env') {
    if (!ENV_NAME.test(value)) return `"${value}" is not an environment variable name`;
    if (/^FLEETCTL_/i.test(value)) return `${value} is one of the server's own settings, not a sink secret`;
    if (env[value] === undefined) return `${value} is not set in the server's environment`;
    return undefined;
  }
  if (!isAbsolute(value)) return `"${value}" is not an absolute path`;
  try {
    const st = statSync(value);
    if (!st.isFile()) return `${value} is not a regular file`;
    if (st.size > MAX_SECRET_FILE) return `${value} is larger than ${MAX_SECRET_FILE} bytes`;
  } catch (e) {
    return `${value} cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`;
  }
  return undefined;
}

/**
 * Takes the `_env` / `_file` variants out of a copy of `config` and puts a stand-in value at each
 * secret key given by one (so the schema sees the key as present). `resolve` turns a variant into
 * the real value (opening a sink); without it they are only checked.
 */
function applyVariants(config: Obj, dest: Destination, env: NodeJS.ProcessEnv, resolve: boolean): Obj {
  const out = structuredClone(config);
  for (const p of dest.secrets) {
    const s = slot(p);
    const o = objectAt(out, s.parent);
    if (!o) continue;
    const isMap = s.key.endsWith('.*');
    const base = isMap ? s.key.slice(0, -2) : s.key;
    for (const kind of ['env', 'file'] as const) {
      const vkey = `${base}_${kind}`;
      if (!(vkey in o)) continue;
      const given = o[vkey];
      delete o[vkey];
      const entries: [string | undefined, unknown][] = isMap
        ? isObj(given)
          ? Object.entries(given)
          : (() => {
              throw new ConfigError(
                `config.${field(s.parent, vkey)}: expected an object of header name to ${kind === 'env' ? 'variable name' : 'file path'}`,
              );
            })()
        : [[undefined, given]];
      for (const [k, v] of entries) {
        const where = field(s.parent, k === undefined ? vkey : `${vkey}.${k}`);
        const problem = variantProblem(kind, v, env);
        if (problem) throw new ConfigError(`config.${where}: ${problem}`);
        const holder = isMap ? ((o[base] as Obj | undefined) ?? (o[base] = {})) : o;
        const key = k ?? base;
        if (!isObj(holder)) throw new ConfigError(`config.${field(s.parent, base)}: expected an object`);
        if (key in holder)
          throw new ConfigError(
            `config.${field(s.parent, isMap ? `${base}.${key}` : base)}: give one of ${base}, ${base}_env, ${base}_file`,
          );
        holder[key] = resolve ? readVariant(kind, v as string, env) : `(${kind})`;
      }
    }
  }
  return out;
}

function readVariant(kind: 'env' | 'file', value: string, env: NodeJS.ProcessEnv): string {
  if (kind === 'env') {
    const v = env[value];
    if (v === undefined) throw new Error(`the environment variable ${value} is not set`);
    return v;
  }
  return readFileSync(value, 'utf8').replace(/\r?\n$/, '');
}

/** The first schema error as `config.<path>: <message>`. */
function schemaError(dest: Destination, config: Obj): string | undefined {
  const first = Value.Errors(dest.schema, config).First();
  if (!first) return undefined;
  const path = first.path
    .split('/')
    .filter(Boolean)
    .map((p, i) => (/^\d+$/.test(p) ? `[${p}]` : i === 0 ? p : `.${p}`))
    .join('');
  const known = Object.keys(dest.schema.properties);
  if (first.message === 'Unexpected property') {
    return `config.${path}: unknown key for a ${dest.type} sink; its keys are ${known.length ? known.join(', ') : 'none'}`;
  }
  if (first.message === 'Expected required property') return `config.${path}: required for a ${dest.type} sink`;
  return `config.${path}: ${first.message.replace(/^Expected/, 'expected')}`;
}

/**
 * Checks a config for `dest` (throws ConfigError naming the field): secrets given once, their
 * variables set and files readable, the schema, then the type's own checks.
 */
export function checkConfig(dest: Destination, config: unknown, ctx: { sinkDir: string; env?: NodeJS.ProcessEnv }): void {
  if (!isObj(config)) throw new ConfigError('config must be a JSON object');
  const { in_flight: inFlight, ...view } = applyVariants(config, dest, ctx.env ?? process.env, false);
  const err = schemaError(dest, view);
  if (err) throw new ConfigError(err);
  const problem = dest.check?.(view, { sinkDir: ctx.sinkDir });
  if (problem) throw new ConfigError(`config.${problem.field}: ${problem.message}`);
  if (inFlight !== undefined) {
    // Every type's key (the runner's, batching.ts): batches out past the cursor at once.
    const bound = Math.min(dest.maxInFlight?.(view) ?? MAX_IN_FLIGHT, MAX_IN_FLIGHT);
    if (typeof inFlight !== 'number' || !Number.isInteger(inFlight) || inFlight < 1 || inFlight > bound)
      throw new ConfigError(
        bound === 1
          ? `config.in_flight: a ${dest.type} sink${dest.type === 'logstash' || dest.type === 'graylog' ? ' with this url' : ''} sends one batch at a time (only 1)`
          : `config.in_flight: expected an integer from 1 to ${bound}`,
      );
  }
}

/** The config a module opens with: variants read from the environment or their files. */
export function resolveConfig(dest: Destination, text: string, env: NodeJS.ProcessEnv = process.env): Obj {
  const config = JSON.parse(text || '{}') as unknown;
  if (!isObj(config)) throw new Error('the sink config is not a JSON object');
  // in_flight is the runner's (batching.ts), not the module's.
  const { in_flight: _inFlight, ...own } = applyVariants(config, dest, env, true);
  return own;
}

/** Names of the top-level keys that differ between two configs (audit lines name keys, never values). */
export function changedKeys(before: string, after: string): string[] {
  const parse = (t: string): Obj => {
    try {
      const v = JSON.parse(t) as unknown;
      return isObj(v) ? v : {};
    } catch {
      return {};
    }
  };
  const a = parse(before);
  const b = parse(after);
  return [...new Set([...Object.keys(a), ...Object.keys(b)])].filter((k) => JSON.stringify(a[k]) !== JSON.stringify(b[k])).sort();
}
