// Walks a paginated list page by page: memory stays about two pages, whatever the fleet size.
import type { Page } from '../api/index.js';

export interface PaginateOptions {
  pageSize: number;
  /** Stop after this many items in all (undefined: every item). */
  limit?: number;
  startPage?: number;
}

export interface PageChunk<T> {
  items: T[];
  /** The server's total_items for the whole (filtered) list, as of this page; undefined when the server gave only a lower bound. */
  total: number | undefined;
}

/**
 * Pages with one page of read-ahead: the request for page n+1 is in flight while the caller
 * prints page n, so printing and the network overlap and neither waits for the other. Never
 * more than one request ahead, so memory stays bounded. A failed read-ahead surfaces when its
 * page is reached.
 */
export async function* pages<T>(
  fetchPage: (page: number, pageSize: number) => Promise<Page<T>>,
  o: PaginateOptions,
): AsyncGenerator<PageChunk<T>, void> {
  let remaining = o.limit ?? Infinity;
  let page = o.startPage ?? 1;
  let next: Promise<Page<T>> | undefined = fetchPage(page, o.pageSize);
  while (next && remaining > 0) {
    const p: Page<T> = await next;
    const items = p.items.slice(0, remaining);
    remaining -= items.length;
    const more: boolean = page < p.total_pages && p.items.length > 0 && remaining > 0;
    next = more ? fetchPage(++page, o.pageSize) : undefined;
    // An unhandled rejection must not kill the process while the caller is still printing.
    next?.catch(() => undefined);
    if (items.length > 0) yield { items, total: p.total_items_exact === false ? undefined : p.total_items };
  }
}

/** The items of every page, a page at a time. */
export async function* paginate<T>(
  fetchPage: (page: number, pageSize: number) => Promise<Page<T>>,
  o: PaginateOptions,
): AsyncGenerator<T[], void> {
  for await (const chunk of pages(fetchPage, o)) yield chunk.items;
}
