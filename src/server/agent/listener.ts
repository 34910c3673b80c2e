// Starting the agent door: its TLS material (given, or self-signed for --dev), the services with
// explicit lifetimes (check-in batching, log delivery) and the listener. start.ts calls this and
// drains it on shutdown.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import type { Deps } from '../context.js';
import { CheckinBatcher } from '../services/agents/checkins.js';
import { LogDelivery } from '../services/delivery/log-delivery.js';
import type { Spool } from '../services/delivery/spool.js';
import type { Delivery } from '../services/delivery/delivery.js';
import { AgentState } from './state.js';
import { WriteGroup } from '../store/write-group.js';
import { writeInTransaction } from '../store/db.js';
import { DetailRefresh } from '../services/agents/node-details.js';
import { buildAgentApp } from './server.js';
import { HttpLifecycle } from '../lib/http-lifecycle.js';
import type { DenialAudit } from '../services/auth/denial-audit.js';
import { loadAgentTls, type AgentTls } from '../lib/agent-tls.js';

export interface AgentListenOptions {
  host: string;
  port: number;
  certFile?: string;
  keyFile?: string;
  /** --agent-ca: the root agents are handed (a PEM file), or 'system' (pin nothing: a public CA). */
  caFile?: string;
  /** The host of --agent-url: the certificate must name it. */
  agentHost?: string;
  /** Where a self-signed certificate is written when no cert/key is given (--dev only). */
  selfSignedDir?: string;
  /** Agent requests handled at once before the door answers 503 (default DEFAULT_AGENT_MAX_IN_FLIGHT). */
  maxInFlight?: number;
  /** Where refused enrolls are audited (start.ts's aggregated denial audit). */
  denials?: DenialAudit;
  /** The process's log spool and sink delivery (start.ts). */
  spool: Spool;
  delivery?: Delivery;
}

/**
 * Agent requests in progress at once per server process (--agent-max-in-flight): a latency
 * budget. An agent request costs the server about 0.2 ms of CPU (npm run bench:agents), so 512
 * admitted at once are worked off in about 100 ms, which osquery's intervals never notice; beyond
 * it agents are answered 503 and retry. Requests count from their headers, so the ones that
 * queued in the kernel during any pause of the event loop are all admitted in one turn: at 128,
 * a 10-minute run of 20,000 agents shed 19 check-ins in a window whose slowest admitted request
 * took 84 ms, shedding a burst the server was about to absorb.
 */
export const DEFAULT_AGENT_MAX_IN_FLIGHT = 512;

export interface AgentDoor {
  /** host:port of the listener, for --tls_hostname. */
  address: string;
  url: string;
  certFile: string;
  /** The chain served (leaf and intermediates). */
  certPem: string;
  /** What agents are handed to trust ('' = nothing pinned), and how it was chosen (lib/agent-tls.ts). */
  tls: AgentTls;
  /**
   * Reads the certificate, key and anchor files again (a renewal) and serves them to new
   * connections; throws AgentTlsError (the old ones stay) when the new files are not usable.
   */
  reloadTls(): AgentTls;
  /** Writes the check-ins waiting in the batch now (a failure is reported, never thrown). */
  flushCheckins(): Promise<void>;
  close(): Promise<void>;
}

/**
 * A self-signed certificate for localhost and 127.0.0.1. openssl, because node:crypto makes
 * keys but not X.509 certificates.
 */
export function selfSigned(dir: string, host: string): { certFile: string; keyFile: string } {
  const certFile = join(dir, 'agent-cert.pem');
  const keyFile = join(dir, 'agent-key.pem');
  const san = [
    'DNS:localhost',
    'IP:127.0.0.1',
    ...(host && host !== 'localhost' && host !== '127.0.0.1' ? [/^[\d.]+$/.test(host) ? `IP:${host}` : `DNS:${host}`] : []),
  ];
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-days',
      '365',
      '-subj',
      '/CN=fleetctl agent API',
      '-addext',
      `subjectAltName=${san.join(',')}`,
      '-keyout',
      keyFile,
      '-out',
      certFile,
    ],
    { stdio: 'ignore' },
  );
  return { certFile, keyFile };
}

export async function openAgentDoor(deps: Deps, o: AgentListenOptions): Promise<AgentDoor> {
  let files = o.certFile && o.keyFile ? { certFile: o.certFile, keyFile: o.keyFile } : undefined;
  if (!files && o.selfSignedDir) files = selfSigned(o.selfSignedDir, o.host);
  if (!files) throw new Error('the agent listener needs --agent-tls-cert and --agent-tls-key (or --dev for a self-signed one)');
  const tlsFiles = { ...files, caFile: o.caFile };
  let tls = loadAgentTls(tlsFiles, { agentHost: o.agentHost, now: deps.now() });
  const state = new AgentState(deps);
  const details = new DetailRefresh(deps);
  const checkins = new CheckinBatcher(deps);
  const logs = new LogDelivery(deps, o.spool, o.delivery, (envId, source) => state.sinksFor(envId, source));
  if (deps.metrics) deps.metrics.sources.checkinsPending = () => checkins.size;
  const lifecycle = new HttpLifecycle(deps.config.timeouts);
  const enrolls = new WriteGroup(deps.write ?? ((statements) => writeInTransaction(deps.db, statements)));
  const app = await buildAgentApp(
    deps,
    { checkins, logs, state, enrolls, details },
    {
      https: { cert: Buffer.from(tls.chainPem), key: Buffer.from(tls.keyPem) },
      lifecycle,
      maxInFlight: o.maxInFlight ?? DEFAULT_AGENT_MAX_IN_FLIGHT,
      denials: o.denials,
      exposeInFlight: (read) => {
        if (deps.metrics) deps.metrics.sources.agentInFlight = read;
      },
      onDone: (r) => {
        deps.metrics?.agentRequest(r);
        // The secret paths are never logged: the endpoint's kind names the request.
        deps.log.request({ door: 'agent', endpoint: r.endpoint, status: r.status, ms: r.ms, node: r.node });
      },
    },
  );
  const listening = await app.listen({ host: o.host, port: o.port });
  checkins.start();
  const port = new URL(listening).port;
  const address = `${o.host.includes(':') ? `[${o.host}]` : o.host}:${port}`;
  return {
    address,
    url: `https://${address}`,
    certFile: files.certFile,
    get certPem() {
      return tls.chainPem;
    },
    get tls() {
      return tls;
    },
    reloadTls() {
      const next = loadAgentTls(tlsFiles, { agentHost: o.agentHost, now: deps.now() });
      // New connections get the new chain; kept-alive ones finish with the one they negotiated.
      (app.server as import('node:https').Server).setSecureContext({ cert: next.chainPem, key: next.keyPem });
      tls = next;
      return tls;
    },
    flushCheckins: () => checkins.flush(),
    async close() {
      // The bounded drain of the admin door: requests in progress get the grace, stalled uploads
      // are answered 503 and cut, so SIGTERM ends within grace + about a second (issue 18).
      await lifecycle.drain(app.server);
      await app.close();
      await checkins.stop();
      await o.spool.drain();
    },
  };
}
