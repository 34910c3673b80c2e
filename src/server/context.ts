// What every service receives: the store, the clock and the server's configuration.
import type { Kysely } from 'kysely';
import type { DB, UserRow } from './store/schema.js';
import type { Dialect } from './store/migrations.js';
import type { EnvLevels } from './permissions.js';

export interface ServerConfig {
  jwtSecret: Buffer;
  issuer: string;
  /** Login and MFA attempts a minute per client IP (contract: 10). */
  loginRateLimit: number;
  /** Authenticated calls a minute per user (contract: 1200). */
  apiRateLimit: number;
  /** Largest accepted request body, bytes. */
  bodyLimit: number;
}

export interface Deps {
  db: Kysely<DB>;
  dialect: Dialect;
  now: () => Date;
  config: ServerConfig;
}

/** The authenticated user of a request. */
export interface Caller {
  user: UserRow;
  isSuperAdmin: boolean;
  /** Levels per environment id. */
  access: Map<number, EnvLevels>;
  jti: string;
  csrfToken: string;
}

export const iso = (d: Date) => d.toISOString();
export const bool = (v: number | boolean | null | undefined) => Boolean(v);
