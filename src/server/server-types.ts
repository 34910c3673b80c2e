// What `startServer` takes and what it gives back, apart from how it starts: the command, the
// cluster and the tests read these without loading the server.
import type { Deps, ServerTimeouts } from './context.js';
import type { Store } from './store/db.js';
import type { App } from './app.js';
import type { RetentionPurger } from './services/retention/purge.js';
import type { DenialAudit } from './services/auth/denial-audit.js';
import type { DemoSummary } from './seed.js';
import type { AgentDoor, AgentListenOptions } from './agent/listener.js';
import type { Delivery } from './services/delivery/delivery.js';
import type { Spool } from './services/delivery/spool.js';
import type { LogWatch } from './services/logs/follow.js';

export interface ServerOptions {
  host: string;
  port: number;
  /**
   * SQLite file, or a postgres:// URL. With dev: the demo fleet is seeded into it (it must have
   * no users yet); without one, dev uses a temporary SQLite database.
   */
  dbPath?: string;
  /** PostgreSQL: connections in the pool (default 10) and a CA bundle for verify-full TLS. */
  dbPool?: number;
  dbCaFile?: string;
  /** Load balancers whose X-Forwarded-For is believed (addresses or CIDRs). */
  trustProxy?: string[];
  dev?: boolean;
  /** Password of super-admin `admin` in dev mode (random when absent). */
  devPassword?: string;
  /** Size of the demo fleet in dev mode (default 2,200 nodes). */
  devNodes?: number;
  /** Password for the first super-admin of a new database (outside dev). */
  adminPassword?: string;
  adminUsername?: string;
  /** Environments to create at start when missing. */
  createEnvs?: string[];
  /**
   * The URL agents use to reach the agent door (--agent-url https://NAME[:PORT]); environments
   * that follow the server get NAME[:PORT] as their --tls_hostname.
   */
  agentUrl?: string;
  /** Enrollment window of a new environment, seconds (--enroll-window; 0 or absent: open until closed). */
  enrollWindowSeconds?: number;
  /** Seconds between detail refreshes of a node (--detail-refresh; default an hour). */
  detailRefreshSeconds?: number;
  jwtSecret?: string;
  loginRateLimit?: number;
  apiRateLimit?: number;
  /** Denied (401/403) requests a minute per client IP before 429 (default 60). */
  deniedRateLimit?: number;
  /** Failed logins per account per 15 minutes from unknown addresses (default 10). */
  accountLoginLimit?: number;
  /**
   * The directory file sinks write in (--sink-dir). Default: `sinks` beside a SQLite database,
   * in the temporary directory of --dev, or `defaultSinkDir` (the command's data directory) on PostgreSQL.
   */
  sinkDir?: string;
  defaultSinkDir?: string;
  /** Each sink's backlog bound in the spool: bytes (default 1 GiB) and age (default 7 days). */
  sinkBacklogBytes?: number;
  sinkBacklogAgeMs?: number;
  /** Largest carve an agent may announce, bytes (default 1 GiB). */
  carveMaxBytes?: number;
  /** Overrides of DEFAULT_TIMEOUTS (milliseconds). */
  timeouts?: Partial<ServerTimeouts>;
  /**
   * A database open to other users is refused; with this it is made 0600 and the stored JWT
   * secret is rotated (ending every session). `warn` receives the one-line notice.
   */
  fixPermissions?: boolean;
  warn?: (line: string) => void;
  /** --log: every line on stderr one JSON object (requests of both doors, the server's events); else text (lib/server-log.ts). */
  logJson?: boolean;
  tls?: { certFile: string; keyFile: string };
  /** The agent door (osquery's TLS API) on its own listener; --dev makes a self-signed certificate. */
  agent?: Omit<AgentListenOptions, 'selfSignedDir' | 'denials' | 'spool' | 'delivery'>;
  /** Prometheus metrics on a listener of their own, without authentication (--metrics-listen). */
  metricsListen?: { host: string; port: number };
  /** Admin requests handled at once before the admin door answers 503 (default 256). */
  adminMaxInFlight?: number;
  /**
   * This process is one worker of `--workers N` (server/cluster.ts): the primary has migrated and
   * bootstrapped the database (settings, super-admin, demo fleet) and owns the temporary
   * directory of --dev; only the first worker does the one-time changes that need the listening
   * address (--create-env, pointing the demo environments at the agent door).
   */
  worker?: { first: boolean; tempDir?: string };
}

export interface RunningServer {
  url: string;
  app: App;
  deps: Deps;
  store: Store;
  /** Demo fleet of --dev; `extra` is more banner text (e.g. the MFA user's secret). */
  demo?: DemoSummary & { password: string };
  /** The aggregated audit of denied requests (flush() brings its rows' counts up to date). */
  denials: DenialAudit;
  /** The agent door when --agent-listen was given. */
  agent?: AgentDoor;
  /** The retention purge (issue 27), in the process that runs it. */
  retention?: RetentionPurger;
  /** http://host:port of the metrics listener (--metrics-listen). */
  metricsUrl?: string;
  /** The durable log spool and the sinks' delivery (issue 28). */
  spool: Spool;
  delivery: Delivery;
  /**
   * SIGHUP: reads the agent door's certificate, key and anchor files again and points the
   * environments that follow the server at the new anchor. Returns the line to log; throws (the
   * old certificate stays in use) when the new files are not usable.
   */
  reloadAgentTls(): Promise<string>;
  /** Where log followers wait (issue 30). */
  logWatch: LogWatch;
  close(): Promise<void>;
}
