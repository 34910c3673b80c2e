// Issue 30: what the agents said. Log lines (the spool's, as the sinks get them) and query
// reports (a scheduled query's current rows per node), read by `fleetctl logs` and
// `fleetctl schedule report` (docs/api.md "Logs and query reports").
import type { Static } from '@sinclair/typebox';
import { Type } from './type.js';
import { Timestamp } from './common.js';
import { LogLineTypes, LogOrders, StatusSeverities } from './constants.js';
export { LogLineTypes, LogOrders, StatusSeverities };

/**
 * One log line: the envelope every sink receives (docs/api.md "Log delivery"), plus `id`, its
 * place in the store (lines only ever get higher ids). `entry` is what the agent sent, as it sent
 * it: a result (`action` added/removed/snapshot with `columns` or `snapshot`, or `diffResults`)
 * or a status line (`severity`, `filename`, `line`, `message`).
 */
export const LogLine = Type.Object({
  id: Type.Integer(),
  environment: Type.String(),
  node_uuid: Type.String(),
  hostname: Type.String(),
  log_type: Type.String(),
  name: Type.Optional(Type.String()),
  received_at: Timestamp,
  entry: Type.Unknown(),
});
export type LogLine = Static<typeof LogLine>;

/**
 * GET /api/v1/logs/{env}: a page of lines. `next_cursor`: more lines of the range may follow in
 * this order, read on from there; null: the read reached the end of the range (newest first: the
 * oldest line; oldest first: the newest line stored now, or `until`). `follow_cursor`: the place up
 * to which this read looked (newest first: the store's newest line when it ran): given back as
 * `cursor` with `order=asc`, it returns only what comes after, so a follower passes the last
 * answer's `follow_cursor` each time and never sees a line twice.
 */
export const LogPage = Type.Object({
  items: Type.Array(LogLine),
  next_cursor: Type.Union([Type.String(), Type.Null()]),
  follow_cursor: Type.String(),
});
export type LogPage = Static<typeof LogPage>;

/** The query string of GET /api/v1/logs/{env}; every value a string (no coercion). */
export const LogsQuery = Type.Object({
  type: Type.Optional(Type.String()),
  query: Type.Optional(Type.String()),
  pack: Type.Optional(Type.String()),
  node: Type.Optional(Type.String()),
  since: Type.Optional(Type.String()),
  until: Type.Optional(Type.String()),
  severity: Type.Optional(Type.String()),
  q: Type.Optional(Type.String()),
  order: Type.Optional(Type.String()),
  limit: Type.Optional(Type.String()),
  cursor: Type.Optional(Type.String()),
  wait: Type.Optional(Type.String()),
});
export type LogsQuery = Static<typeof LogsQuery>;

/** One node's current rows of a scheduled query. */
export const ReportNode = Type.Object({
  node_uuid: Type.String(),
  hostname: Type.String(),
  /** When the node last sent results of this query. */
  reported_at: Timestamp,
  /** `snapshot` (the rows are its last snapshot) or `differential` (built from added and removed rows). */
  kind: Type.String(),
  /** osquery's epoch and counter of the last results (differential queries; 0 for snapshots). */
  epoch: Type.Integer(),
  counter: Type.Integer(),
  rows: Type.Array(Type.Record(Type.String(), Type.Unknown())),
  /** More rows than a report keeps per node (the oldest were let go). */
  truncated: Type.Boolean(),
});
export type ReportNode = Static<typeof ReportNode>;

/** GET /api/v1/reports/{env}/{name}: nodes by hostname, a page at a time. */
export const ReportPage = Type.Object({
  name: Type.String(),
  items: Type.Array(ReportNode),
  next_cursor: Type.Union([Type.String(), Type.Null()]),
  /** Nodes holding rows of this query (the `node` filter applied), and their rows. */
  total_nodes: Type.Integer(),
  total_rows: Type.Integer(),
  /** The longest hostname among them, so a streamed table sizes its NODE column at once. */
  hostname_width: Type.Integer(),
});
export type ReportPage = Static<typeof ReportPage>;

/** GET /api/v1/reports/{env}: the queries that have a report. */
export const ReportSummary = Type.Object({
  name: Type.String(),
  nodes: Type.Integer(),
  rows: Type.Integer(),
  last_reported_at: Timestamp,
});
export type ReportSummary = Static<typeof ReportSummary>;

export const ReportQuery = Type.Object({
  node: Type.Optional(Type.String()),
  limit: Type.Optional(Type.String()),
  cursor: Type.Optional(Type.String()),
});
export type ReportQuery = Static<typeof ReportQuery>;

export type LogLineType = (typeof LogLineTypes)[number];
export type StatusSeverity = (typeof StatusSeverities)[number];
export type LogOrder = (typeof LogOrders)[number];
