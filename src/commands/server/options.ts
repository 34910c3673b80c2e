// The flags of `fleetctl server` and the parsers they use: loaded by the command tree, without the server.
import { InvalidArgumentError, type Command } from 'commander';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { intArg, spanArg } from '../define.js';
import { UsageError } from '../../errors.js';

export interface ServerOpts {
  listen: string;
  db?: string;
  dbPool?: number;
  dbCa?: string;
  trustProxy: string[];
  dev?: boolean;
  devPassword?: string;
  devNodes?: number;
  devAgents?: number;
  adminPasswordStdin?: boolean;
  adminUsername: string;
  createEnv: string[];
  loginRateLimit?: number;
  apiRateLimit?: number;
  deniedRateLimit?: number;
  accountLoginLimit?: number;
  requestTimeout?: number;
  headersTimeout?: number;
  keepAliveTimeout?: number;
  agentKeepAliveTimeout?: number;
  shutdownGrace?: number;
  fixPermissions?: boolean;
  tlsCert?: string;
  tlsKey?: string;
  agentListen?: string;
  agentTlsCert?: string;
  agentTlsKey?: string;
  agentUrl?: string;
  agentCa?: string;
  enrollWindow?: number;
  detailRefresh?: number;
  log?: boolean;
  sinkDir?: string;
  carveMaxSize?: number;
  agentMaxInFlight?: number;
  metricsListen?: string;
  sinkBacklogSize?: number;
  sinkBacklogAge?: number;
  workers?: number;
}

/** A size: bytes, or a number with K, M, G (KiB, MiB, GiB: powers of 1024), e.g. 512M, 2GiB. */
export function sizeArg(v: string): number {
  const m = /^(\d+)\s*([KMGT]?)(i?B)?$/i.exec(v.trim());
  if (!m) throw new InvalidArgumentError('a size in bytes, or with K, M, G (e.g. 512M, 1G)');
  const n = Number(m[1]) * 1024 ** 'BKMGT'.indexOf((m[2] || 'B').toUpperCase());
  if (!Number.isSafeInteger(n) || n < 1) throw new InvalidArgumentError('a size of at least 1 byte');
  return n;
}

/** An age: seconds, or a number with s, m, h or d, e.g. 7d, 36h. Milliseconds. */
export function ageArg(v: string): number {
  const m = /^(\d+)\s*([smhd]?)$/i.exec(v.trim());
  if (!m) throw new InvalidArgumentError('an age in seconds, or with s, m, h, d (e.g. 36h, 7d)');
  const ms = Number(m[1]) * { '': 1, s: 1, m: 60, h: 3600, d: 86400 }[(m[2] ?? '').toLowerCase() as '' | 's' | 'm' | 'h' | 'd'] * 1000;
  if (!Number.isSafeInteger(ms) || ms < 1000) throw new InvalidArgumentError('an age of at least 1 second');
  return ms;
}

/** Default database: the user's data directory (XDG_DATA_HOME on Linux). */
export function defaultDbPath(env: NodeJS.ProcessEnv = process.env): string {
  if (process.platform === 'darwin') return join(homedir(), 'Library', 'Application Support', 'fleetctl', 'fleet.db');
  if (process.platform === 'win32') return join(env.LOCALAPPDATA ?? join(homedir(), 'AppData', 'Local'), 'fleetctl', 'fleet.db');
  return join(env.XDG_DATA_HOME || join(homedir(), '.local', 'share'), 'fleetctl', 'fleet.db');
}

export function parseListen(s: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(s);
  if (!m) throw new UsageError(`invalid --listen "${s}": expected HOST:PORT, e.g. 127.0.0.1:8080`);
  const port = Number(m[3]);
  if (port > 65535) throw new UsageError(`invalid port ${port}`);
  return { host: m[1] ?? (m[2] || '127.0.0.1'), port };
}

/** The flags of `fleetctl server` (its maintenance verbs declare their own). */
export function serverOptions(cmd: Command): Command {
  return cmd
    .option('--listen <host:port>', 'address to listen on', '127.0.0.1:8080')
    .option(
      '--db <path|url>',
      `SQLite database file, or postgres://user:pass@host:port/db for several replicas (env FLEETCTL_DB; default ${defaultDbPath()})`,
    )
    .option('--db-pool <n>', 'PostgreSQL: connections in the pool (default 10)', intArg(2))
    .option('--db-ca <file>', 'PostgreSQL: CA certificate (PEM) to verify the database server (sslmode=verify-full)')
    .option(
      '--trust-proxy <address>',
      'a load balancer (address or CIDR, repeatable) whose X-Forwarded-For names the client for limits and audit',
      (v: string, acc: string[]) => {
        if (!/^[0-9a-fA-F.:]+(\/\d{1,3})?$/.test(v)) throw new InvalidArgumentError('an IP address or CIDR, e.g. 10.0.0.5 or 10.0.0.0/24');
        return [...acc, v];
      },
      [] as string[],
    )
    .option('--dev', 'a demo fleet, in a temporary database (or seeded into --db when it has no users)')
    .option('--dev-password <password>', 'password of the demo users in --dev (default: random, printed)')
    .option('--dev-nodes <n>', 'size of the demo fleet in --dev (default 2200)', intArg(3))
    .option(
      '--dev-agents <n>',
      'N simulated osquery agents in this process: they enroll in prod over the agent listener, are tagged live-agents, and answer live queries and carves (--dev)',
      intArg(1),
    )
    .option('--admin-password-stdin', 'read the first super-admin password from stdin (new database)')
    .option('--admin-username <name>', 'username of the first super-admin', 'admin')
    .option(
      '--create-env <name>',
      'create this environment at start when missing (repeatable)',
      (v: string, acc: string[]) => {
        if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/.test(v)) throw new InvalidArgumentError('letters, digits, . _ - (at most 64)');
        return [...acc, v];
      },
      [] as string[],
    )
    .option('--login-rate-limit <n>', 'login and MFA attempts a minute per client IP', intArg(1))
    .option('--api-rate-limit <n>', 'API calls a minute per user', intArg(1))
    .option('--denied-rate-limit <n>', 'denied (401/403) requests a minute per client IP before 429 (default 60)', intArg(1))
    .option(
      '--account-login-limit <n>',
      'failed logins per account per 15 minutes from addresses it never logged in from (default 10)',
      intArg(1),
    )
    .option('--request-timeout <seconds>', 'a whole request must arrive within this (default 30)', intArg(1))
    .option('--headers-timeout <seconds>', 'request headers must arrive within this (default 10)', intArg(1))
    .option('--keep-alive-timeout <seconds>', 'close idle kept-alive connections of the API after this (default 5)', intArg(1))
    .option(
      '--agent-keep-alive-timeout <seconds>',
      "close an agent's idle connection after this (default 75: longer than osquery's 60 s distributed interval, so agents keep their TLS connection)",
      intArg(1),
    )
    .option('--shutdown-grace <seconds>', 'on SIGTERM, requests in progress get this long before a 503 (default 5)', intArg(0))
    .option('--fix-permissions', 'make a database open to other users 0600 and rotate its JWT secret (ends every session)')
    .option('--tls-cert <file>', 'serve HTTPS with this certificate (PEM)')
    .option('--tls-key <file>', 'private key for --tls-cert (PEM)')
    .option(
      '--agent-listen <host:port>',
      "serve osquery's TLS API (enroll, config, logs, live queries, carves) on this address (--dev: --listen's port + 1)",
    )
    .option('--agent-tls-cert <file>', 'certificate (PEM) of the agent listener (--dev: self-signed when absent)')
    .option('--agent-tls-key <file>', 'private key for --agent-tls-cert (PEM)')
    .option(
      '--agent-url <url>',
      "the URL agents reach the agent listener by, https://NAME[:PORT] (a load balancer's may front it): the --tls_hostname of every environment that does not set its own; needed when --agent-listen binds every address",
    )
    .option(
      '--agent-ca <file|system>',
      "the root certificate (PEM) agents are handed to trust the agent listener (its intermediates are served with the leaf); 'system': the root is public, agents pin nothing",
    )
    .option(
      '--enroll-window <span>',
      'new environments accept enrolls for this long (e.g. 7d, 12h; default: until someone closes them)',
      spanArg({ allowNever: true }),
    )
    .option(
      '--detail-refresh <span>',
      'how often each node is asked for its details (osquery_info, system_info, os_version, platform_info, uptime), unless its environment sets its own (default 1h)',
      spanArg({ min: 60 }),
    )
    .option('--log', 'structured request logs (JSON) on stderr, of both doors (agent lines: endpoint, status, ms, node)')
    .option(
      '--sink-dir <dir>',
      'the only directory file log sinks write in; relative sink paths resolve here (default: sinks/ beside the database)',
    )
    .option(
      '--sink-backlog-size <size>',
      'bytes of log entries each sink may have waiting in the spool; past it its oldest undelivered entries are dropped (counted and audited), e.g. 512M (default 1G)',
      sizeArg,
    )
    .option(
      '--sink-backlog-age <age>',
      "age past which a sink's undelivered entries are dropped (counted and audited), e.g. 36h (default 7d)",
      ageArg,
    )
    .option('--carve-max-size <size>', 'largest carve an agent may announce, e.g. 512M, 2G (default 1G)', sizeArg)
    .option(
      '--agent-max-in-flight <n>',
      'agent requests handled at once per server process; more are answered 503 and retried by osquery (default 512)',
      intArg(1),
    )
    .option(
      '--metrics-listen <host:port>',
      'serve Prometheus metrics at /metrics on this address without a token (the API serves them at /metrics to super-admins when the setting api/service_metrics is true)',
    )
    .option(
      '--workers <n>',
      "server processes sharing the ports and the database, each serving both doors (default: the machine's cores less one, at least 1)",
      intArg(1),
    );
}
