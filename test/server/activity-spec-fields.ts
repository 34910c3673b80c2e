// The fields of api-spec.md sections 2.4, 2.7-2.11, written out from the spec (not imported
// from src/api), so a test fails when the server drops a field or sends the wrong JSON type.
import { expect } from 'vitest';

type Kind = 'string' | 'integer' | 'boolean' | 'array' | 'object';
export type FieldSpec = Record<string, Kind>;

export const LOG_SINK: FieldSpec = {
  id: 'integer',
  name: 'string',
  type: 'string',
  source: 'string',
  info: 'string',
  enabled: 'boolean',
  environment_id: 'integer',
  order: 'integer',
  config: 'array',
  bytes_sent: 'integer',
  exports_count: 'integer',
  created_at: 'string',
  updated_at: 'string',
};

export const CARVE_QUERY: FieldSpec = {
  id: 'integer',
  name: 'string',
  query: 'string',
  path: 'string',
  type: 'string',
  target: 'string',
  targets: 'array',
  creator: 'string',
  environment_id: 'integer',
  active: 'boolean',
  completed: 'boolean',
  deleted: 'boolean',
  expired: 'boolean',
  hidden: 'boolean',
  protected: 'boolean',
  carve_status: 'string',
  errors: 'integer',
  executions: 'integer',
  expected: 'integer',
  expiration: 'string',
  extra_data: 'string',
  created_at: 'string',
  updated_at: 'string',
};

export const CARVE_FILE: FieldSpec = {
  uuid: 'string',
  carve_id: 'string',
  session_id: 'string',
  path: 'string',
  status: 'string',
  archived: 'boolean',
  block_size: 'integer',
  carve_size: 'integer',
  total_blocks: 'integer',
  completed_blocks: 'integer',
  created_at: 'string',
  completed_at: 'string',
};

export const AUDIT_ENTRY: FieldSpec = {
  id: 'integer',
  created_at: 'string',
  env_uuid: 'string',
  environment_id: 'integer',
  line: 'string',
  log_type: 'integer',
  severity: 'integer',
  service: 'string',
  source_ip: 'string',
  username: 'string',
};

export const PLATFORM_COUNTS: FieldSpec = { darwin: 'integer', linux: 'integer', windows: 'integer', other: 'integer' };

export const DASHBOARD_STATS: FieldSpec = {
  total_nodes: 'integer',
  active_nodes: 'integer',
  inactive_nodes: 'integer',
  inactive_hours: 'integer',
  total_active_queries: 'integer',
  total_active_carves: 'integer',
  platform_counts: 'object',
  environments: 'array',
};

export const ENV_STATS: FieldSpec = {
  uuid: 'string',
  name: 'string',
  active: 'integer',
  inactive: 'integer',
  total: 'integer',
  active_queries: 'integer',
  active_carves: 'integer',
  platform_counts: 'object',
};

export const PAGE: FieldSpec = { items: 'array', page: 'integer', page_size: 'integer', total_items: 'integer', total_pages: 'integer' };

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

function kindOf(v: unknown): string {
  if (Array.isArray(v)) return 'array';
  if (v === null) return 'null';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

/** Every field of the spec is present with its JSON type; timestamps are RFC 3339 UTC. */
export function expectFields(obj: unknown, spec: FieldSpec, what = 'object'): void {
  expect(kindOf(obj), what).toBe('object');
  const o = obj as Record<string, unknown>;
  const wrong: string[] = [];
  for (const [field, kind] of Object.entries(spec)) {
    if (kindOf(o[field]) !== kind) wrong.push(`${field}: want ${kind}, got ${kindOf(o[field])}`);
    else if (kind === 'string' && /(_at|^expiration)$/.test(field) && !RFC3339.test(o[field] as string)) {
      wrong.push(`${field}: "${String(o[field])}" is not RFC 3339 UTC`);
    }
  }
  expect(wrong, what).toEqual([]);
}

/** {code, error} with the given status and code. */
export function expectError(reply: { status: number; body: any }, status: number, code?: string): void {
  expect({ status: reply.status, code: reply.body?.code }).toEqual({ status, code: code ?? reply.body?.code });
  expect(typeof reply.body?.code).toBe('string');
  expect(typeof reply.body?.error).toBe('string');
  expect(reply.body.error.length).toBeGreaterThan(0);
}
