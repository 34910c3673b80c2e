// Audit trail (contract.md 4.19): every login, change and denied request writes a row.
import type { Deps } from '../../context.js';
import { LogTypes, Severities, type AuditLogEntry, type LogType, type Severity } from '../../../api/index.js';
import type { AuditLogRow } from '../../store/schema.js';

export interface AuditInput {
  line: string;
  logType: LogType;
  severity?: Severity;
  service?: string;
  username?: string;
  sourceIp?: string;
  env?: { id: number; uuid: string } | null;
}

export async function writeAudit(deps: Deps, a: AuditInput): Promise<void> {
  await deps.db
    .insertInto('audit_logs')
    .values({
      created_at: deps.now().toISOString(),
      env_uuid: a.env?.uuid ?? '',
      environment_id: a.env?.id ?? 0,
      line: a.line,
      log_type: a.logType,
      severity: a.severity ?? Severities.info,
      service: a.service ?? 'api',
      source_ip: a.sourceIp ?? '',
      username: a.username ?? '',
    })
    .execute();
}

export function toAuditEntry(r: AuditLogRow): AuditLogEntry {
  return {
    id: r.id,
    created_at: r.created_at,
    env_uuid: r.env_uuid,
    environment_id: r.environment_id,
    line: r.line,
    log_type: r.log_type,
    severity: r.severity,
    service: r.service,
    source_ip: r.source_ip,
    username: r.username,
  };
}

export { LogTypes, Severities };
