// One way to print a list: a paginated one (nodes, carves, audit entries, queries) one page with
// a "Showing" line, or every page (--all / --limit) streamed through the list writer with a
// progress line; a whole one (tags, environments, settings, keys, profiles) at once. Both say
// the same "No X in Y." at a terminal when nothing matched.
import { PAGE_SIZE_MAX } from '../api/constants.js';
import type { Page } from '../api/index.js';
import { pages } from '../client/paginate.js';
import { createListWriter, printList, validateFields, type Column } from '../output/index.js';
import { Progress } from './progress.js';
import type { Context } from '../context.js';

/**
 * Page size of --all / --limit streams: the server's maximum. A page deep into a list costs the
 * server a walk over the entries before it (the offset), so an export of n nodes walks about
 * n * n / (2 * page size) entries: half as many a page doubled that walk. Measured on a
 * 100,000-node demo fleet (54,545 in prod, --all -o jsonl, two runs each): 12.0 and 12.4 s at
 * 250 a page, 8.5 and 8.2 s at 500, against 7.9 and 7.7 s for a raw page loop of 500; 83 and 86
 * MiB. (At 250 it had been the faster one, 4.35 s against 5.2 s, when pages cost the server less.)
 */
export const STREAM_PAGE_SIZE = PAGE_SIZE_MAX;

export interface PageFlags {
  page?: number;
  pageSize?: number;
  limit?: number;
  all?: boolean;
}

export interface PagedListSpec<T> {
  /** Plural noun for messages: "nodes", "carves", "entries". */
  noun: string;
  columns: readonly Column<T>[];
  fetchPage(page: number | undefined, pageSize: number | undefined): Promise<Page<T>>;
  /** Said at a terminal when the list is empty, e.g. "No nodes in prod" or "No nodes in prod match". */
  empty: string;
  /** The item's schema (src/api): --fields is checked against it, before the first request. */
  schema?: object;
}

export async function printPagedList<T>(ctx: Context, o: PageFlags, spec: PagedListSpec<T>): Promise<void> {
  const human = ctx.io.stdoutIsTTY && !ctx.wantsData();
  const out = { ...ctx.output(), schema: spec.schema };
  if (out.fields && spec.schema) validateFields(out.fields, undefined, spec.columns, spec.schema);
  if (o.all || o.limit !== undefined) {
    const pageSize = Math.min(o.pageSize ?? STREAM_PAGE_SIZE, o.limit ?? PAGE_SIZE_MAX, PAGE_SIZE_MAX);
    const writer = createListWriter(ctx.io, out, spec.columns, { stream: o.all === true || (o.limit ?? 0) > pageSize });
    const progress = Progress.start(ctx.io, spec.noun);
    try {
      for await (const { items, total } of pages((page, size) => spec.fetchPage(page, size), { pageSize, limit: o.limit })) {
        progress.update(writer.count + items.length, o.limit === undefined || total === undefined ? total : Math.min(total, o.limit));
        await writer.write(items);
      }
    } finally {
      progress.stop();
    }
    await writer.end();
    if (writer.count === 0 && human) ctx.io.err(`${spec.empty}.\n`);
    return;
  }
  const page = await spec.fetchPage(o.page, o.pageSize);
  await printList(ctx.io, out, page.items, spec.columns);
  if (!human) return;
  if (page.total_items === 0) ctx.io.err(`${spec.empty}.\n`);
  else if (page.total_pages > 1 || page.items.length === 0) {
    const first = (page.page - 1) * page.page_size + 1;
    const more = page.page < page.total_pages ? `; next: --page ${page.page + 1}, or --all` : '';
    const shown = page.items.length ? `${first}-${first + page.items.length - 1}` : 'none';
    // A lower bound (an audit search counted only so far): "at least", as the server counted.
    const atLeast = page.total_items_exact === false;
    const of = atLeast ? `at least ${page.total_items}` : `${page.total_items}`;
    const pagesOf = atLeast ? `${page.total_pages} or more` : `${page.total_pages}`;
    ctx.io.err(`Showing ${shown} of ${of} ${spec.noun} (page ${page.page} of ${pagesOf})${more}\n`);
  }
}

/** A list the server returns whole; at a terminal, an empty one says so (`empty`, without the full stop). */
export async function printWholeList<T>(
  ctx: Context,
  rows: readonly T[],
  columns: readonly Column<T>[],
  empty: string,
  schema?: object,
): Promise<void> {
  await printList(ctx.io, { ...ctx.output(), schema }, rows, columns);
  if (rows.length === 0 && ctx.io.stdoutIsTTY && !ctx.wantsData()) ctx.io.err(`${empty}.\n`);
}
