import type { User, UserEnvAccess } from '../../api/index.js';
import type { Column } from '../../output/index.js';

/** "admin" (which implies the rest), else the levels held joined by "+", e.g. "user+carve". */
export function levelsText(e: UserEnvAccess): string {
  if (e.admin) return 'admin';
  return (['user', 'query', 'carve'] as const).filter((l) => e[l]).join('+') || 'none';
}

/**
 * "prod:admin, staging:user" — one cell for the per-environment levels. A super-admin reaches
 * every environment whatever is listed, so the cell says that first.
 */
export function accessText(u: User): string {
  const grants = u.environments.map((e) => `${e.name}:${levelsText(e)}`);
  return (u.admin ? ['all (super-admin)', ...grants] : grants).join(', ');
}

/**
 * What the `api` flag means (docs/api.md "API access"): the API is the reference server's only
 * door. osctrl stores no such flag that it enforces (its users all reach the API).
 */
export function apiText(u: User, flavor: string): string {
  if (flavor === 'osctrl') return 'not enforced by osctrl';
  return u.api ? 'yes (may log in and use tokens)' : 'no (cannot log in or use a token: API access is disabled)';
}

export function mfaText(u: User): string {
  const parts: string[] = [];
  if (u.mfa.totp) parts.push('totp');
  if (u.mfa.webauthn > 0) parts.push(`${u.mfa.webauthn} webauthn`);
  return parts.join(', ') || 'none';
}

// USERNAME and ACCESS are never cut (an access list cut short says the wrong thing); the rest
// goes first on a narrow terminal, SERVICE first.
export const USER_COLUMNS: Column<User>[] = [
  { key: 'username', header: 'USERNAME', id: true },
  { key: 'fullname', header: 'FULL NAME', drop: 2 },
  { key: 'email', header: 'EMAIL', drop: 6 },
  { key: 'admin', header: 'SUPER-ADMIN', kind: 'bool', drop: 5 },
  { key: 'service', header: 'SERVICE', kind: 'bool', drop: 7 },
  { key: 'access', header: 'ACCESS', get: accessText, id: true },
  { key: 'mfa_methods', header: 'MFA', get: mfaText, drop: 3 },
  { key: 'last_login_at', header: 'LAST LOGIN', kind: 'time', drop: 4 },
];

/** The `users show` / `users me` terminal view; machine formats get the whole API object. */
export const userDetailColumns = (flavor: string): Column<User>[] => [
  { key: 'username' },
  { key: 'fullname' },
  { key: 'email' },
  { key: 'admin', kind: 'bool' },
  { key: 'service', kind: 'bool' },
  { key: 'api', get: (u) => apiText(u, flavor) },
  { key: 'access', get: accessText },
  { key: 'mfa_methods', get: mfaText },
  { key: 'created_at', kind: 'time' },
  { key: 'last_login_at', kind: 'time' },
];
