// The results of a distributed query as nodes answer: polled from the results endpoint (one
// item per node, oldest first), each new answer printed at once. Machine formats carry the
// API items; table and csv show one line per row, prefixed by the node.
import type { Context } from '../../context.js';
import type { FleetApi } from '../../client/index.js';
import type { QueryResult } from '../../api/index.js';
import { createListWriter, type ListWriter } from '../../output/index.js';
import { sanitize } from '../../output/cell.js';

const PAGE = 500;

export interface StreamOptions {
  env: string;
  name: string;
  /** Nodes expected to answer (0: unknown, poll until the deadline). */
  expected: number;
  /** Stop polling at this time (ms since epoch); undefined: one pass over what is there. */
  deadline?: number;
  pollMs?: number;
}

type Row = Record<string, unknown>;

/** The rows of one node's answer: `data` is an array of row objects (anything else: none). */
function rowsOf(r: QueryResult): Row[] {
  let d = r.data;
  if (typeof d === 'string') {
    try {
      d = JSON.parse(d);
    } catch {
      return [];
    }
  }
  return Array.isArray(d) ? (d.filter((x) => x && typeof x === 'object') as Row[]) : [];
}

function errorText(r: QueryResult): string {
  if (typeof r.data === 'string' && !r.data.trim().startsWith('[')) return r.data;
  const m = (r as unknown as { message?: unknown }).message;
  return typeof m === 'string' && m ? m : `status ${r.status}`;
}

export interface StreamResult {
  answered: number;
  rows: number;
  interrupted: boolean;
}

/** Prints the answers of query `name`; returns how many nodes answered. */
export async function streamResults(ctx: Context, api: FleetApi, o: StreamOptions): Promise<StreamResult> {
  const data = ctx.wantsData() && ctx.output().format !== 'csv';
  const items: ListWriter<QueryResult> | undefined = data ? createListWriter<QueryResult>(ctx.io, ctx.output()) : undefined;
  const rows: ListWriter<Row> | undefined = data ? undefined : createListWriter<Row>(ctx.io, ctx.output());
  const seen = new Set<number>();
  const nodes = new Set<string>();
  let rowCount = 0;
  const progress = ctx.io.stderr.isTTY === true && o.deadline !== undefined;
  const started = Date.now();
  const showProgress = () => {
    if (!progress) return;
    const total = o.expected > 0 ? `/${o.expected}` : '';
    ctx.io.err(`\r\x1b[K${nodes.size}${total} nodes answered (${Math.round((Date.now() - started) / 1000)} s)`);
  };
  let interrupted = false;
  const onSigint = () => {
    interrupted = true;
  };
  process.on('SIGINT', onSigint);
  try {
    for (;;) {
      // Answers are appended oldest first: read from the page holding the first unseen one.
      for (let page = Math.floor(seen.size / PAGE) + 1; ; page++) {
        const p = await api.queries.results(o.env, o.name, { page, page_size: PAGE });
        const fresh = p.items.filter((r) => !seen.has(r.id));
        for (const r of fresh) {
          seen.add(r.id);
          nodes.add(r.uuid);
        }
        if (fresh.length > 0) {
          if (progress) ctx.io.err('\r\x1b[K');
          if (items) await items.write(fresh);
          else {
            const batch: Row[] = [];
            for (const r of fresh) {
              if (r.status !== 0) ctx.io.err(`${sanitize(r.uuid)}: error: ${sanitize(errorText(r))}\n`);
              for (const row of rowsOf(r)) batch.push({ node: r.uuid, ...row });
            }
            rowCount += batch.length;
            await rows!.write(batch);
          }
        }
        if (page >= p.total_pages || p.items.length < PAGE) break;
      }
      showProgress();
      const done = o.expected > 0 && nodes.size >= o.expected;
      if (done || interrupted || o.deadline === undefined || Date.now() >= o.deadline) break;
      await new Promise((r) => setTimeout(r, Math.min(o.pollMs ?? 1000, Math.max(0, o.deadline! - Date.now()))));
      if (interrupted) break;
    }
  } finally {
    process.off('SIGINT', onSigint);
    if (progress) ctx.io.err('\r\x1b[K');
  }
  await (items ?? rows)!.end();
  return { answered: nodes.size, rows: rowCount, interrupted };
}
