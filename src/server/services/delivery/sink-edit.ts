// Changing a sink and trying it (issue 28): PATCH /api/v1/log-sinks/{id} and
// POST /api/v1/log-sinks/{id}/test, super-admin.
// - An edit is checked as a creation is (the type's module, 400 naming the field, nothing
//   stored); a config sent back with "<redacted>" keeps the stored secret there; enabling a sink
//   of a type this server cannot deliver is refused. Enabling, and changing the source, move the
//   cursor to the head of the stream (what was spooled while it was off is not its); any other
//   change keeps the cursor and backlog, and a runner retries at once with the new config.
// - The audit line names what changed, never a config value (secrets and URLs stay out of it).
// - A test sends one test entry through the type's module, outside the spool, and says what
//   the destination answered.
import { atomically, inTransaction } from '../../store/db.js';
import type { Caller, Deps } from '../../context.js';
import type { LogSinkRow } from '../../store/schema.js';
import { LogTypes, SinkSources, type LogSink, type SinkEditBody, type SinkTestResult } from '../../../api/index.js';
import { badRequest, conflict, notFound } from '../../errors.js';
import { writeAudit } from '../audit/audit.js';
import { destinationOf, unsupportedType } from './destinations/index.js';
import { changedKeys, ConfigError, resolveConfig, restoreRedacted } from './sink-config.js';
import { resetSinkCursor } from './sink-state.js';
import { withStates } from './sink-view.js';
import { checkedConfig, configText, oneOf } from './sinks.js';
import type { SinkEntry } from './sink.js';

const TEST_TIMEOUT_MS = 30_000;

async function sinkById(deps: Deps, idRaw: string): Promise<LogSinkRow> {
  if (!/^\d+$/.test(idRaw)) throw badRequest(`sink id must be a positive integer, got "${idRaw}"`);
  const row = await deps.db.selectFrom('log_sinks').selectAll().where('id', '=', Number(idRaw)).executeTakeFirst();
  if (!row) throw notFound(`log sink ${idRaw} not found`);
  return row;
}

async function scopeOf(deps: Deps, envId: number): Promise<{ id: number; uuid: string; name: string } | null> {
  if (envId === 0) return null;
  return (await deps.db.selectFrom('environments').select(['id', 'uuid', 'name']).where('id', '=', envId).executeTakeFirst()) ?? null;
}

export async function editSink(deps: Deps, caller: Caller, idRaw: string, body: SinkEditBody, sourceIp: string): Promise<LogSink> {
  return atomically(deps, async (deps) => {
    const old = await sinkById(deps, idRaw);
    const next = { ...old };
    const changes: string[] = [];
    if (body.name !== undefined) {
      const name = body.name.trim();
      if (!name) throw badRequest('name must not be empty');
      if (name !== old.name) {
        const clash = await deps.db
          .selectFrom('log_sinks')
          .select('id')
          .where('environment_id', '=', old.environment_id)
          .where('name', '=', name)
          .executeTakeFirst();
        if (clash) throw conflict(`a log sink named "${name}" already exists in that scope`);
        changes.push(`name "${old.name}" -> "${name}"`);
        next.name = name;
      }
    }
    if (body.info !== undefined && body.info !== old.info) {
      changes.push('info');
      next.info = body.info;
    }
    if (body.order !== undefined && body.order !== old.sort_order) {
      if (body.order < 0) throw badRequest('order must be 0 or more');
      changes.push(`order ${old.sort_order} -> ${body.order}`);
      next.sort_order = body.order;
    }
    if (body.source !== undefined && body.source !== old.source) {
      next.source = oneOf('source', body.source, SinkSources);
      changes.push(`source ${old.source} -> ${next.source}`);
    }
    if (body.enabled !== undefined && Number(body.enabled) !== old.enabled) {
      next.enabled = body.enabled ? 1 : 0;
      changes.push(body.enabled ? 'enabled' : 'disabled');
    }
    if (body.config !== undefined) {
      let config: Record<string, unknown>;
      try {
        config = restoreRedacted(JSON.parse(configText(body.config)) as Record<string, unknown>, old.config, destinationOf(old.type));
      } catch (e) {
        if (e instanceof ConfigError) throw badRequest(e.message);
        throw e;
      }
      const text = JSON.stringify(config);
      const keys = changedKeys(old.config, text);
      if (keys.length) {
        next.config = text;
        changes.push(`config (${keys.join(', ')})`);
      }
    }
    // A type without a module cannot be enabled, nor its config changed into something unchecked.
    if (next.enabled && !destinationOf(old.type)) throw badRequest(unsupportedType(old.type));
    if (next.config !== old.config || (next.enabled && !old.enabled)) checkedConfig(deps, old.type, next.config);
    if (changes.length === 0) return (await withStates(deps.db, [old]))[0];
    next.updated_at = deps.now().toISOString();
    const row = await inTransaction(deps.db, async (trx) => {
      const { id, ...values } = next;
      const updated = await trx.updateTable('log_sinks').set(values).where('id', '=', id).returningAll().executeTakeFirstOrThrow();
      if ((next.enabled && !old.enabled) || next.source !== old.source) await resetSinkCursor(trx, updated);
      return updated;
    });
    await writeAudit(deps, {
      line: `log sink ${row.id} "${row.name}" (${row.type}) changed: ${changes.join('; ')}`,
      logType: LogTypes.environment,
      username: caller.user.username,
      sourceIp,
      env: await scopeOf(deps, row.environment_id),
    });
    return (await withStates(deps.db, [row]))[0];
  });
}

/** The one test entry: a status-like line (or a result of query fleetctl_sink_test) from host fleetctl-sink-test. */
function testEntry(sink: LogSinkRow, envName: string, now: Date): SinkEntry {
  const unixTime = Math.floor(now.getTime() / 1000);
  const logType = sink.source === 'status' || sink.source === 'result' || sink.source === 'query' ? sink.source : 'status';
  const line =
    logType === 'status'
      ? JSON.stringify({
          hostIdentifier: 'fleetctl-sink-test',
          calendarTime: now.toUTCString(),
          unixTime: String(unixTime),
          severity: '0',
          filename: 'fleetctl',
          line: '0',
          message: `fleetctl sinks test: log sink "${sink.name}"`,
          version: '',
        })
      : JSON.stringify({
          name: 'fleetctl_sink_test',
          hostIdentifier: 'fleetctl-sink-test',
          calendarTime: now.toUTCString(),
          unixTime,
          epoch: 0,
          counter: 0,
          numerics: false,
          columns: { message: `fleetctl sinks test: log sink "${sink.name}"` },
          action: 'added',
        });
  return {
    id: 0,
    environment: envName,
    environmentId: sink.environment_id,
    nodeId: 0,
    hostIdentifier: 'fleetctl-sink-test',
    hostname: 'fleetctl-sink-test',
    logType,
    ...(logType === 'status' ? { severity: 0 } : { name: 'fleetctl_sink_test' }),
    time: unixTime,
    receivedAt: now.toISOString(),
    line,
    bytes: Buffer.byteLength(line),
  };
}

export async function testSink(deps: Deps, caller: Caller, idRaw: string, sourceIp: string): Promise<SinkTestResult> {
  const sink = await sinkById(deps, idRaw);
  const dest = destinationOf(sink.type);
  if (!dest) throw badRequest(unsupportedType(sink.type));
  const scope = await scopeOf(deps, sink.environment_id);
  const t0 = performance.now();
  let result: { ok: boolean; answer: string };
  const signal = AbortSignal.timeout(TEST_TIMEOUT_MS);
  try {
    const opened = await dest.open(resolveConfig(dest, sink.config), { name: sink.name, sinkDir: deps.config.sinkDir });
    try {
      const send = opened.send([testEntry(sink, scope?.name ?? 'global', deps.now())], signal);
      const res = await Promise.race([
        send,
        new Promise<never>((_, reject) =>
          signal.addEventListener('abort', () => reject(new Error(`no answer within ${TEST_TIMEOUT_MS / 1000} s`))),
        ),
      ]);
      const refused = res.rejected?.[0] ?? res.retry?.[0];
      result = refused ? { ok: false, answer: `${res.answer}: ${refused.error}` } : { ok: true, answer: res.answer };
    } finally {
      await opened.close().catch(() => undefined);
    }
  } catch (e) {
    result = { ok: false, answer: (e as Error).message };
  }
  const ms = Math.round(performance.now() - t0);
  await writeAudit(deps, {
    line: `log sink ${sink.id} "${sink.name}" (${sink.type}) tested: ${result.ok ? 'delivered' : 'failed'}`,
    logType: LogTypes.environment,
    username: caller.user.username,
    sourceIp,
    env: scope,
  });
  return { ...result, answer: result.answer.slice(0, 2000), ms };
}
