// Walks a paginated list page by page: memory stays one page, whatever the fleet size.
import type { Page } from '../api/index.js';

export interface PaginateOptions {
  pageSize: number;
  /** Stop after this many items in all (undefined: every item). */
  limit?: number;
  startPage?: number;
}

export async function* paginate<T>(fetchPage: (page: number, pageSize: number) => Promise<Page<T>>, o: PaginateOptions): AsyncGenerator<T[], void> {
  let remaining = o.limit ?? Infinity;
  for (let page = o.startPage ?? 1; remaining > 0; page++) {
    const p = await fetchPage(page, o.pageSize);
    const items = p.items.slice(0, remaining);
    if (items.length > 0) yield items;
    remaining -= items.length;
    if (page >= p.total_pages || p.items.length === 0) return;
  }
}
