// `fleetctl server` itself: checks its flags, starts the server (one process, a primary and its
// workers, or a worker), prints where it listens, and serves until SIGINT or SIGTERM.
import { dirname, join } from 'node:path';
import { CliError, ExitCode, UsageError } from '../../errors.js';
import { PASSWORD_MIN_LENGTH } from '../../api/constants.js';
import { readStdinSecret } from '../../prompt.js';
import { serverLog } from '../../server/lib/server-log.js';
import { defaultDbPath, parseListen, type ServerOpts } from './options.js';

function banner(
  url: string,
  demo: NonNullable<Awaited<ReturnType<typeof import('../../server/start.js').startServer>>['demo']>,
  database: string,
): string {
  const envs = demo.environments.map((e) => `${e.name} (${e.nodes} nodes)`).join(', ');
  const users = demo.users.map((u) => `    ${u.username.padEnd(12)} ${u.description}`).join('\n');
  const extra = demo.extra ? `\n${demo.extra}` : '';
  return [
    `fleetctl reference server: dev mode, ${database}`,
    '',
    `  URL:           ${url}`,
    `  Environments:  ${envs}`,
    `  Super-admin:   admin   password: ${demo.password}`,
    '  Other users (same password):',
    users,
    extra,
    'Log in:',
    `  printf '%s' '${demo.password}' | fleetctl login --url ${url} --env prod --username admin --password-stdin`,
    '  fleetctl nodes list --status active',
    '',
    'Press Ctrl-C to stop.',
    '',
  ].join('\n');
}

/**
 * The flags' combinations, checked before anything starts (exit 2 with one line naming the flag):
 * where the agent listener goes, and the timeouts in milliseconds.
 */
async function checkFlags(o: ServerOpts) {
  const { host, port } = parseListen(o.listen);
  if (Boolean(o.tlsCert) !== Boolean(o.tlsKey)) throw new UsageError('--tls-cert and --tls-key go together');
  if (Boolean(o.agentTlsCert) !== Boolean(o.agentTlsKey)) throw new UsageError('--agent-tls-cert and --agent-tls-key go together');
  if (o.agentTlsCert && !o.agentListen) throw new UsageError('--agent-tls-cert needs --agent-listen');
  if (o.agentListen && !o.agentTlsCert && !o.dev)
    throw new UsageError('--agent-listen needs --agent-tls-cert and --agent-tls-key (only --dev makes a self-signed one)');
  if (o.agentCa && !o.agentTlsCert) throw new UsageError('--agent-ca needs --agent-tls-cert (it anchors that certificate)');
  // --dev gives the demo fleet an agent door too, with a self-signed certificate, on a port
  // chosen the same way every time: the admin port + 1 (issue 20: it used to be random and
  // unsaid), or any free port when the admin port is (--listen HOST:0, as tests and the demo do).
  const agentAt = o.agentListen ? parseListen(o.agentListen) : o.dev ? { host, port: port === 0 ? 0 : port + 1 } : undefined;
  if (agentAt && agentAt.port > 65535)
    throw new UsageError(`the agent listener would be on port ${agentAt.port} (--listen's port + 1): choose one with --agent-listen`);
  if (o.agentUrl && !agentAt) throw new UsageError('--agent-url needs an agent listener (--agent-listen)');
  const tlsLib = await import('../../server/lib/agent-tls.js');
  const { bindsEveryAddress } = tlsLib;
  try {
    if (o.agentUrl) tlsLib.parseAgentUrl(o.agentUrl);
  } catch (e) {
    if (e instanceof tlsLib.AgentTlsError) throw new UsageError(e.message);
    throw e;
  }
  // Agents are told where to connect; an address that binds every interface tells them nothing.
  if (agentAt && !o.agentUrl && bindsEveryAddress(agentAt.host)) {
    const shown = agentAt.host.includes(':') ? `[${agentAt.host}]` : agentAt.host;
    throw new UsageError(
      `the agent listener binds every address (${shown}:${agentAt.port}), which agents cannot connect to: add --agent-url https://NAME:${agentAt.port || 8443} (the name agents reach this server by, in its certificate)`,
    );
  }
  if ((o.devPassword || o.devNodes || o.devAgents) && !o.dev)
    throw new UsageError('--dev-password, --dev-nodes and --dev-agents need --dev');
  const timeouts = {
    requestMs: o.requestTimeout === undefined ? undefined : o.requestTimeout * 1000,
    headersMs: o.headersTimeout === undefined ? undefined : o.headersTimeout * 1000,
    keepAliveMs: o.keepAliveTimeout === undefined ? undefined : o.keepAliveTimeout * 1000,
    agentKeepAliveMs: o.agentKeepAliveTimeout === undefined ? undefined : o.agentKeepAliveTimeout * 1000,
    shutdownGraceMs: o.shutdownGrace === undefined ? undefined : o.shutdownGrace * 1000,
  };
  const { DEFAULT_TIMEOUTS } = await import('../../server/context.js');
  if ((timeouts.headersMs ?? DEFAULT_TIMEOUTS.headersMs) > (timeouts.requestMs ?? DEFAULT_TIMEOUTS.requestMs)) {
    throw new UsageError('--headers-timeout cannot be longer than --request-timeout');
  }
  return { host, port, agentAt, timeouts };
}

/** Runs the server as the flags say; returns when it has shut down. */
export async function serve(ctx: Ctx, o: ServerOpts): Promise<void> {
  const { host, port, agentAt, timeouts } = await checkFlags(o);
  // From here on a SIGHUP is kept until the server can act on it (onSighup), instead of ending it.
  holdReloads();
  // A worker of --workers (started by this command's primary): the primary read the secrets
  // and bootstrapped the database; the worker serves.
  const { workerSetup, defaultWorkers } = await import('../../server/cluster.js');
  const setup = workerSetup(ctx.env);
  const adminPassword = setup
    ? undefined
    : o.adminPasswordStdin
      ? await readStdinSecret(ctx.io, 'the admin password')
      : ctx.env.FLEETCTL_ADMIN_PASSWORD;
  if (adminPassword !== undefined && adminPassword.length < PASSWORD_MIN_LENGTH) {
    throw new UsageError(`the admin password must have at least ${PASSWORD_MIN_LENGTH} characters`);
  }
  const db = o.db ?? (ctx.env.FLEETCTL_DB || undefined);
  const { isPostgresUrl } = await import('../../server/store/db.js');
  if ((o.dbPool !== undefined || o.dbCa) && !(db && isPostgresUrl(db)))
    throw new UsageError('--db-pool and --db-ca need a postgres:// database (--db or FLEETCTL_DB)');
  if (o.fixPermissions && db && isPostgresUrl(db))
    throw new UsageError('--fix-permissions is for a SQLite file; PostgreSQL keeps its own access rules');
  const { startServer, ServerSetupError } = await import('../../server/start.js');
  const { AgentTlsError } = await import('../../server/lib/agent-tls.js');
  const { MissingDependencyError } = await import('../../server/store/db.js');
  const failed = (e: unknown): never => {
    if (e instanceof ServerSetupError || e instanceof MissingDependencyError || e instanceof AgentTlsError)
      throw new CliError(e.message, ExitCode.error);
    if ((e as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      const busy = (e as { port?: number }).port;
      if (agentAt && busy === agentAt.port && busy !== port) {
        throw new CliError(
          `address ${agentAt.host}:${busy} of the agent listener is already in use${o.agentListen ? '' : " (--dev's default: --listen's port + 1)"}: choose another with --agent-listen`,
          ExitCode.unavailable,
        );
      }
      throw new CliError(`address ${o.listen} is already in use: choose another with --listen`, ExitCode.unavailable);
    }
    throw e;
  };
  const options: import('../../server/server-types.js').ServerOptions = {
    host,
    port,
    // --dev without a database: a temporary one; with one, the demo fleet is seeded into it.
    dbPath: db ?? (o.dev ? undefined : defaultDbPath(ctx.env)),
    dbPool: o.dbPool,
    dbCaFile: o.dbCa,
    trustProxy: o.trustProxy,
    dev: o.dev,
    devPassword: o.devPassword,
    devNodes: o.devNodes,
    adminPassword,
    adminUsername: o.adminUsername,
    createEnvs: o.createEnv,
    jwtSecret: ctx.env.FLEETCTL_JWT_SECRET,
    loginRateLimit: o.loginRateLimit,
    apiRateLimit: o.apiRateLimit,
    deniedRateLimit: o.deniedRateLimit,
    accountLoginLimit: o.accountLoginLimit,
    timeouts: Object.fromEntries(Object.entries(timeouts).filter(([, v]) => v !== undefined)),
    fixPermissions: o.fixPermissions,
    warn: (line) => ctx.io.err(`${line}\n`),
    logJson: o.log,
    tls: o.tlsCert && o.tlsKey ? { certFile: o.tlsCert, keyFile: o.tlsKey } : undefined,
    agent: agentAt
      ? { ...agentAt, certFile: o.agentTlsCert, keyFile: o.agentTlsKey, caFile: o.agentCa, maxInFlight: o.agentMaxInFlight }
      : undefined,
    agentUrl: o.agentUrl,
    enrollWindowSeconds: o.enrollWindow,
    detailRefreshSeconds: o.detailRefresh,
    sinkDir: o.sinkDir,
    defaultSinkDir: join(dirname(defaultDbPath(ctx.env)), 'sinks'),
    carveMaxBytes: o.carveMaxSize,
    sinkBacklogBytes: o.sinkBacklogSize,
    sinkBacklogAgeMs: o.sinkBacklogAge,
    metricsListen: o.metricsListen ? parseListen(o.metricsListen) : undefined,
  };
  // The agent door's files are checked before anything starts (with --workers, before any
  // worker would fail on them): one line naming the flag to fix.
  if (o.agentTlsCert && o.agentTlsKey && !setup) {
    const tlsLib = await import('../../server/lib/agent-tls.js');
    try {
      tlsLib.loadAgentTls(
        { certFile: o.agentTlsCert, keyFile: o.agentTlsKey, caFile: o.agentCa },
        { agentHost: o.agentUrl ? tlsLib.parseAgentUrl(o.agentUrl).host : undefined },
      );
    } catch (e) {
      failed(e);
    }
  }
  const pgWhere = db && isPostgresUrl(db) ? (await import('../../server/store/postgres.js')).redactUrl(db) : undefined;
  if (setup) return serveAsWorker(options, setup, failed);
  const workers = o.workers ?? defaultWorkers();
  if (workers > 1)
    return serveAsPrimary(
      ctx,
      o,
      options,
      workers,
      failed,
      pgWhere ?? db ?? defaultDbPath(ctx.env),
      db ? undefined : 'temporary database (deleted on exit)',
    );
  let server;
  try {
    server = await startServer(options);
  } catch (e) {
    failed(e);
  }
  server = server!;
  // The last line of defence behind each task's own error handling (issue 18): a promise
  // nobody awaited must not end a server that thousands of agents depend on. It is a bug,
  // so it is logged as one (with its stack) and counted, and the server goes on.
  process.on('unhandledRejection', (e) => void server.deps.faults.report('BUG: unhandled rejection', e));
  const seededInto = pgWhere ?? db;
  const say = sayer(ctx, o);
  if (server.demo)
    say(banner(server.url, server.demo, seededInto ? `demo fleet seeded into ${seededInto}` : 'temporary database (deleted on exit)'));
  else await printListening(say, server.url, pgWhere ?? db ?? defaultDbPath(ctx.env), server.deps.db);
  if (server.agent) {
    const { describeTrust } = await import('../../server/lib/agent-tls.js');
    say(
      `Agent API (osquery TLS) listening on ${server.agent.url}; certificate ${server.agent.certFile}\n${describeTrust(server.agent.tls, server.deps.agentIdentity?.hostname ?? server.agent.address)}\n`,
    );
  }
  if (server.metricsUrl) say(`Prometheus metrics at ${server.metricsUrl}\n`);
  onReload(server);
  if (o.log) logStart(server);
  // Live agents for the demo: the simulator in this process, enrolled like a real install.
  const slog = server.deps.log;
  const agents =
    server.demo && server.agent
      ? await startDemoAgents(say, o, server.url, server.demo.password, server.agent, (line) => slog.event('info', 'demo_agents', line))
      : undefined;
  await new Promise<void>((resolve) => {
    const stop = () => {
      slog.event('info', 'shutdown', 'Shutting down: finishing in-flight requests...');
      void (agents?.stop() ?? Promise.resolve()).then(() => server.close()).then(resolve);
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}

type Failed = (e: unknown) => never;

/** The server's log format for lines the command itself writes (the primary's, the banner under --log). */
function serverLogOf(ctx: Ctx, json = true): import('../../server/lib/server-log.js').ServerLog {
  return serverLog({ json, write: (t) => ctx.io.err(t) });
}
type Ctx = import('../../context.js').Context;

/**
 * Where the banner goes: stderr (stdout is a stdout sink's NDJSON, issue 28); under --log, as one
 * `banner` event of the JSON log, so that every line there is JSON (issue 27).
 */
type Say = (text: string) => void;
function sayer(ctx: Ctx, o: ServerOpts): Say {
  if (!o.log) return (text) => ctx.io.err(text);
  let log: import('../../server/lib/server-log.js').ServerLog | undefined;
  return (text) => {
    log ??= serverLogOf(ctx);
    log.event('info', 'banner', text.trimEnd());
  };
}

/** The banner of a server without the demo fleet: where it listens, its database, its environments. */
async function printListening(
  say: Say,
  url: string,
  where: string,
  db: import('kysely').Kysely<import('../../server/store/schema.js').DB>,
): Promise<void> {
  const envs = await db.selectFrom('environments').select('name').orderBy('name').execute();
  say(
    `fleetctl reference server listening on ${url} (database ${where})\n` +
      `Environments: ${envs.length ? envs.map((e) => e.name).join(', ') : 'none yet (add with --create-env NAME)'}\n`,
  );
}

/** --dev-agents: the simulator in this process, enrolled like a real install (one process or the primary of --workers). */
async function startDemoAgents(
  say: Say,
  o: ServerOpts,
  url: string,
  password: string,
  agent: { url: string; certPem: string },
  log: (line: string) => void,
): Promise<{ stop(): Promise<void> } | undefined> {
  if (!o.devAgents) return undefined;
  const { startDevAgents } = await import('../../agent-sim/dev.js');
  const { sim, hosts } = await startDevAgents({
    apiUrl: url,
    username: o.adminUsername,
    password,
    env: 'prod',
    count: o.devAgents,
    ca: agent.certPem,
    log: (line) => log(`agents: ${line}`),
  });
  say(
    `Simulated agents: ${sim.enrolled} of ${o.devAgents} enrolled in prod over ${agent.url}, tagged live-agents (${hosts
      .slice(0, 3)
      .map((h) => h.hostname)
      .join(', ')}${hosts.length > 3 ? ', ...' : ''}).\n` +
      '  They answer live queries and carves: fleetctl query run "SELECT * FROM os_version" --target tag:live-agents\n',
  );
  return sim;
}

/**
 * A SIGHUP that comes while the server starts (before its reload handler is in place) would end
 * it, as Node does by default: `systemctl reload` right after `systemctl start`, which returns
 * once the service runs, killed it when the machine was slow (seen in deploy-real-agent at load
 * 15: the port answered, the primary had not yet reached its handler). It is kept instead, and
 * acted on once, when the handler is set (onSighup).
 */
let heldReload: { pending: boolean; early: () => void } | undefined;

function holdReloads(): void {
  const held = {
    pending: false,
    early: () => {
      held.pending = true;
    },
  };
  process.on('SIGHUP', held.early);
  heldReload = held;
}

/** The SIGHUP handler, in place of the hold: a signal kept meanwhile is acted on now. */
function onSighup(handler: () => void): void {
  process.on('SIGHUP', handler);
  const held = heldReload;
  heldReload = undefined;
  if (!held) return;
  process.off('SIGHUP', held.early);
  if (held.pending) handler();
}

/**
 * SIGHUP (systemctl reload): the agent certificate, key and anchor are read again (a renewal);
 * the outcome is one line. Without a handler Node would end the process.
 */
function onReload(server: import('../../server/server-types.js').RunningServer): void {
  const log = server.deps.log;
  onSighup(() => {
    server.reloadAgentTls().then(
      (line) => log.event('info', 'reload', line),
      (e: Error) => log.event('error', 'reload', e.message),
    );
  });
}

/** --log: the start as an event of the log (the banner on stdout is for people). */
function logStart(server: import('../../server/server-types.js').RunningServer): void {
  server.deps.log.event('info', 'start', `listening on ${server.url}${server.agent ? `; agents on ${server.agent.url}` : ''}`, {
    url: server.url,
    agent_url: server.agent?.url,
    agent_host: server.deps.agentIdentity?.hostname,
    database: server.deps.dialect,
  });
}

/**
 * Resolves at the first SIGINT or SIGTERM (Ctrl-C reaches every process of the group), also one
 * that came while the process was still starting: installed first, it is acted on once the start
 * is done. `keep`: later signals are ignored too (a worker's Ctrl-C is followed by the primary's
 * SIGTERM, which must not cut its drain short); else a second Ctrl-C exits at once (main.ts).
 */
function stopSignal(keep = false): Promise<void> {
  return new Promise((resolve) => {
    const stop = () => {
      if (!keep) {
        process.off('SIGINT', stop);
        process.off('SIGTERM', stop);
      }
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}

/** One process of --workers: serves both doors until SIGTERM, then drains and exits. */
async function serveAsWorker(
  options: import('../../server/server-types.js').ServerOptions,
  setup: import('../../server/cluster.js').WorkerSetup,
  failed: Failed,
): Promise<void> {
  // Ctrl-C during the start is acted on when it is done: the primary waits for this worker.
  const stopped = stopSignal(true);
  const { reportReady, clusterMetricsText, quietWithoutPrimary } = await import('../../server/cluster.js');
  quietWithoutPrimary();
  const { startServer } = await import('../../server/start.js');
  let server;
  try {
    server = await startServer({
      ...options,
      dbPath: setup.dbPath,
      worker: { first: setup.first, tempDir: setup.tempDir },
      agent: options.agent && setup.agentCert ? { ...options.agent, ...setup.agentCert } : options.agent,
      // The primary serves the metrics of every worker on --metrics-listen.
      metricsListen: undefined,
    });
  } catch (e) {
    failed(e);
  }
  server = server!;
  process.on('unhandledRejection', (e) => void server.deps.faults.report('BUG: unhandled rejection', e));
  onReload(server);
  if (options.logJson && setup.first) logStart(server);
  if (server.deps.metrics) server.deps.metrics.aggregate = await clusterMetricsText(server.deps.metrics.registry);
  const agent = server.agent;
  const { describeTrust } = await import('../../server/lib/agent-tls.js');
  reportReady({
    url: server.url,
    agent: agent && {
      url: agent.url,
      address: agent.address,
      certFile: agent.certFile,
      certPem: agent.certPem,
      trust: describeTrust(agent.tls, server.deps.agentIdentity?.hostname ?? agent.address),
    },
  });
  await stopped;
  await server.close();
  process.exit(0);
}

/**
 * The primary of --workers: migrations and bootstrap once, the workers, the banner, the
 * aggregated metrics, the demo agents; on SIGTERM every worker drains before it exits.
 */
async function serveAsPrimary(
  ctx: import('../../context.js').Context,
  o: ServerOpts,
  options: import('../../server/server-types.js').ServerOptions,
  workers: number,
  failed: Failed,
  where: string,
  temporary: string | undefined,
): Promise<void> {
  // From the first moment: a Ctrl-C while the workers start stops them and waits for them
  // (Node's default, ending the primary at once, left workers asking it for their listeners:
  // EPIPE, a stack trace on the terminal).
  let interrupted = false;
  const stopped = stopSignal().then(() => void (interrupted = true));
  const { bootstrapDatabase, listenMetrics } = await import('../../server/start.js');
  const { startWorkers, StartInterrupted } = await import('../../server/cluster.js');
  const graceMs = ((o.shutdownGrace ?? 5) + 15) * 1000;
  let boot;
  try {
    boot = await bootstrapDatabase(options);
  } catch (e) {
    failed(e);
  }
  boot = boot!;
  // The primary's own lines, in the workers' format (JSON under --log).
  const plog = serverLogOf(ctx, !!o.log);
  const log = (line: string) => plog.event('warn', 'workers', line);
  let primary;
  try {
    // One self-signed agent certificate for every worker (--dev without one).
    let agentCert: { certFile: string; keyFile: string } | undefined;
    if (options.agent && !options.agent.certFile && boot.tempDir) {
      const { selfSigned } = await import('../../server/agent/listener.js');
      agentCert = selfSigned(boot.tempDir, options.agent.host);
    }
    if (interrupted) throw new StartInterrupted();
    primary = await startWorkers(workers, { dbPath: boot.dbPath, tempDir: boot.tempDir, agentCert }, { log, stopped, graceMs });
  } catch (e) {
    await boot.close();
    if (e instanceof StartInterrupted) return;
    const code = (e as { exitCode?: number }).exitCode;
    throw new CliError((e as Error).message, code && code > 0 ? (code as ExitCode) : ExitCode.error);
  }
  const { url, agent } = primary.ready;
  const say = sayer(ctx, o);
  if (boot.demo) say(banner(url, boot.demo, options.dbPath ? `demo fleet seeded into ${where}` : (temporary ?? where)));
  else await printListening(say, url, where, boot.store.db);
  if (agent) say(`Agent API (osquery TLS) listening on ${agent.url}; certificate ${agent.certFile}\n${agent.trust}\n`);
  say(`Workers: ${workers} server processes share these ports\n`);
  // systemctl reload: every worker reloads its agent certificate.
  onSighup(() => primary.signal('SIGHUP'));
  await boot.closeStore();
  let metricsServer: import('node:http').Server | undefined;
  if (options.metricsListen) {
    const m = await listenMetrics(
      options.metricsListen,
      () => primary.metrics(),
      primary.metricsContentType,
      (e) => log(`metrics: ${(e as Error).message}`),
    );
    metricsServer = m.server;
    say(`Prometheus metrics at ${m.url}\n`);
  }
  const agents =
    boot.demo && agent && !interrupted
      ? await startDemoAgents(say, o, url, boot.demo.password, agent, (line) => plog.event('info', 'demo_agents', line))
      : undefined;
  await stopped;
  plog.event('info', 'shutdown', 'Shutting down: finishing in-flight requests...');
  await agents?.stop();
  // Each worker's own drain is bounded by the grace; past it and a margin, it is killed.
  await primary.stop(graceMs);
  if (metricsServer) await new Promise((r) => metricsServer.close(r));
  await boot.close();
}
