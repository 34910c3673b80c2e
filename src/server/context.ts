// What every service receives: the store, the clock and the server's configuration.
import type { Generations } from './store/node-index.js';
import type { CompiledQuery, Kysely, QueryResult } from 'kysely';
import type { DB, UserRow } from './store/schema.js';
import type { Dialect } from './store/dialect.js';
import type { EnvLevels } from './permissions.js';
import type { LoginGuard } from './services/auth/login-guard.js';
import type { Faults } from './lib/faults.js';
import type { Metrics } from './lib/metrics.js';
import type { AgentIdentity } from './services/environments/agent-identity.js';
import type { ServerLog } from './lib/server-log.js';
import type { LogWatch } from './services/logs/follow.js';
import type { WriteNow, WriteSteps } from './store/write-steps.js';
import type { ReadNow } from './store/sqlite-read-now.js';

export interface ServerConfig {
  jwtSecret: Buffer;
  issuer: string;
  /** Login and MFA attempts a minute per client IP (contract: 10). */
  loginRateLimit: number;
  /** Authenticated calls a minute per user (contract: 1200). */
  apiRateLimit: number;
  /** Largest accepted request body, bytes. */
  bodyLimit: number;
  /** Denied requests (401/403) a minute per client IP before they are answered 429. */
  deniedRateLimit: number;
  /** Failed logins per account per window from addresses that never logged in to it (docs/api.md). */
  accountLoginLimit: number;
  timeouts: ServerTimeouts;
  /** Largest carve an agent may announce, bytes (--carve-max-size; default DEFAULT_CARVE_MAX_BYTES). */
  carveMaxBytes: number;
  /** The one directory file sinks write in (--sink-dir); relative sink paths resolve here. */
  sinkDir: string;
  /** Each sink's backlog in the spool, bytes and age, past which its oldest entries are dropped (issue 28). */
  sinkBacklogBytes: number;
  sinkBacklogAgeMs: number;
  /** Enrollment window of a new environment, seconds (--enroll-window); 0: open until someone closes it. */
  enrollWindowSeconds: number;
  /** Seconds between detail refreshes of a node (--detail-refresh), unless its environment sets its own. */
  detailRefreshSeconds: number;
}

/** Fleet's default: host details are asked for again every hour. */
export const DEFAULT_DETAIL_REFRESH_SECONDS = 3600;

/** 1 GiB: carves are kept in the database (base64), so the default is a size an operator plans for. */
export const DEFAULT_CARVE_MAX_BYTES = 1024 * 1024 * 1024;

/** HTTP timeouts, milliseconds (docs/api.md "Timeouts and shutdown"). */
export interface ServerTimeouts {
  /** Whole request (headers and body) must arrive within this. */
  requestMs: number;
  /** Request headers must arrive within this. */
  headersMs: number;
  /** An idle kept-alive connection is closed after this. */
  keepAliveMs: number;
  /**
   * The same on the agent door, longer than osquery's intervals (distributed reads every 60 s):
   * an agent keeps its TLS connection between requests (osquery's --tls_session_reuse), instead
   * of a TLS handshake per request, which cost the server about as much as the request itself.
   */
  agentKeepAliveMs: number;
  /** At shutdown, requests in progress get this long before they are answered 503. */
  shutdownGraceMs: number;
}

export const DEFAULT_TIMEOUTS: ServerTimeouts = {
  requestMs: 30_000,
  headersMs: 10_000,
  keepAliveMs: 5_000,
  agentKeepAliveMs: 75_000,
  shutdownGraceMs: 5_000,
};

export interface Deps {
  db: Kysely<DB>;
  dialect: Dialect;
  now: () => Date;
  config: ServerConfig;
  /** The per-account login limit (its counts live in memory). */
  loginGuard: LoginGuard;
  /** Where requests and background tasks report the server's own trouble (logged, counted, /healthz). */
  faults: Faults;
  /** What the server says about itself and, with --log, its requests: one format (lib/server-log.ts). */
  log: ServerLog;
  /**
   * SQLite: why writes would fail for lack of space now (file system nearly full, page limit
   * reached), else undefined. PostgreSQL has no such question: /healthz uses Faults instead.
   */
  outOfSpace?: () => Promise<string | undefined>;
  /** Prometheus metrics of this server (absent in unit tests that build Deps by hand). */
  metrics?: Metrics;
  /**
   * The agent door's batched writes, one transaction (Store.write: on SQLite in a thread of its
   * own). Absent in tests that build Deps by hand: a transaction on `db` then (store/db.ts).
   */
  write?: (statements: CompiledQuery[]) => Promise<QueryResult<unknown>[]>;
  /**
   * The agent door's public identity (name and trust anchor) that environments follow; one object
   * shared by both doors' Deps and updated in place on SIGHUP. Absent without an agent door.
   */
  agentIdentity?: AgentIdentity;
  /** Issue 30: where log followers of this process wait for new lines (absent: they are answered at once). */
  logWatch?: LogWatch;
  /** Store.writeSteps: agent-door transactions that read their own answers. Absent: over `db`. */
  writeSteps?: WriteSteps;
  /** Store.writeNow: a small agent-door transaction on the event loop when the write lock is free (SQLite). */
  writeNow?: WriteNow;
  /** Store.readNow: a short read on the event loop's own connection (SQLite). Absent: through `db`. */
  readNow?: ReadNow;
}

/** The authenticated user of a request. */
export interface Caller {
  user: UserRow;
  isSuperAdmin: boolean;
  /** Levels per environment id. */
  access: Map<number, EnvLevels>;
  jti: string;
  csrfToken: string;
  /** The change counters read when this request was authenticated (services reuse them). */
  generations?: Generations;
}

export const iso = (d: Date) => d.toISOString();
export const bool = (v: number | boolean | null | undefined) => Boolean(v);
