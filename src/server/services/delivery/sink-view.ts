// A sink as the API shows it (issue 28): the spec's 2.4 object with its secrets redacted and
// its state in the spool (backlog from the stream heads and its cursor, counters, last error).
import type { Kysely } from 'kysely';
import type { DB, LogSinkRow } from '../../store/schema.js';
import type { LogSink, SinkState } from '../../../api/index.js';
import { destinationOf } from './destinations/index.js';
import { redactConfig } from './sink-config.js';
import { firstAfter } from './sink-state.js';

export function toSink(r: LogSinkRow, state?: SinkState): LogSink {
  return {
    id: r.id,
    name: r.name,
    type: r.type,
    source: r.source,
    info: r.info,
    enabled: !!r.enabled,
    environment_id: r.environment_id,
    order: r.sort_order,
    // Never the secrets' values: not in a read, not to the CLI, not to a log.
    config: [...Buffer.from(redactConfig(r.config, destinationOf(r.type)), 'utf8')],
    bytes_sent: Number(r.bytes_sent),
    exports_count: Number(r.exports_count),
    created_at: r.created_at,
    updated_at: r.updated_at,
    ...(state ? { state } : {}),
  };
}

/** The sinks with their state, read in three statements and a seek per sink with a backlog. */
export async function withStates(db: Kysely<DB>, rows: LogSinkRow[]): Promise<LogSink[]> {
  if (rows.length === 0) return [];
  const [states, streams] = await Promise.all([
    db
      .selectFrom('sink_state')
      .selectAll()
      .where(
        'sink_id',
        'in',
        rows.map((r) => r.id),
      )
      .execute(),
    db.selectFrom('log_streams').selectAll().execute(),
  ]);
  const byId = new Map(states.map((s) => [s.sink_id, s]));
  const head = new Map(streams.map((h) => [`${h.environment_id}\u0000${h.log_type}`, h]));
  const now = Date.now();
  const out: LogSink[] = [];
  for (const r of rows) {
    const st = byId.get(r.id);
    const h = head.get(`${r.environment_id}\u0000${r.source}`);
    // A disabled sink keeps nothing: no backlog (it starts at the head when enabled).
    const live = !!r.enabled && !!st;
    const entries = live ? Math.max(0, Number(h?.entries ?? 0) - Number(st.cursor_seq)) : 0;
    const bytes = live ? Math.max(0, Number(h?.bytes ?? 0) - Number(st.cursor_pos)) : 0;
    const oldest = entries > 0 ? await firstAfter(db, r, Number(st!.cursor_id)) : undefined;
    out.push(
      toSink(r, {
        supported: destinationOf(r.type) !== undefined,
        delivering: live && st.lease_owner !== '' && Number(st.lease_until) > now,
        delivered_by: live && st.lease_owner !== '' && Number(st.lease_until) > now ? st.lease_owner : '',
        backlog_entries: entries,
        backlog_bytes: bytes,
        oldest_undelivered_at: oldest?.row.received_at ?? '',
        delivered: Number(st?.delivered ?? 0),
        dropped: Number(st?.dropped ?? 0),
        rejected: Number(st?.rejected ?? 0),
        failed: Number(st?.failed ?? 0),
        last_success_at: st?.last_success_at ?? '',
        last_error: st?.last_error ?? '',
        last_error_at: st?.last_error_at ?? '',
        retrying_since: live ? (st?.retrying_since ?? '') : '',
      }),
    );
  }
  return out;
}
