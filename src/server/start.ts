// Starting the reference server: open the store, bootstrap, build the app, listen.
import { mkdtempSync, mkdirSync, rmSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { Deps, ServerConfig } from './context.js';
import { openSqlite, type Store } from './store/db.js';
import { buildApp, type App } from './app.js';
import { createSuperAdmin, ensureSettings, jwtSecret, userCount } from './bootstrap.js';
import { createEnvironment, seedDemo, type DemoSummary } from './seed.js';
import { randomUUID } from 'node:crypto';
import { openAgentDoor, type AgentDoor, type AgentListenOptions } from './agent/listener.js';

export interface ServerOptions {
  host: string;
  port: number;
  /** SQLite file; ignored with dev (a temporary database is used). */
  dbPath?: string;
  dev?: boolean;
  /** Password of super-admin `admin` in dev mode (random when absent). */
  devPassword?: string;
  /** Size of the demo fleet in dev mode (default 2,200 nodes). */
  devNodes?: number;
  /** Password for the first super-admin of a new database (outside dev). */
  adminPassword?: string;
  adminUsername?: string;
  /** Environments to create at start when missing (outside dev: the API has no way to add one). */
  createEnvs?: string[];
  jwtSecret?: string;
  loginRateLimit?: number;
  apiRateLimit?: number;
  logger?: boolean | object;
  tls?: { certFile: string; keyFile: string };
  /** The agent door (osquery's TLS API) on its own listener; --dev makes a self-signed certificate. */
  agent?: Omit<AgentListenOptions, 'selfSignedDir'>;
}

export interface RunningServer {
  url: string;
  app: App;
  deps: Deps;
  store: Store;
  /** Demo fleet of --dev; `extra` is more banner text (e.g. the MFA user's secret). */
  demo?: DemoSummary & { password: string };
  /** The agent door when --agent-listen was given. */
  agent?: AgentDoor;
  close(): Promise<void>;
}

export class ServerSetupError extends Error {}

export async function startServer(opts: ServerOptions): Promise<RunningServer> {
  let tempDir: string | undefined;
  let dbPath = opts.dbPath;
  if (opts.dev) {
    tempDir = mkdtempSync(join(tmpdir(), 'fleetctl-dev-'));
    dbPath = join(tempDir, 'fleet.db');
  }
  if (!dbPath) throw new ServerSetupError('no database path given');
  mkdirSync(dirname(dbPath), { recursive: true });
  const store = await openSqlite(dbPath);
  const now = () => new Date();
  try {
    await ensureSettings(store.db, now());
    const config: ServerConfig = {
      jwtSecret: await jwtSecret(store.db, opts.jwtSecret),
      issuer: 'fleetctl',
      loginRateLimit: opts.loginRateLimit ?? 10,
      apiRateLimit: opts.apiRateLimit ?? 1200,
      bodyLimit: 1024 * 1024,
    };
    const deps: Deps = { db: store.db, dialect: store.dialect, now, config };

    let demo: RunningServer['demo'];
    if (opts.dev) {
      const password = opts.devPassword ?? randomBytes(9).toString('base64url');
      await createSuperAdmin(store.db, 'admin', password, now());
      const summary = await seedDemo(store.db, { now: now(), password, hostname: `${opts.host}:${opts.port}`, nodes: opts.devNodes });
      demo = { ...summary, password };
    } else if ((await userCount(store.db)) === 0) {
      if (!opts.adminPassword) {
        throw new ServerSetupError(
          'new database has no users: give the first super-admin a password with --admin-password-stdin or FLEETCTL_ADMIN_PASSWORD',
        );
      }
      await createSuperAdmin(store.db, opts.adminUsername ?? 'admin', opts.adminPassword, now());
    }

    const https = opts.tls ? { cert: readFileSync(opts.tls.certFile), key: readFileSync(opts.tls.keyFile) } : undefined;
    const app = await buildApp(deps, { logger: opts.logger, https });
    const address = await app.listen({ host: opts.host, port: opts.port });
    const url = address.replace('[::1]', 'localhost');
    const agent = opts.agent ? await openAgentDoor(deps, { ...opts.agent, selfSignedDir: tempDir }).catch(async (e) => { await app.close(); throw e; }) : undefined;
    // osquery's --tls_hostname is the agent door when there is one (osctrl: the TLS service).
    const hostname = agent?.address ?? new URL(url).host;
    for (const name of opts.createEnvs ?? []) {
      const exists = await store.db.selectFrom('environments').select('id').where('name', '=', name).executeTakeFirst();
      if (!exists) {
        await createEnvironment(store.db, name, { uuid: randomUUID(), hostname, now: now() });
        if (agent) await store.db.updateTable('environments').set({ certificate: agent.certPem.trim() + '\n' }).where('name', '=', name).execute();
      }
    }
    // The demo environments were created before the port was known: point them at it.
    if (opts.dev) {
      await store.db.updateTable('environments').set({ hostname, ...(agent ? { certificate: agent.certPem.trim() + '\n' } : {}) }).execute();
    }
    return {
      url,
      app,
      deps,
      store,
      demo,
      agent,
      async close() {
        await agent?.close();
        await app.close();
        await store.close();
        if (tempDir) rmSync(tempDir, { recursive: true, force: true });
      },
    };
  } catch (e) {
    await store.close();
    if (tempDir) rmSync(tempDir, { recursive: true, force: true });
    throw e;
  }
}
