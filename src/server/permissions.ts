// The permission table of contract.md section 3, in one place. Every route names its rule from
// RULES; the auth hook in app.ts enforces it before the handler runs.
import type { AccessLevel } from '../api/index.js';

export type Rule = { auth: false } | { auth: true; superAdmin?: boolean; env?: { param: string; level: AccessLevel; fromQuery?: boolean } };

const envRule = (level: AccessLevel, param = 'env'): Rule => ({ auth: true, env: { param, level } });
const authenticated: Rule = { auth: true };
const superAdmin: Rule = { auth: true, superAdmin: true };
const open: Rule = { auth: false };

export const RULES = {
  login: open, // 4.1: the env level check is part of login itself
  health: open, // GET /healthz, for load balancers (docs/api.md "Several replicas")
  metrics: superAdmin, // GET /metrics (issue 18); --metrics-listen serves it without a token
  mfaLogin: open, // 4.2
  error: open, // 4.21
  logout: authenticated, // POST /api/v1/logout (docs/api.md)
  ownPassword: authenticated, // 4.3
  ownMfa: authenticated, // TOTP enrol, WebAuthn list/remove (4.4)
  users: superAdmin, // 4.5 and users list
  me: authenticated,
  intervals: envRule('admin'), // 4.6
  osqueryConfig: envRule('admin'), // issue 22: an environment's osquery configuration, read and changed
  envMap: authenticated, // 4.7: filtered to the caller's envs
  envRead: envRule('user'),
  envCreate: superAdmin, // issue 27: POST /api/v1/environments
  envChange: { auth: true, superAdmin: true, env: { param: 'env', level: 'admin' } }, // issue 27: PATCH, DELETE /api/v1/environments/{env}
  version: authenticated, // issue 27: GET /api/v1/version
  enrollAction: envRule('admin'), // 4.8
  enrollRead: envRule('admin'), // 4.9
  tagsChange: envRule('admin'), // 4.10
  tagsList: envRule('user'),
  nodesList: envRule('user'), // 4.11
  nodeRead: envRule('user'), // 4.12 (node_key only for env admins)
  nodeDelete: envRule('admin'), // 4.13
  settingsRead: envRule('admin'), // 4.14
  settingsUpdate: superAdmin, // 4.15
  carveRead: envRule('carve'), // 4.16 and carves list
  carveAction: envRule('carve'), // 4.17 and starting a carve
  queryRun: envRule('query'), // live queries (issue 13): run, list, read, results, actions
  logsRead: envRule('user'), // issue 30: log lines and query reports, as the nodes that sent them
  sinks: superAdmin, // 4.18 and the sink endpoints
  audit: authenticated, // 4.19: non-super-admins see their own entries
  stats: authenticated, // 4.20: accessible envs only
} as const satisfies Record<string, Rule>;

export interface EnvLevels {
  user: boolean;
  query: boolean;
  carve: boolean;
  admin: boolean;
}

/** Env admin implies query and carve; any level implies read (user). */
export function hasLevel(isSuperAdmin: boolean, levels: EnvLevels | undefined, level: AccessLevel): boolean {
  if (isSuperAdmin) return true;
  if (!levels) return false;
  switch (level) {
    case 'admin':
      return levels.admin;
    case 'carve':
      return levels.admin || levels.carve;
    case 'query':
      return levels.admin || levels.query;
    case 'user':
      return levels.admin || levels.carve || levels.query || levels.user;
  }
}
