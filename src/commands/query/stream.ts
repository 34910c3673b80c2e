// The results of a distributed query as nodes answer: polled from the results endpoint with
// `after_id` (the last answer seen), each new answer printed at once. Machine formats carry
// the API items (one result set per node); table and csv show one line per row, prefixed by
// the node's hostname (the NODE column, sized from the longest targeted hostname).
import type { Context } from '../../context.js';
import type { FleetApi } from '../../client/index.js';
import type { QueryResult, QueryResultsPage } from '../../api/index.js';
import { createListWriter, validateFields, type ListWriter } from '../../output/index.js';
import { sanitize } from '../../output/cell.js';
import type { LiveRun } from './live-run.js';

const PAGE = 1000;

export interface StreamOptions {
  env: string;
  name: string;
  /** Nodes expected to answer (0: unknown; the results page says). */
  expected: number;
  /** Stop polling at this time (ms since epoch); undefined: one pass over what is there. */
  deadline?: number;
  /** Stop once every online target has answered (--exit). */
  exitWhenOnlineAnswered?: boolean;
  /** The run this stream belongs to: its interruption stops the wait. */
  run?: LiveRun;
  pollMs?: number;
}

type Row = Record<string, unknown>;

export interface StreamResult {
  answered: number;
  expected: number;
  /** Answers with a non-zero status (osquery's error). */
  errors: number;
  rows: number;
  /** Targets online at the last poll, and how many of them had not answered (undefined: the server does not say). */
  online?: number;
  onlinePending?: number;
  interrupted: boolean;
  /** Ended because every online target had answered (--exit). */
  onlineDone: boolean;
}

/** The server's label (fleetctl's: the hostname, with the UUID's start for clones), else the hostname, else the UUID. */
const nodeName = (r: QueryResult) => r.node || r.hostname || r.uuid;

/** Prints the answers of query `name` as they arrive. */
export async function streamResults(ctx: Context, api: FleetApi, o: StreamOptions): Promise<StreamResult> {
  const data = ctx.wantsData() && ctx.output().format !== 'csv';
  // Machine formats carry the API's items: --fields is checked against their schema, before the
  // first request (table and csv rows have the columns the SQL selected, known only from the data).
  const schema = data ? (await import('../../api/index.js')).QueryResult : undefined;
  if (schema && ctx.output().fields) validateFields(ctx.output().fields!, undefined, [], schema);
  let items: ListWriter<QueryResult> | undefined;
  let rows: ListWriter<Row> | undefined;
  // Made at the first page, which tells the longest hostname among the targets.
  const writers = (p: QueryResultsPage) => {
    if (data) items ??= createListWriter<QueryResult>(ctx.io, { ...ctx.output(), schema });
    else {
      const width = Math.max(p.hostname_width ?? 0, 'NODE'.length);
      rows ??= createListWriter<Row>(ctx.io, ctx.output(), [], { stream: o.deadline !== undefined, hints: { node: { id: true, width } } });
    }
  };
  let lastId = 0;
  let expected = o.expected;
  const nodes = new Set<string>();
  let rowCount = 0;
  let errors = 0;
  let online: number | undefined;
  let onlinePending: number | undefined;
  let onlineDone = false;
  const progress = ctx.io.stderr.isTTY === true && o.deadline !== undefined;
  const started = Date.now();
  const showProgress = () => {
    if (!progress) return;
    const of = expected > 0 ? `/${expected}` : '';
    const live = online !== undefined ? `, ${online} online` : '';
    ctx.io.err(`\r\x1b[K${nodes.size}${of} answered${live} (${Math.round((Date.now() - started) / 1000)} s)`);
  };
  const interrupted = () => o.run?.interrupted ?? false;
  try {
    for (;;) {
      // Everything after the last answer seen, a page at a time.
      for (;;) {
        const p = await api.queries.results(o.env, o.name, { after_id: lastId, page_size: PAGE });
        writers(p);
        if (p.expected !== undefined && p.expected > 0) expected = p.expected;
        if (p.online !== undefined) online = p.online;
        if (p.online_pending !== undefined) onlinePending = p.online_pending;
        const fresh = p.items.filter((r) => r.id > lastId);
        for (const r of fresh) {
          lastId = Math.max(lastId, r.id);
          nodes.add(r.uuid);
          if (r.status !== 0) errors++;
        }
        if (fresh.length > 0) {
          if (progress) ctx.io.err('\r\x1b[K');
          if (items) await items.write(fresh);
          else {
            const batch: Row[] = [];
            for (const r of fresh) {
              if (r.status !== 0) ctx.io.err(`${sanitize(nodeName(r))}: error: ${sanitize(r.error || `status ${r.status}`)}\n`);
              for (const row of r.rows ?? []) batch.push({ node: nodeName(r), ...row });
            }
            rowCount += batch.length;
            await rows!.write(batch);
          }
        }
        if (fresh.length < PAGE) break;
      }
      showProgress();
      const done = expected > 0 && nodes.size >= expected;
      onlineDone = !done && o.exitWhenOnlineAnswered === true && onlinePending === 0;
      if (done || onlineDone || interrupted() || o.deadline === undefined || Date.now() >= o.deadline) break;
      const wait = Math.min(o.pollMs ?? 1000, Math.max(0, o.deadline - Date.now()));
      if (o.run) await o.run.sleep(wait);
      else await new Promise((r) => setTimeout(r, wait));
      if (interrupted()) break;
    }
  } finally {
    if (progress) ctx.io.err('\r\x1b[K');
  }
  if (!items && !rows) writers({} as QueryResultsPage);
  await (items ?? rows)!.end();
  return { answered: nodes.size, expected, errors, rows: rowCount, online, onlinePending, interrupted: interrupted(), onlineDone };
}
