// The agent door's bounds, in one place: what an agent may send and how much the door does at once.
import { MAX_CARVE_BLOCK } from '../services/agents/carve-uploads.js';

/** On the wire (osquery sends small bodies; logs are batched by --logger_tls_period). */
export const AGENT_BODY_LIMIT = 1024 * 1024;
/** After gunzip: bounds what a small gzip body may inflate to. */
export const AGENT_INFLATED_LIMIT = 16 * 1024 * 1024;
/** A gzip body that inflates past this is "big": decoding it takes one of BIG_BODIES_AT_ONCE. */
export const BIG_BODY = 1024 * 1024;
/** Big bodies decoded at once; one more is answered 503 before it is inflated (memory and CPU bound). */
export const BIG_BODIES_AT_ONCE = 1;
/** Gzip bodies declaring at most this many inflated bytes are inflated on the event loop (tens of microseconds). */
export const SMALL_INFLATED = 64 * 1024;
/** How long a refusal for room (spool busy, big-body slots) waits before it is answered (a flooder's pace). */
export const REFUSAL_PAUSE_MS = 1000;
/** Seconds a 503 asks the agent to wait (osquery retries at its own interval anyway). */
export const RETRY_AFTER_SECONDS = 5;
/** Carve blocks (up to MAX_CARVE_BLOCK, ~11 MB as base64) received at once; others wait their turn. */
export const CARVE_BLOCKS_AT_ONCE = 4;
/** The body limit of a carve block: the largest block in base64 plus the JSON around it. */
export const CARVE_BLOCK_BODY_LIMIT = Math.ceil(MAX_CARVE_BLOCK / 3) * 4 + 64 * 1024;
