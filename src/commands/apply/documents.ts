// The documents of `fleetctl apply -f` / `diff -f` and of `env config -o yaml` (issue 22):
// one kubectl-style document per environment,
//
//   apiVersion: fleetctl/v1
//   kind: OsqueryConfig
//   metadata: {environment: prod}
//   spec: {options, schedule, packs, decorators, atc}    # the parts, as osquery spells them
//
// read from YAML (several documents per file, separated by ---) or JSON files, checked here
// with the same rules as the server (src/lib/osquery-config.ts) so a bad file is one line before
// any request, and planned against what the server holds: entries are added or changed; with
// --prune, entries of the parts the document names that it does not list are removed.
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { IO } from '../../io.js';
import { readInput } from '../read-input.js';
import { CliError, ExitCode, UsageError } from '../../errors.js';
import { CONFIG_PARTS, type ConfigPart, type OsqueryConfigParts, type OsqueryConfigView } from '../../api/index.js';
import { ConfigError, checkAcrossParts, isConfigPart, sameJson, validatePart } from '../../lib/osquery-config.js';

export const API_VERSION = 'fleetctl/v1';
export const KIND = 'OsqueryConfig';

export interface ConfigDocument {
  apiVersion: string;
  kind: string;
  metadata: { environment: string; hash?: string };
  spec: Partial<OsqueryConfigParts>;
}

/** The document of what the server holds (all parts, or the one asked for). */
export function toDocument(view: OsqueryConfigView, withHash = true): ConfigDocument {
  const spec: Partial<OsqueryConfigParts> = {};
  for (const p of CONFIG_PARTS) if (view[p] !== undefined) (spec as Record<string, unknown>)[p] = view[p];
  return {
    apiVersion: API_VERSION,
    kind: KIND,
    metadata: { environment: view.environment, ...(withHash ? { hash: view.hash } : {}) },
    spec,
  };
}

/** Every part of a view, a part it leaves out read as empty. */
export function partsOf(view: OsqueryConfigView): OsqueryConfigParts {
  return Object.fromEntries(CONFIG_PARTS.map((p) => [p, view[p] ?? {}])) as unknown as OsqueryConfigParts;
}

export interface LoadedDocument {
  /** Where it came from, for messages: `prod.yaml` or `all.yaml (document 2)`. */
  source: string;
  environment: string;
  spec: Partial<OsqueryConfigParts>;
}

/** A document that does not hold: exit 1 (apply refuses it; `diff` maps it to 2). */
export class DocumentError extends CliError {
  constructor(message: string) {
    super(message, ExitCode.error);
  }
}

const FILE_EXT = /\.(ya?ml|json)$/i;

/** The files named by -f: a file, every .yaml/.yml/.json of a directory (sorted; -R: below too), or - for stdin. */
async function expand(path: string, recursive: boolean): Promise<string[]> {
  if (path === '-') return ['-'];
  let s;
  try {
    s = await stat(path);
  } catch (e) {
    throw new UsageError(
      `-f ${path}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file or directory' : (e as Error).message}`,
    );
  }
  if (!s.isDirectory()) return [path];
  const out: string[] = [];
  for (const entry of (await readdir(path, { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const full = join(path, entry.name);
    if (entry.isDirectory() && recursive) out.push(...(await expand(full, true)));
    else if (entry.isFile() && FILE_EXT.test(entry.name)) out.push(full);
  }
  return out;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** One line for a YAML (or JSON) syntax problem: file:line:column: what. */
function syntaxLine(
  name: string,
  text: string,
  e: { code?: string; message: string; linePos?: { line: number; col: number }[]; pos?: [number, number] },
): string {
  const at = e.linePos?.[0];
  const where = at ? `${name}:${at.line}:${at.col}` : name;
  if (e.code === 'DUPLICATE_KEY' && e.pos) {
    const key = /^["']?([^"':\n]*)/.exec(text.slice(e.pos[0]))?.[1]?.trim();
    return `${where}: duplicate name${key ? ` "${key}"` : ''}: a key given twice in one map (YAML keeps one of them, so nothing is applied)`;
  }
  return `${where}: ${e.message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '')}`;
}

/** The one YAML (or JSON) value of `text` (`env config --set`): problems as parseDocuments words them. */
export async function parseYaml(name: string, text: string): Promise<unknown> {
  const YAML = await import('yaml');
  const doc = YAML.parseDocument(text, { uniqueKeys: true, prettyErrors: true });
  const err = doc.errors[0];
  if (err) throw new DocumentError(syntaxLine(name, text, err));
  return doc.toJS({ maxAliasCount: 100 });
}

/** Parses and checks one file's documents (YAML is a superset of JSON: one parser for both). */
export async function parseDocuments(name: string, text: string): Promise<LoadedDocument[]> {
  const YAML = await import('yaml');
  const docs = YAML.parseAllDocuments(text, { uniqueKeys: true, prettyErrors: true });
  const list = Array.isArray(docs) ? docs : [docs];
  const out: LoadedDocument[] = [];
  let n = 0;
  for (const doc of list) {
    const err = doc.errors[0];
    if (err) throw new DocumentError(syntaxLine(name, text, err));
    const value: unknown = doc.toJS({ maxAliasCount: 100 });
    if (value === null || value === undefined) continue; // an empty document (a trailing ---)
    n++;
    const source = list.length > 1 ? `${name} (document ${n})` : name;
    out.push(checkDocument(source, value));
  }
  return out;
}

function checkDocument(source: string, v: unknown): LoadedDocument {
  const fail = (msg: string): never => {
    throw new DocumentError(`${source}: ${msg}`);
  };
  if (!isObject(v))
    return fail(`a document must be a map with apiVersion, kind, metadata and spec, not ${Array.isArray(v) ? 'a list' : typeof v}`);
  for (const k of Object.keys(v))
    if (!['apiVersion', 'kind', 'metadata', 'spec'].includes(k)) fail(`${k}: unknown field (valid: apiVersion, kind, metadata, spec)`);
  if (v.apiVersion !== API_VERSION)
    fail(`apiVersion: must be ${API_VERSION}${v.apiVersion === undefined ? '' : `, not ${JSON.stringify(v.apiVersion)}`}`);
  if (v.kind !== KIND) fail(`kind: must be ${KIND}${v.kind === undefined ? '' : `, not ${JSON.stringify(v.kind)}`}`);
  if (!isObject(v.metadata)) return fail('metadata: must be a map with the environment (metadata: {environment: prod})');
  const env = v.metadata.environment;
  if (typeof env !== 'string' || env.trim() === '') return fail("metadata.environment: required (the environment's name or UUID)");
  for (const k of Object.keys(v.metadata))
    if (k !== 'environment' && k !== 'hash') fail(`metadata.${k}: unknown field (valid: environment, hash)`);
  if (!isObject(v.spec)) return fail('spec: must be a map of the parts to set (options, schedule, packs, decorators, atc)');
  const spec: Partial<OsqueryConfigParts> = {};
  try {
    for (const [k, part] of Object.entries(v.spec)) {
      if (!isConfigPart(k)) throw new ConfigError(k, `unknown part (valid: ${CONFIG_PARTS.join(', ')})`);
      // An empty part written as `schedule:` (null in YAML) means none.
      (spec as Record<string, unknown>)[k] = validatePart(k, part === null ? {} : part);
    }
  } catch (e) {
    if (e instanceof ConfigError) fail(`spec.${e.message}`);
    throw e;
  }
  return { source, environment: env, spec };
}

/** Every document of every -f, checked; an environment named by two documents is refused. */
export async function loadDocuments(io: IO, paths: string[], recursive = false): Promise<LoadedDocument[]> {
  const files: string[] = [];
  for (const p of paths) files.push(...(await expand(p, recursive)));
  if (files.length === 0) throw new UsageError(`-f ${paths.join(', ')}: no .yaml, .yml or .json files there`);
  const docs: LoadedDocument[] = [];
  for (const f of files) docs.push(...(await parseDocuments(f === '-' ? '(stdin)' : f, await readInput(io, f, '-f'))));
  if (docs.length === 0) throw new UsageError(`-f ${paths.join(', ')}: no documents`);
  const seen = new Map<string, string>();
  for (const d of docs) {
    const first = seen.get(d.environment);
    if (first)
      throw new DocumentError(`${d.source}: environment ${d.environment} is already configured by ${first}; one document per environment`);
    seen.set(d.environment, d.source);
  }
  return docs;
}

/** Map-shaped parts, whose entries are added, changed and (with --prune) removed one by one. */
const ENTRY_PARTS = ['options', 'schedule', 'packs', 'atc'] as const satisfies readonly ConfigPart[];

export interface EntryChange {
  part: ConfigPart;
  /** The entry's name, or '' for a part replaced whole (decorators). */
  name: string;
  op: '+' | '~' | '-';
}

export interface Plan {
  /** The parts to send (their whole new content), only those that change. */
  parts: Partial<OsqueryConfigParts>;
  changes: EntryChange[];
  /** What the configuration becomes (every part). */
  after: OsqueryConfigParts;
  /** Entries on the server that the document does not list and that stay (without --prune). */
  kept: EntryChange[];
}

/** What applying `spec` to `current` does. Entries listed win; with prune, unlisted ones go. */
export function plan(current: OsqueryConfigParts, spec: Partial<OsqueryConfigParts>, prune: boolean): Plan {
  const after: OsqueryConfigParts = { ...current };
  const parts: Partial<OsqueryConfigParts> = {};
  const changes: EntryChange[] = [];
  const kept: EntryChange[] = [];
  for (const p of CONFIG_PARTS) {
    const want = spec[p];
    if (want === undefined) continue;
    if (!(ENTRY_PARTS as readonly string[]).includes(p)) {
      if (!sameJson(current[p], want)) {
        (after as unknown as Record<string, unknown>)[p] = want;
        changes.push({ part: p, name: '', op: '~' });
      }
      continue;
    }
    const cur = current[p] as Record<string, unknown>;
    const next: Record<string, unknown> = prune ? {} : { ...cur };
    for (const [k, v] of Object.entries(want as Record<string, unknown>)) {
      if (!(k in cur)) changes.push({ part: p, name: k, op: '+' });
      else if (!sameJson(cur[k], v)) changes.push({ part: p, name: k, op: '~' });
      next[k] = v;
    }
    for (const k of Object.keys(cur)) {
      if (k in (want as Record<string, unknown>)) continue;
      (prune ? changes : kept).push({ part: p, name: k, op: '-' });
    }
    // Canonical order (the server's): names sorted.
    (after as unknown as Record<string, unknown>)[p] = Object.fromEntries(
      Object.entries(next).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
    );
  }
  for (const c of changes) (parts as Record<string, unknown>)[c.part] = after[c.part];
  try {
    checkAcrossParts(after);
  } catch (e) {
    if (e instanceof ConfigError) throw new DocumentError(`spec.${e.message}`);
    throw e;
  }
  return { parts, changes, after, kept };
}

/** YAML of a document, as `env config -o yaml` prints it (stable: same content, same text). */
export async function documentYaml(doc: ConfigDocument): Promise<string> {
  const { loadYaml } = await import('../../output/writer.js');
  return (await loadYaml())(doc);
}

/**
 * A unified diff (as `kubectl diff` and `git diff` show) of the environment's configuration
 * before and after, as YAML documents; colored at a terminal.
 */
export async function renderDiff(
  environment: string,
  before: OsqueryConfigParts,
  after: OsqueryConfigParts,
  color: boolean,
): Promise<string> {
  const { createTwoFilesPatch } = await import('diff');
  const doc = (parts: OsqueryConfigParts) => documentYaml({ apiVersion: API_VERSION, kind: KIND, metadata: { environment }, spec: parts });
  const patch = createTwoFilesPatch(
    `${environment} (server)`,
    `${environment} (files)`,
    await doc(before),
    await doc(after),
    undefined,
    undefined,
    { context: 3 },
  );
  const lines = patch.split('\n').filter((l) => !l.startsWith('====') && l !== '\\ No newline at end of file');
  if (!color) return `${lines.join('\n').trimEnd()}\n`;
  const paint = (l: string) =>
    l.startsWith('+++') || l.startsWith('---')
      ? `\x1b[1m${l}\x1b[0m`
      : l.startsWith('+')
        ? `\x1b[32m${l}\x1b[0m`
        : l.startsWith('-')
          ? `\x1b[31m${l}\x1b[0m`
          : l.startsWith('@@')
            ? `\x1b[36m${l}\x1b[0m`
            : l;
  return `${lines.map(paint).join('\n').trimEnd()}\n`;
}

/** "schedule +2 ~1 -1, packs +1" */
export function summary(changes: EntryChange[]): string {
  const by = new Map<ConfigPart, Record<'+' | '~' | '-', number>>();
  for (const c of changes) {
    const m = by.get(c.part) ?? { '+': 0, '~': 0, '-': 0 };
    m[c.op]++;
    by.set(c.part, m);
  }
  return [...by]
    .map(([p, m]) =>
      p === 'decorators'
        ? 'decorators replaced'
        : `${p} ${(['+', '~', '-'] as const)
            .filter((o) => m[o] > 0)
            .map((o) => `${o}${m[o]}`)
            .join(' ')}`,
    )
    .join(', ');
}
