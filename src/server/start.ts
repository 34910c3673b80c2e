// Starting the reference server: open the store, bootstrap, build the app, listen.
import { mkdirSync, mkdtempSync, rmSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import { DEFAULT_CARVE_MAX_BYTES, DEFAULT_DETAIL_REFRESH_SECONDS, DEFAULT_TIMEOUTS, type Deps, type ServerConfig } from './context.js';
import { isPostgresUrl, openSqlite, type Store } from './store/db.js';
import { buildApp } from './app.js';
import { createSuperAdmin, ensureSettings, jwtSecret, rotateJwtSecret, userCount } from './bootstrap.js';
import { checkPrivateKeyFile, prepareDatabaseFile } from './store/file-modes.js';
import { HttpLifecycle } from './lib/http-lifecycle.js';
import { SessionPurger } from './services/auth/session-purge.js';
import { RetentionPurger } from './services/retention/purge.js';
import { ExpiredCleanup } from './services/agents/expired-cleanup.js';
import { DenialAudit } from './services/auth/denial-audit.js';
import { LoginGuard } from './services/auth/login-guard.js';
import { ServerSetupError } from './setup-error.js';
import { seedDemo } from './seed.js';
import { createEnvironment } from './services/environments/environment-admin.js';
import { followServer, type AgentIdentity } from './services/environments/agent-identity.js';
import { parseAgentUrl, type AgentTls } from './lib/agent-tls.js';
import { openAgentDoor } from './agent/listener.js';
import { Faults } from './lib/faults.js';
import { DEFAULT_BACKLOG_AGE_MS, DEFAULT_BACKLOG_BYTES, Delivery } from './services/delivery/delivery.js';
import { Spool } from './services/delivery/spool.js';
import { Metrics } from './lib/metrics.js';
import { serverLog } from './lib/server-log.js';
import { LogWatch } from './services/logs/follow.js';
import { ReportPurger } from './services/logs/retention.js';
import { attachLogs } from './services/logs/attach.js';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import type { RunningServer, ServerOptions } from './server-types.js';

export { ServerSetupError };

/**
 * A random demo password of letters and digits: it is printed into a shell command line, and one
 * starting with "-" would be read as an option when passed back as `--dev-password VALUE`.
 */
export function demoPassword(): string {
  const alnum = 'abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789';
  return Array.from(randomBytes(14), (b) => alnum[b % alnum.length]).join('');
}

/** How the refusal tells the operator to fix a database open to other users. */
const fixHint = (dbPath: string, dev: boolean | undefined) =>
  dev ? 'fleetctl server --dev' : `fleetctl server --db ${dbPath} --fix-permissions`;

/** GET /metrics on a listener of its own, without authentication (--metrics-listen). */
export async function listenMetrics(
  at: { host: string; port: number },
  text: () => Promise<string>,
  contentType: string,
  onError: (e: unknown) => void,
): Promise<{ server: HttpServer; url: string }> {
  const server = createHttpServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: GET /metrics\n');
      return;
    }
    text().then(
      (body) => res.writeHead(200, { 'content-type': contentType }).end(body),
      (e) => {
        onError(e);
        res.writeHead(500).end();
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(at.port, at.host, () => resolve());
  });
  const a = server.address();
  return {
    server,
    url: `http://${at.host.includes(':') ? `[${at.host}]` : at.host}:${typeof a === 'object' && a ? a.port : at.port}/metrics`,
  };
}

/** The database opened, migrated and bootstrapped; what serving it needs next. */
interface Opened {
  store: Store;
  tempDir?: string;
  ownsTemp: boolean;
  dbPath: string;
  deps: Deps;
  config: ServerConfig;
  faults: Faults;
  metrics: Metrics;
  demo?: RunningServer['demo'];
  now: () => Date;
}

/**
 * Opens the database (migrations run on open), makes its file private, and bootstraps it:
 * settings, the JWT secret, the first super-admin or the demo fleet. A cluster worker's primary
 * has done the bootstrap: the worker only opens. On failure the store is closed.
 */
async function openAndBootstrap(opts: ServerOptions, serves = true): Promise<Opened> {
  let tempDir: string | undefined;
  let dbPath = opts.dbPath;
  const postgres = dbPath !== undefined && isPostgresUrl(dbPath);
  const worker = opts.worker;
  // The dev certificate of the agent door lives in a temporary directory either way (a worker's
  // is the primary's, removed by the primary).
  if (worker) tempDir = worker.tempDir;
  else if (opts.dev) tempDir = mkdtempSync(join(tmpdir(), 'fleetctl-dev-'));
  const ownsTemp = !worker;
  const seedInto = opts.dev && dbPath !== undefined;
  if (opts.dev && !dbPath) dbPath = join(tempDir!, 'fleet.db');
  if (!dbPath) throw new ServerSetupError('no database path given');
  if (opts.tls) checkPrivateKeyFile(opts.tls.keyFile, 'TLS key');
  let loosened: string[] = [];
  let store: Store;
  // The server's own trouble (database down or full, a failing task): logged, counted, /healthz.
  // One voice for the server (issue 27): text lines (to `warn` when given, else stderr), or JSON lines under --log.
  const log = serverLog({
    json: !!opts.logJson,
    write: !opts.logJson && opts.warn ? (text) => opts.warn!(text.replace(/\n$/, '')) : undefined,
  });
  const warn = (line: string, event = 'warning') => log.event('warn', event, line);
  const faults = new Faults((line, f) =>
    log.event(f?.level ?? 'warn', f?.event ?? 'fault', line, f ? { ...f, event: undefined, level: undefined } : undefined),
  );
  // The primary of --workers serves nothing: no process metrics (their event-loop monitor wakes it).
  const metrics = new Metrics({ processMetrics: serves });
  faults.onFault((where, kind) => metrics.fault(where, kind));
  try {
    if (postgres) {
      const { openPostgres } = await import('./store/postgres.js');
      store = await openPostgres(dbPath, {
        pool: opts.dbPool,
        caFile: opts.dbCaFile,
        onError: (e) => void faults.report('database connection', e),
      });
    } else {
      // File modes guard a local file; PostgreSQL guards its data with its own access rules.
      loosened = prepareDatabaseFile(dbPath, !!opts.fixPermissions, fixHint(dbPath, opts.dev && !seedInto));
      store = await openSqlite(dbPath, {
        warn: (line) => log.event('warn', 'sqlite', line),
        onCheckpoint: (mode, ms) => metrics.checkpoint(mode, ms),
        onWrite: (stage, ms) => metrics.write(stage, ms),
        warm: serves,
      });
    }
  } catch (e) {
    if (tempDir && ownsTemp) rmSync(tempDir, { recursive: true, force: true });
    throw e;
  }
  const now = () => new Date();
  try {
    if (loosened.length > 0) {
      const ended = await rotateJwtSecret(store.db);
      warn(
        `warning: ${loosened.map((f) => basename(f)).join(', ')} ${loosened.length > 1 ? 'were' : 'was'} open to other users: now 0600; ` +
          `the JWT signing secret was rotated, ending ${ended} session(s) (users log in again)` +
          (opts.jwtSecret ? '; FLEETCTL_JWT_SECRET is in use and was not changed' : '') +
          '. Enroll secrets, node keys and TOTP seeds in the file may have been read too: consider rotating them.',
      );
    }
    // Replicas starting together on one empty database bootstrap one after the other.
    const secret = await store.exclusive(async () => {
      await ensureSettings(store.db, now());
      return jwtSecret(store.db, opts.jwtSecret);
    });
    const config: ServerConfig = {
      jwtSecret: secret,
      issuer: 'fleetctl',
      loginRateLimit: opts.loginRateLimit ?? 10,
      apiRateLimit: opts.apiRateLimit ?? 1200,
      deniedRateLimit: opts.deniedRateLimit ?? 60,
      accountLoginLimit: opts.accountLoginLimit ?? 10,
      bodyLimit: 1024 * 1024,
      timeouts: { ...DEFAULT_TIMEOUTS, ...opts.timeouts },
      carveMaxBytes: opts.carveMaxBytes ?? DEFAULT_CARVE_MAX_BYTES,
      sinkBacklogBytes: opts.sinkBacklogBytes ?? DEFAULT_BACKLOG_BYTES,
      sinkBacklogAgeMs: opts.sinkBacklogAgeMs ?? DEFAULT_BACKLOG_AGE_MS,
      enrollWindowSeconds: opts.enrollWindowSeconds ?? 0,
      detailRefreshSeconds: opts.detailRefreshSeconds ?? DEFAULT_DETAIL_REFRESH_SECONDS,
      sinkDir: resolve(
        opts.sinkDir ??
          (tempDir
            ? join(tempDir, 'sinks')
            : postgres
              ? (opts.defaultSinkDir ?? join(tmpdir(), 'fleetctl-sinks'))
              : join(dirname(resolve(dbPath)), 'sinks')),
      ),
    };
    // Only the server's user reaches the logs agents sent (issue 18).
    mkdirSync(config.sinkDir, { recursive: true, mode: 0o700 });
    const deps = {
      db: store.db,
      dialect: store.dialect,
      now,
      config,
      faults,
      log,
      outOfSpace: store.outOfSpace,
      metrics,
      write: store.write,
      writeSteps: store.writeSteps,
      writeNow: store.writeNow,
      readNow: store.readNow,
    } as Deps;
    deps.loginGuard = new LoginGuard(deps);

    let demo: RunningServer['demo'];
    if (!worker)
      await store.exclusive(async () => {
        if (opts.dev) {
          if (seedInto && (await userCount(store.db)) > 0) {
            throw new ServerSetupError(
              '--dev seeds a demo fleet into a database without users, and this one has users: start other replicas of it without --dev',
            );
          }
          const password = opts.devPassword ?? demoPassword();
          await createSuperAdmin(store.db, 'admin', password, now());
          const summary = await seedDemo(store.db, { now: now(), password, hostname: `${opts.host}:${opts.port}`, nodes: opts.devNodes });
          await store.analyze();
          demo = { ...summary, password };
        } else if ((await userCount(store.db)) === 0) {
          if (!opts.adminPassword) {
            throw new ServerSetupError(
              'new database has no users: give the first super-admin a password with --admin-password-stdin or FLEETCTL_ADMIN_PASSWORD',
            );
          }
          await createSuperAdmin(store.db, opts.adminUsername ?? 'admin', opts.adminPassword, now());
        }
      });

    return { store, tempDir, ownsTemp, dbPath, deps, config, faults, metrics, demo, now };
  } catch (e) {
    await store.close();
    if (tempDir && ownsTemp) rmSync(tempDir, { recursive: true, force: true });
    throw e;
  }
}

/**
 * For the primary of `--workers N` (server/cluster.ts): migrations and the one-time bootstrap,
 * before any worker opens the database. The temporary directory of --dev stays until `close`.
 */
export async function bootstrapDatabase(opts: ServerOptions): Promise<{
  demo?: RunningServer['demo'];
  tempDir?: string;
  dbPath: string;
  store: Store;
  closeStore(): Promise<void>;
  close(): Promise<void>;
}> {
  const o = await openAndBootstrap({ ...opts, worker: undefined }, false);
  let closing: Promise<void> | undefined;
  // The primary needs the database only to bootstrap and print the banner: closed then, so it
  // keeps no connections, threads or timers while the workers serve.
  const closeStore = () =>
    (closing ??= (async () => {
      await o.store.close().catch(() => undefined);
      o.faults.stop();
    })());
  return {
    demo: o.demo,
    tempDir: o.tempDir,
    dbPath: o.dbPath,
    store: o.store,
    closeStore,
    close: async () => {
      await closeStore();
      if (o.tempDir) rmSync(o.tempDir, { recursive: true, force: true });
    },
  };
}

export async function startServer(opts: ServerOptions): Promise<RunningServer> {
  const { store, tempDir, ownsTemp, deps, config, faults, metrics, demo, now } = await openAndBootstrap(opts);
  const worker = opts.worker;
  try {
    const https = opts.tls ? { cert: readFileSync(opts.tls.certFile), key: readFileSync(opts.tls.keyFile) } : undefined;
    const lifecycle = new HttpLifecycle(config.timeouts);
    // The admin door and its background tasks on the store's admin connections (on SQLite,
    // threads of their own: store/sqlite-thread.ts), so an admin read never holds the event loop
    // the agent door answers on.
    // (Its clock is the server's: a test that moves deps.now moves both doors.)
    // Log followers (issue 30) wait on one watch per process, reading on the admin connections.
    const logWatch = new LogWatch(store.adminDb, (e) => void faults.report('log followers', e));
    metrics.sources.logFollowers = () => logWatch.size;
    const adminDeps = { ...deps, db: store.adminDb, now: () => deps.now(), logWatch } as Deps;
    adminDeps.loginGuard = new LoginGuard(adminDeps);
    const denials = new DenialAudit(adminDeps);
    const purger = new SessionPurger(adminDeps);
    const cleanup = new ExpiredCleanup(adminDeps);
    const reportPurger = new ReportPurger(adminDeps);
    const app = await buildApp(adminDeps, {
      https,
      lifecycle,
      denials,
      trustProxy: opts.trustProxy,
      maxInFlight: opts.adminMaxInFlight ?? 256,
    });
    const address = await app.listen({ host: opts.host, port: opts.port });
    denials.start();
    purger.start();
    cleanup.start();
    reportPurger.start();
    const url = address.replace('[::1]', 'localhost');
    // The log spool and its delivery run in every serving process: the leases pick one process
    // per sink; per-host sinks (stdout) only in the only process or the first worker.
    const spool = new Spool(deps);
    const delivery = new Delivery(deps, store.adminDb, spool, !worker || worker.first);
    // Issue 30: the logs read the spool: reports kept in its append transaction, followers woken
    // by its commits, its pruner keeping each environment's retention.
    attachLogs({ spool, delivery, deps, adminDeps, logWatch });
    delivery.start();
    const agentUrl = opts.agentUrl ? parseAgentUrl(opts.agentUrl) : undefined;
    const agent = opts.agent
      ? await openAgentDoor(deps, { ...opts.agent, agentHost: agentUrl?.host, selfSignedDir: tempDir, denials, spool, delivery }).catch(
          async (e) => {
            await delivery.stop(0);
            await app.close();
            throw e;
          },
        )
      : undefined;
    let metricsServer: HttpServer | undefined;
    let metricsUrl: string | undefined;
    if (opts.metricsListen)
      ({ server: metricsServer, url: metricsUrl } = await listenMetrics(
        opts.metricsListen,
        () => metrics.text(),
        metrics.contentType,
        (e) => faults.report('metrics', e),
      ));
    // The agent door's public identity (issue 27): osquery's --tls_hostname is --agent-url's
    // NAME[:PORT], else the agent listener's address (the command refuses a bind-all address
    // without --agent-url); without an agent door, the admin address (osctrl: the TLS service).
    // One object in both doors' Deps, updated in place on SIGHUP.
    const identity: AgentIdentity = {
      hostname: agentUrl?.tlsHostname ?? agent?.address ?? new URL(url).host,
      certificate: agent?.tls.anchorPem ?? '',
    };
    deps.agentIdentity = identity;
    adminDeps.agentIdentity = identity;
    for (const w of agent?.tls.warnings ?? []) deps.log.event('warn', 'agent_tls', w);
    // One-time changes: by the only process, or the first worker of --workers.
    const once = !worker || worker.first;
    // Retention by age (issue 27): one process purges (the only one, or the first worker; replicas
    // each run one, and their deletes of the same old rows are harmless).
    const retention = once ? new RetentionPurger(adminDeps, (line) => deps.log.event('info', 'retention', line)) : undefined;
    retention?.start();
    if (once)
      await store.exclusive(async () => {
        for (const name of opts.createEnvs ?? []) {
          const exists = await store.db.selectFrom('environments').select('id').where('name', '=', name).executeTakeFirst();
          if (!exists) {
            await createEnvironment(store.db, name, {
              hostname: identity.hostname,
              certificate: identity.certificate,
              now: now(),
              enrollWindowSeconds: deps.config.enrollWindowSeconds,
            });
          }
        }
        // Environments that follow the server take its name and anchor (a restart with a renewed
        // certificate or a new --agent-url is picked up here). Without an agent door there is
        // nothing to follow.
        if (agent) await followServer(store.db, identity, now());
      });
    const reloadAgentTls = async (): Promise<string> => {
      if (!agent) return 'SIGHUP: no agent listener, nothing to reload';
      const before = agent.tls;
      let tls: AgentTls;
      try {
        tls = agent.reloadTls();
      } catch (e) {
        throw new Error(`SIGHUP: the agent certificate was not reloaded, the current one stays in use: ${(e as Error).message}`);
      }
      identity.certificate = tls.anchorPem;
      for (const w of tls.warnings) deps.log.event('warn', 'agent_tls', w);
      const changed = await followServer(store.db, identity, now());
      const same = before.leaf.fingerprint256 === tls.leaf.fingerprint256;
      return (
        `SIGHUP: agent certificate ${same ? 'unchanged' : 'reloaded'} (serial ${tls.leaf.serial}, valid until ${tls.leaf.validTo}); ` +
        (before.anchorPem === tls.anchorPem
          ? 'trust anchor unchanged'
          : `trust anchor changed: ${changed.certificates} environment(s) now hand it out`)
      );
    };
    return {
      url,
      app,
      deps,
      store,
      demo,
      denials,
      agent,
      retention,
      metricsUrl,
      spool,
      delivery,
      reloadAgentTls,
      logWatch,
      async close() {
        // Both doors drain at once (so /healthz answers 503 from the first moment, and the process
        // ends within one grace plus about a second, issue 18); the agent door then flushes its
        // check-ins and log queues; then the services stop, then the store.
        // Followers are answered first: they hold connections the drain would otherwise wait for.
        const followersDone = logWatch.close();
        await Promise.all([agent?.close(), lifecycle.drain(app.server)]);
        // What agents were answered for is committed; the sinks finish the batch in progress.
        await spool.drain();
        await delivery.stop(config.timeouts.shutdownGraceMs);
        await Promise.all([purger.stop(), cleanup.stop()]);
        await retention?.stop();
        await reportPurger.stop();
        await denials.stop();
        await app.close();
        // Every task that reads or writes has ended (each stop above waits for its run in
        // progress): nothing touches the store once it is closed.
        await followersDone;
        await store.close();
        faults.stop();
        if (metricsServer) await new Promise((r) => metricsServer.close(r));
        if (tempDir && ownsTemp) rmSync(tempDir, { recursive: true, force: true });
      },
    };
  } catch (e) {
    await store.close();
    if (tempDir && ownsTemp) rmSync(tempDir, { recursive: true, force: true });
    throw e;
  }
}
