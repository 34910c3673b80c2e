// What the agent door's parts share: the services it drives, its options, and the fields its
// hooks add to a request.
import type { EnvironmentRow } from '../store/schema.js';
import type { DenialAudit } from '../services/auth/denial-audit.js';
import type { CheckinBatcher } from '../services/agents/checkins.js';
import type { LogDelivery } from '../services/delivery/log-delivery.js';
import type { HttpLifecycle } from '../lib/http-lifecycle.js';
import type { AgentState } from './state.js';
import type { WriteGroup } from '../store/write-group.js';
import type { DetailRefresh } from '../services/agents/node-details.js';

export type Endpoint = 'enroll' | 'config' | 'log' | 'read' | 'write' | 'carve_init' | 'carve_block';

export interface AgentServices {
  checkins: CheckinBatcher;
  logs: LogDelivery;
  /** Environments, node keys, live queries and sinks, cached per counter (agent/state.ts). */
  state: AgentState;
  /** Group commit of enrolls (store/write-group.ts). */
  enrolls: WriteGroup;
  /** Which nodes are due a detail refresh (issue 27). */
  details: DetailRefresh;
}

/** What the agent door is given besides deps and services (start.ts / listener.ts). */
export interface AgentDoorOptions {
  https: { cert: Buffer; key: Buffer };
  /** Timeouts and the bounded drain on SIGTERM (the same rules as the admin door). */
  lifecycle: HttpLifecycle;
  /** Agent requests handled at once; more are answered 503 at once (osquery retries). */
  maxInFlight: number;
  /** Called when a request ends: request log and metrics. */
  onDone?: (r: { endpoint: string; status: number; ms: number; node?: string; shed?: boolean; invalid?: boolean }) => void;
  /** Failed enrolls are audited here, aggregated per address and minute (as denied admin requests). */
  denials?: DenialAudit;
  /** Tells the owner how to read the number of requests in progress (metrics). */
  exposeInFlight?: (read: () => number) => void;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The agent door's view of a POST: its environment, endpoint and (once known) node. */
    agentEnv?: EnvironmentRow;
    agentEndpoint?: Endpoint;
    agentNode?: string;
    /** Gives back the request's in-flight slot early (a refusal that pauses before it answers). */
    agentRelease?: () => void;
    /** Answered node_invalid for an unknown node key (counted: agents told to re-enroll). */
    agentInvalid?: boolean;
    /** When admission saw the request (the request log's duration). */
    agentT0?: number;
    /** Answered 503 by admission, over the in-flight bound. */
    agentShed?: boolean;
  }
}
