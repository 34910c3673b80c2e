// `nodes show` (issue 30): a node's last status lines of severity warning or above, osquery's own
// complaints (a bad query, a denylisted one, a config it could not read), from the spool's partial
// index of such lines (migration 015_logs), newest first.
import type { Kysely } from 'kysely';
import type { DB } from '../../store/schema.js';
import type { LogLine } from '../../../api/index.js';
import { lineJson } from './lines.js';

export const STATUS_PROBLEMS_SHOWN = 5;

export async function statusProblems(
  db: Kysely<DB>,
  environment: string,
  nodeId: number,
  limit = STATUS_PROBLEMS_SHOWN,
): Promise<LogLine[]> {
  const rows = await db
    .selectFrom('log_spool')
    .select(['id', 'host_identifier', 'hostname', 'log_type', 'name', 'received_at', 'line'])
    .where('node_id', '=', nodeId)
    .where('severity', '>=', 1)
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
  // The same line the logs endpoint gives (and a sink gets), as an object for the node's schema.
  return rows.map((r) => JSON.parse(lineJson(r, environment)) as LogLine);
}
