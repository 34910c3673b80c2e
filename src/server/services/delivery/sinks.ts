// Log sinks (4.18 clone, and the list/create/delete endpoints the contract adds). A sink's
// configuration is stored as JSON text and travels as its UTF-8 bytes (api-spec.md 2.4). Issue
// 28: a type this server cannot deliver is refused, each type's config is checked (400 naming
// the field, nothing stored), secrets never leave in a read, and each sink has its state row
// (cursor in the spool) from the transaction that creates it.
import { atomically, inTransaction } from '../../store/db.js';
import type { Caller, Deps } from '../../context.js';
import { LogTypes, SinkSources, SinkTypes, type LogSink, type SinkCloneBody, type SinkCreateBody } from '../../../api/index.js';
import { badRequest, conflict, notFound } from '../../errors.js';
import { writeAudit } from '../audit/audit.js';
import { destinationOf, unsupportedType } from './destinations/index.js';
import { checkConfig, ConfigError } from './sink-config.js';
import { createSinkState } from './sink-state.js';
import { toSink, withStates } from './sink-view.js';

export { toSink };

/** Sink changes are environment configuration: audit log_type 7 (environment). */
const AUDIT_TYPE = LogTypes.environment;

interface EnvRef {
  id: number;
  uuid: string;
  name: string;
}
const GLOBAL: EnvRef = { id: 0, uuid: '', name: 'global' };

/** 0 is the global scope; any other id must be an existing environment. */
async function envById(deps: Deps, id: number): Promise<EnvRef | undefined> {
  if (id === 0) return GLOBAL;
  return deps.db.selectFrom('environments').select(['id', 'uuid', 'name']).where('id', '=', id).executeTakeFirst();
}

async function sinksOf(deps: Deps, envId: number): Promise<LogSink[]> {
  const rows = await deps.db
    .selectFrom('log_sinks')
    .selectAll()
    .where('environment_id', '=', envId)
    .orderBy('sort_order')
    .orderBy('id')
    .execute();
  return withStates(deps.db, rows);
}

export async function listSinks(deps: Deps, environmentId: string | undefined): Promise<LogSink[]> {
  if (environmentId === undefined || environmentId === '') {
    const rows = await deps.db.selectFrom('log_sinks').selectAll().orderBy('environment_id').orderBy('sort_order').orderBy('id').execute();
    return withStates(deps.db, rows);
  }
  if (!/^\d+$/.test(environmentId.trim())) throw badRequest(`environment_id must be a non-negative integer, got "${environmentId}"`);
  const id = Number(environmentId);
  if (!(await envById(deps, id))) throw notFound(`environment id ${id} not found`);
  return sinksOf(deps, id);
}

/** `config` as sent: a JSON object, or the UTF-8 bytes of one. Returns the JSON text to store. */
export function configText(config: SinkCreateBody['config']): string {
  if (config === undefined) return '{}';
  if (!Array.isArray(config)) return JSON.stringify(config);
  if (!config.every((b) => Number.isInteger(b) && b >= 0 && b <= 255)) throw badRequest('config bytes must be integers from 0 to 255');
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(Uint8Array.from(config));
  } catch {
    throw badRequest('config bytes are not valid UTF-8');
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw badRequest('config bytes do not decode to JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw badRequest('config must be a JSON object');
  return text;
}

export function oneOf(name: string, value: string, allowed: readonly string[]): string {
  if (!allowed.includes(value)) throw badRequest(`invalid ${name} "${value}"; valid values: ${allowed.join(', ')}`);
  return value;
}

/**
 * A config for `type` as it will be stored (its JSON text), checked by the type's module: 400
 * naming the field, or for a type without a module the one-line refusal.
 */
export function checkedConfig(deps: Deps, type: string, text: string): string {
  const dest = destinationOf(type);
  if (!dest) throw badRequest(unsupportedType(type));
  try {
    checkConfig(dest, JSON.parse(text), { sinkDir: deps.config.sinkDir });
  } catch (e) {
    if (e instanceof ConfigError) throw badRequest(e.message);
    throw e;
  }
  return text;
}

export async function createSink(deps: Deps, caller: Caller, body: SinkCreateBody, sourceIp: string): Promise<LogSink> {
  // The change and its audit row commit together (store/db.ts, atomically).
  return atomically(deps, async (deps) => {
    const name = body.name.trim();
    if (!name) throw badRequest('name is required');
    const type = oneOf('type', body.type, SinkTypes);
    const source = oneOf('source', body.source, SinkSources);
    if (body.order !== undefined && body.order < 0) throw badRequest('order must be 0 or more');
    // File sinks write inside --sink-dir only (issue 18): the file module's check refuses a path
    // elsewhere (a shell start-up file, the database's directory), and its open() again.
    const config = checkedConfig(deps, type, configText(body.config));
    const env = await envById(deps, body.environment_id);
    if (!env) throw badRequest(`environment_id ${body.environment_id} is not an environment (0 means global)`);
    const ts = deps.now().toISOString();
    const row = await inTransaction(deps.db, async (trx) => {
      const clash = await trx
        .selectFrom('log_sinks')
        .select('id')
        .where('environment_id', '=', env.id)
        .where('name', '=', name)
        .executeTakeFirst();
      if (clash) throw conflict(`a log sink named "${name}" already exists in ${env.name}`);
      let order = body.order;
      if (order === undefined) {
        // Appended after the last sink of that scope.
        const max = await trx
          .selectFrom('log_sinks')
          .select((eb) => eb.fn.max('sort_order').as('m'))
          .where('environment_id', '=', env.id)
          .executeTakeFirst();
        order = max?.m === null || max?.m === undefined ? 0 : Number(max.m) + 1;
      }
      const created = await trx
        .insertInto('log_sinks')
        .values({
          name,
          type,
          source,
          info: body.info ?? '',
          enabled: body.enabled === false ? 0 : 1,
          environment_id: env.id,
          sort_order: order,
          config,
          bytes_sent: 0,
          exports_count: 0,
          created_at: ts,
          updated_at: ts,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      // It delivers what is spooled from now on.
      await createSinkState(trx, created);
      return created;
    });
    await writeAudit(deps, {
      line: `log sink ${row.id} "${name}" (${type}, ${source}) created in ${env.name}`,
      logType: AUDIT_TYPE,
      username: caller.user.username,
      sourceIp,
      env: env.id === 0 ? null : env,
    });
    return (await withStates(deps.db, [row]))[0];
  });
}

export async function deleteSink(deps: Deps, caller: Caller, idRaw: string, sourceIp: string): Promise<string> {
  // The change and its audit row commit together (store/db.ts, atomically).
  return atomically(deps, async (deps) => {
    if (!/^\d+$/.test(idRaw)) throw badRequest(`sink id must be a positive integer, got "${idRaw}"`);
    const id = Number(idRaw);
    const row = await deps.db.selectFrom('log_sinks').selectAll().where('id', '=', id).executeTakeFirst();
    if (!row) throw notFound(`log sink ${id} not found`);
    await deps.db.deleteFrom('log_sinks').where('id', '=', id).execute();
    await deps.db.deleteFrom('sink_state').where('sink_id', '=', id).execute();
    const env = (await envById(deps, row.environment_id)) ?? GLOBAL;
    await writeAudit(deps, {
      line: `log sink ${id} "${row.name}" deleted from ${env.name}`,
      logType: AUDIT_TYPE,
      username: caller.user.username,
      sourceIp,
      env: env.id === 0 ? null : env,
    });
    return `log sink ${id} (${row.name}) deleted`;
  });
}

/**
 * 4.18. Every check that can refuse happens inside the transaction, so a refused clone (409)
 * and a failed one change nothing, and an overwrite is all-or-nothing.
 */
export async function cloneSinks(deps: Deps, caller: Caller, body: SinkCloneBody, sourceIp: string): Promise<LogSink[]> {
  // The change and its audit row commit together (store/db.ts, atomically).
  return atomically(deps, async (deps) => {
    const { source_environment_id: from, target_environment_id: to } = body;
    if (from === to) throw badRequest('source and target environment are the same');
    const [source, target] = await Promise.all([envById(deps, from), envById(deps, to)]);
    if (!source) throw badRequest(`source_environment_id ${from} is not an environment (0 means global)`);
    if (!target) throw badRequest(`target_environment_id ${to} is not an environment (0 means global)`);
    const ts = deps.now().toISOString();
    const replaced = await inTransaction(deps.db, async (trx) => {
      const sources = await trx
        .selectFrom('log_sinks')
        .selectAll()
        .where('environment_id', '=', source.id)
        .orderBy('sort_order')
        .orderBy('id')
        .execute();
      // Cloning nothing over a target would only wipe it: almost surely a wrong id.
      if (sources.length === 0) throw badRequest(`${source.name} has no log sinks to clone`);
      const existing = await trx
        .selectFrom('log_sinks')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('environment_id', '=', target.id)
        .executeTakeFirst();
      const n = Number(existing?.n ?? 0);
      if (n > 0 && !body.overwrite) {
        throw conflict(`${target.name} already has ${n} log sink${n === 1 ? '' : 's'}; set overwrite to replace them`);
      }
      // An enabled sink of a type this server cannot deliver is not created here either.
      const undeliverable = sources.find((s) => s.enabled && !destinationOf(s.type));
      if (undeliverable)
        throw badRequest(`log sink "${undeliverable.name}": ${unsupportedType(undeliverable.type)}; disable it to clone it`);
      const old = await trx.selectFrom('log_sinks').select('id').where('environment_id', '=', target.id).execute();
      if (old.length)
        await trx
          .deleteFrom('sink_state')
          .where(
            'sink_id',
            'in',
            old.map((o) => o.id),
          )
          .execute();
      await trx.deleteFrom('log_sinks').where('environment_id', '=', target.id).execute();
      for (const s of sources) {
        const created = await trx
          .insertInto('log_sinks')
          .values({
            name: s.name,
            type: s.type,
            source: s.source,
            info: s.info,
            enabled: s.enabled,
            environment_id: target.id,
            sort_order: s.sort_order,
            config: s.config,
            bytes_sent: 0,
            exports_count: 0,
            created_at: ts,
            updated_at: ts,
          })
          .returningAll()
          .executeTakeFirstOrThrow();
        await createSinkState(trx, created);
      }
      return n;
    });
    await writeAudit(deps, {
      line: `log sinks of ${source.name} cloned to ${target.name}${replaced ? ` (replaced ${replaced})` : ''}`,
      logType: AUDIT_TYPE,
      username: caller.user.username,
      sourceIp,
      env: target.id === 0 ? null : target,
    });
    return sinksOf(deps, target.id);
  });
}
