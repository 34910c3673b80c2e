// `fleetctl schedule report ENV NAME` (issue 30): a scheduled query's current rows across the
// fleet, as the server keeps them from the results agents send (a snapshot query's last snapshot,
// a differential query's rows added and not removed since). Machine formats carry the API's items
// (one per node, with its rows and when it reported); table and csv one line per row, the node first.
import type { Context } from '../../context.js';
import type { ReportNode, ReportPage } from '../../api/index.js';
import { REPORT_PAGE_MAX } from '../../api/constants.js';
import { createListWriter, validateFields, type ListWriter } from '../../output/index.js';
import { safeText } from '../../output/sanitize.js';

export interface ReportOpts {
  pack?: string;
  node?: string;
  all?: boolean;
  limit?: number;
}

type Row = Record<string, unknown>;

/** The name osquery gives a pack's query (its default pack delimiter, `_`). */
export const packQueryName = (pack: string, query: string) => `pack_${pack}_${query}`;

export async function report(ctx: Context, env: string, query: string, o: ReportOpts): Promise<void> {
  const name = o.pack ? packQueryName(o.pack, query) : query;
  const api = await ctx.api();
  const data = ctx.wantsData() && ctx.output().format !== 'csv';
  const schema = data ? (await import('../../api/index.js')).ReportNode : undefined;
  const out = { ...ctx.output(), schema };
  if (schema && out.fields) validateFields(out.fields, undefined, [], schema);
  let nodes: ListWriter<ReportNode> | undefined;
  let rows: ListWriter<Row> | undefined;
  // Made at the first page, which tells the longest hostname: the NODE column is never cut.
  const writers = (p: ReportPage) => {
    if (data) nodes ??= createListWriter<ReportNode>(ctx.io, out);
    else
      rows ??= createListWriter<Row>(ctx.io, out, [], {
        stream: o.all === true,
        hints: { node: { id: true, width: Math.max(p.hostname_width, 'NODE'.length) } },
      });
  };
  const pageSize = Math.min(o.limit ?? (o.all ? REPORT_PAGE_MAX : 100), REPORT_PAGE_MAX);
  let cursor: string | undefined;
  let shown = 0;
  let first: ReportPage | undefined;
  let more = false;
  do {
    const p = await api.logs.report(env, name, { node: o.node, limit: Math.min(pageSize, (o.limit ?? Infinity) - shown), cursor });
    first ??= p;
    writers(p);
    shown += p.items.length;
    if (nodes) await nodes.write(p.items);
    else await rows!.write(p.items.flatMap((n) => n.rows.map((r) => ({ node: n.hostname || n.node_uuid, ...r }))));
    cursor = p.next_cursor ?? undefined;
    more = cursor !== undefined;
  } while (cursor && (o.all || (o.limit !== undefined && shown < o.limit)));
  await (nodes ?? rows)!.end();
  if (!ctx.io.stdoutIsTTY || ctx.wantsData()) return;
  const f = first;
  if (f.total_nodes === 0)
    ctx.io.err(`No node has reported ${safeText(name)} in ${safeText(env)}${o.node ? ` (node ${safeText(o.node)})` : ''}.\n`);
  else if (rows && rows.count === 0) ctx.io.err(`${f.total_nodes} node(s) reported ${safeText(name)}, with no rows.\n`);
  else if (more) ctx.io.err(`Showing ${shown} of ${f.total_nodes} nodes (${f.total_rows} rows in all); --all for every node\n`);
}
