// Shared checks of the environment/enroll/tags/settings API tests. Field lists of api-spec.md 2.1,
// 2.3 and 2.5 are written out here (not taken from src/api) so replies are checked against the spec.
import { expect } from 'vitest';
import type { TestServer } from '../helpers/api-server.js';

type Kind = 'integer' | 'string' | 'boolean' | 'object' | 'array';

const of = (kind: Kind, names: string) =>
  Object.fromEntries(
    names
      .split(/[\s,]+/)
      .filter(Boolean)
      .map((n) => [n, kind]),
  );
const s = (names: string) => of('string', names);

export const ENVIRONMENT_FIELDS: Record<string, Kind> = {
  ...of('integer', 'id user_id config_interval log_interval query_interval'),
  ...s('uuid name type hostname icon secret certificate flags options schedule packs decorators atc configuration'),
  ...of('boolean', 'accept_enrolls config_tls logging_tls query_tls carves_tls debug_http'),
  ...s('enroll_path enroll_secret_path remove_secret_path config_path log_path query_read_path query_write_path'),
  ...s('carver_init_path carver_block_path enroll_expire remove_expire deb_package msi_package pkg_package rpm_package'),
  ...s('created_at updated_at'),
};

export const TAG_FIELDS: Record<string, Kind> = {
  ...of('integer', 'id environment_id tag_type'),
  ...s('name description color icon custom_tag created_by created_at updated_at'),
  ...of('boolean', 'auto_tag cohort'),
};

export const SETTING_FIELDS: Record<string, Kind> = {
  ...of('integer', 'id environmentID integer'),
  ...s('name service type info string createdAt updatedAt'),
  boolean: 'boolean',
  deletedAt: 'object',
};

function kindOf(v: unknown): string {
  if (Array.isArray(v)) return 'array';
  if (v === null) return 'null';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

/** Every listed field present with its JSON type. */
export function expectFields(obj: Record<string, unknown>, fields: Record<string, Kind>): void {
  expect(obj).toBeTypeOf('object');
  const wrong = Object.entries(fields)
    .filter(([k, kind]) => kindOf(obj[k]) !== kind)
    .map(([k, kind]) => `${k}: want ${kind}, got ${kindOf(obj[k])}`);
  expect(wrong).toEqual([]);
}

export const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

/** The newest audit rows of one log_type (read from the server's store, as an auditor would). */
export async function auditRows(ts: TestServer, logType: number, limit = 5) {
  return ts.server.deps.db
    .selectFrom('audit_logs')
    .selectAll()
    .where('log_type', '=', logType)
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}

// A self-signed test certificate (CN=fleet.example.test, EC P-256); its key was thrown away.
export const TEST_CERT = `-----BEGIN CERTIFICATE-----
MIIBkDCCATegAwIBAgIUCoPitZrYQI5rHr2iBNwqtUknhHkwCgYIKoZIzj0EAwIw
HTEbMBkGA1UEAwwSZmxlZXQuZXhhbXBsZS50ZXN0MCAXDTI2MTEyMTIzMTgxMFoY
DzIxMjYxMDI4MjMxODEwWjAdMRswGQYDVQQDDBJmbGVldC5leGFtcGxlLnRlc3Qw
WTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAASryLXqhKaN9n4Qu3i9OBWH9wpI6/t9
Ao2CgSXhblH/P5Ql73SLmmpW3Y7+B7P/VrQVZpcTf6/G+xjt42WVlnAFo1MwUTAd
BgNVHQ4EFgQUxXfth0i36ZwxZpPqioUAsL9TL5EwHwYDVR0jBBgwFoAUxXfth0i3
6ZwxZpPqioUAsL9TL5EwDwYDVR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNHADBE
AiAltemP0cnWekYWuNlIydD2nOxFi9OJD1C0sCBEBAMw8AIgB9Govp9dhglK0wgc
oyM8gEgjsV6fTLL2AuLQEL/Wdjo=
-----END CERTIFICATE-----
`;
