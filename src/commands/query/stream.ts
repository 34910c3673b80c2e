// The results of a distributed query as nodes answer: polled from the results endpoint with
// `after_id` (the last answer seen), each new answer printed at once. Machine formats carry
// the API items (one result set per node); table and csv show one line per row, prefixed by
// the node's hostname.
import type { Context } from '../../context.js';
import type { FleetApi } from '../../client/index.js';
import type { QueryResult } from '../../api/index.js';
import { createListWriter, type ListWriter } from '../../output/index.js';
import { sanitize } from '../../output/cell.js';

const PAGE = 1000;

export interface StreamOptions {
  env: string;
  name: string;
  /** Nodes expected to answer (0: unknown; the results page says). */
  expected: number;
  /** Stop polling at this time (ms since epoch); undefined: one pass over what is there. */
  deadline?: number;
  pollMs?: number;
}

type Row = Record<string, unknown>;

export interface StreamResult {
  answered: number;
  expected: number;
  rows: number;
  interrupted: boolean;
}

const nodeName = (r: QueryResult) => r.hostname || r.uuid;

/** Prints the answers of query `name` as they arrive. */
export async function streamResults(ctx: Context, api: FleetApi, o: StreamOptions): Promise<StreamResult> {
  const data = ctx.wantsData() && ctx.output().format !== 'csv';
  const items: ListWriter<QueryResult> | undefined = data ? createListWriter<QueryResult>(ctx.io, ctx.output()) : undefined;
  const rows: ListWriter<Row> | undefined = data ? undefined : createListWriter<Row>(ctx.io, ctx.output());
  let lastId = 0;
  let expected = o.expected;
  const nodes = new Set<string>();
  let rowCount = 0;
  const progress = ctx.io.stderr.isTTY === true && o.deadline !== undefined;
  const started = Date.now();
  const showProgress = () => {
    if (progress) ctx.io.err(`\r\x1b[K${nodes.size}${expected > 0 ? `/${expected}` : ''} nodes answered (${Math.round((Date.now() - started) / 1000)} s)`);
  };
  let interrupted = false;
  const onSigint = () => {
    interrupted = true;
  };
  process.on('SIGINT', onSigint);
  try {
    for (;;) {
      // Everything after the last answer seen, a page at a time.
      for (;;) {
        const p = await api.queries.results(o.env, o.name, { after_id: lastId, page_size: PAGE });
        if (p.expected !== undefined && p.expected > 0) expected = p.expected;
        const fresh = p.items.filter((r) => r.id > lastId);
        for (const r of fresh) {
          lastId = Math.max(lastId, r.id);
          nodes.add(r.uuid);
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
      if (done || interrupted || o.deadline === undefined || Date.now() >= o.deadline) break;
      await new Promise((r) => setTimeout(r, Math.min(o.pollMs ?? 1000, Math.max(0, o.deadline! - Date.now()))));
      if (interrupted) break;
    }
  } finally {
    process.off('SIGINT', onSigint);
    if (progress) ctx.io.err('\r\x1b[K');
  }
  await (items ?? rows)!.end();
  return { answered: nodes.size, expected, rows: rowCount, interrupted };
}
