// An environment's osquery configuration (issue 22): read whole or by part, replaced by part
// (validated first, all or nothing, audited), and the configuration its agents receive with its
// hash. The parts live in the environment row (options, schedule, packs, decorators, atc, as in
// osctrl), so a change moves the config change counter like any environment change and every
// cache keyed by it (on every replica) reads the new configuration.
import { createHash } from 'node:crypto';
import type { Deps, Caller } from '../../context.js';
import type { EnvironmentRow } from '../../store/schema.js';
import {
  CONFIG_PARTS,
  LogTypes,
  type AgentConfigView,
  type ConfigPart,
  type OsqueryConfigParts,
  type OsqueryConfigView,
} from '../../../api/index.js';
import {
  ConfigError,
  checkAcrossParts,
  isConfigPart,
  pathOf,
  readStoredParts,
  sameJson,
  validatePart,
} from '../../../lib/osquery-config.js';
import { uncheckedSql } from '../../../lib/sql-check.js';
import { badRequest, conflict, invalidTarget } from '../../errors.js';
import { parseOffLoop } from '../../lib/sql-worker.js';
import { chargeSql } from './sql-budget.js';
import { atomically } from '../../store/db.js';
import { writeAudit } from '../audit/audit.js';

interface AgentConfig {
  config: AgentConfigView['config'];
  hash: string;
}

/** The environment's intervals an agent takes from its configuration (issue 26). */
type Intervals = Pick<EnvironmentRow, 'query_interval' | 'log_interval'>;

/**
 * The options agents receive: the stored ones, and the environment's distributed and log
 * intervals (issue 26). osquery applies `distributed_interval` and `logger_tls_period` from its
 * configuration's options at its next config fetch, so `env intervals --query/--log` reaches
 * running agents, not only new flags. (`config_refresh` is a command-line-only flag in osquery:
 * the config interval reaches agents through their flags only.)
 */
export function servedOptions(options: OsqueryConfigParts['options'], env: Intervals): OsqueryConfigParts['options'] {
  return { ...options, distributed_interval: env.query_interval, logger_tls_period: env.log_interval };
}

/** The agent config of the parts (osquery's key names), and the SHA-256 of its JSON. */
function assemble(parts: OsqueryConfigParts, env: Intervals): AgentConfig {
  const config = {
    options: servedOptions(parts.options, env),
    schedule: parts.schedule,
    packs: parts.packs,
    decorators: parts.decorators,
    auto_table_construction: parts.atc,
  } as AgentConfigView['config'];
  return { config, hash: createHash('sha256').update(JSON.stringify(config)).digest('hex') };
}

// Built once per environment and stored text: agents fetch their config every few minutes each,
// and the parts change rarely. Keyed by the texts themselves, so a change on any replica (a new
// row read by the caller) is a new entry; one entry per environment.
const assembled = new Map<number, { key: string; value: AgentConfig }>();

/** What an agent of `env` receives from the config endpoint, and its hash. */
export function agentConfig(env: EnvironmentRow): AgentConfig {
  const key = [...CONFIG_PARTS.map((p) => env[p]), env.query_interval, env.log_interval].join('\u0000');
  const hit = assembled.get(env.id);
  if (hit && hit.key === key) return hit.value;
  const value = assemble(readStoredParts(env), env);
  if (assembled.size >= 10_000) assembled.clear();
  assembled.set(env.id, { key, value });
  return value;
}

export function agentConfigView(env: EnvironmentRow): AgentConfigView {
  const { config, hash } = agentConfig(env);
  return { environment: env.name, hash, config };
}

/** GET .../config and .../config/{part}. */
export function readConfig(env: EnvironmentRow, part?: string): OsqueryConfigView {
  if (part !== undefined && !isConfigPart(part)) throw invalidTarget(part, CONFIG_PARTS);
  const parts = readStoredParts(env);
  const view: OsqueryConfigView = { environment: env.name, hash: agentConfig(env).hash, updated_at: env.updated_at };
  for (const p of part ? [part] : CONFIG_PARTS) (view as Record<string, unknown>)[p] = parts[p];
  return view;
}

export interface PatchOptions {
  dryRun?: boolean;
  /** The hash the caller read (If-Match): refused with 409 when the configuration moved since. */
  ifMatch?: string;
  /** A key the body gave twice (app.ts, uniqueKeys), relative to `prefix`. */
  duplicateKey?: string;
  /** Where the body sits in the configuration: '' for the whole, the part's name for a PUT. */
  prefix?: string;
}

/** What changed in one map-shaped part, for the audit line: +added ~changed -removed names. */
function changesOf(before: Record<string, unknown>, after: Record<string, unknown>): string {
  const out: string[] = [];
  for (const k of Object.keys(after)) if (!(k in before)) out.push(`+${k}`);
  for (const k of Object.keys(after)) if (k in before && !sameJson(before[k], after[k])) out.push(`~${k}`);
  for (const k of Object.keys(before)) if (!(k in after)) out.push(`-${k}`);
  const shown = out.slice(0, 20).join(' ');
  return out.length > 20 ? `${shown} and ${out.length - 20} more` : shown;
}

function badConfig(e: unknown): never {
  if (e instanceof ConfigError) throw badRequest(e.message);
  throw e;
}

/**
 * PATCH .../config (each given part replaces that part whole) and PUT .../config/{part}.
 * Every given part is checked, then the rules across parts on the result; one problem refuses
 * the whole request and nothing is stored. A part whose content is unchanged is not written.
 */
export async function patchConfig(
  deps: Deps,
  caller: Caller,
  env: EnvironmentRow,
  body: Record<string, unknown>,
  o: PatchOptions,
  sourceIp: string,
): Promise<OsqueryConfigView> {
  const prefix = o.prefix ?? '';
  if (o.duplicateKey !== undefined) {
    const at =
      prefix && o.duplicateKey
        ? o.duplicateKey.startsWith('[')
          ? `${prefix}${o.duplicateKey}`
          : `${prefix}.${o.duplicateKey}`
        : prefix || o.duplicateKey;
    throw badRequest(`${at || '(body)'}: duplicate name (given twice)`);
  }
  const unknown = Object.keys(body).find((k) => !isConfigPart(k));
  if (unknown !== undefined)
    throw badRequest(`${pathOf('', unknown).replace(/^\./, '')}: unknown part (valid: ${CONFIG_PARTS.join(', ')})`);
  const given = CONFIG_PARTS.filter((p) => body[p] !== undefined);
  if (given.length === 0) throw badRequest(`nothing to change: give at least one of ${CONFIG_PARTS.join(', ')}`);
  // SQL not seen before is parsed off the event loop first, within the caller's budget
  // (sql-budget.ts): the checks below then read answers.
  const unchecked = uncheckedSql(() => given.forEach((p) => validatePart(p, body[p])));
  await chargeSql(deps, caller, unchecked);
  await parseOffLoop(unchecked);
  const next: Partial<OsqueryConfigParts> = {};
  try {
    for (const p of given) (next as Record<string, unknown>)[p] = validatePart(p, body[p]);
  } catch (e) {
    badConfig(e);
  }

  const apply = async (deps: Deps, row: EnvironmentRow): Promise<OsqueryConfigView> => {
    const before = readStoredParts(row);
    const after: OsqueryConfigParts = { ...before, ...next };
    try {
      checkAcrossParts(after);
    } catch (e) {
      badConfig(e);
    }
    const current = agentConfig(row).hash;
    if (o.ifMatch && o.ifMatch !== current) {
      throw conflict(
        `the configuration of ${row.name} changed since it was read (hash ${o.ifMatch.slice(0, 12)}, now ${current.slice(0, 12)}); read it again`,
      );
    }
    const changed = given.filter((p) => !sameJson(before[p], after[p]) || row[p] !== JSON.stringify(after[p]));
    const contentChanged = given.filter((p) => !sameJson(before[p], after[p]));
    const { hash } = assemble(after, row);
    const view: OsqueryConfigView = {
      environment: row.name,
      hash,
      updated_at: row.updated_at,
      ...after,
      changed: contentChanged,
      dry_run: Boolean(o.dryRun),
    };
    if (o.dryRun || changed.length === 0) return view;
    const ts = deps.now().toISOString();
    const set: Partial<Record<ConfigPart | 'updated_at', string>> = { updated_at: ts };
    for (const p of changed) set[p] = JSON.stringify(after[p]);
    // Written only if the row still holds what was read: two writers never lose each other's change.
    let q = deps.db.updateTable('environments').set(set).where('id', '=', row.id);
    for (const p of CONFIG_PARTS) q = q.where(p, '=', row[p]);
    const r = await q.executeTakeFirst();
    if (Number(r.numUpdatedRows) !== 1) throw conflict(`the configuration of ${row.name} changed while this request ran; try again`);
    if (contentChanged.length > 0) {
      const what = contentChanged
        .map((p) =>
          p === 'decorators' ? p : `${p} (${changesOf(before[p] as Record<string, unknown>, after[p] as Record<string, unknown>)})`,
        )
        .join(', ');
      await writeAudit(deps, {
        line: `osquery configuration of ${row.name} changed: ${what}; config hash ${current.slice(0, 12)} -> ${hash.slice(0, 12)}`,
        logType: LogTypes.environment,
        username: caller.user.username,
        sourceIp,
        env: row,
      });
    }
    view.updated_at = ts;
    return view;
  };

  if (o.dryRun) return apply(deps, env);
  // The write and its audit row commit together; the row is read again inside the transaction.
  return atomically(deps, async (deps) => {
    const row = await deps.db.selectFrom('environments').selectAll().where('id', '=', env.id).executeTakeFirstOrThrow();
    return apply(deps, row);
  });
}

/** PUT .../config/{part}: the body is the part itself. */
export async function replacePart(
  deps: Deps,
  caller: Caller,
  env: EnvironmentRow,
  part: string,
  value: unknown,
  o: PatchOptions,
  sourceIp: string,
): Promise<OsqueryConfigView> {
  if (!isConfigPart(part)) throw invalidTarget(part, CONFIG_PARTS);
  return patchConfig(deps, caller, env, { [part]: value }, { ...o, prefix: part }, sourceIp);
}
