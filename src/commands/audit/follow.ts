// `audit list --follow`: poll the newest-first audit list and hand over, oldest first, the
// entries that appeared since the last poll. Audit ids only grow, so "new" = id above the
// highest seen; a burst larger than one page is caught by reading further pages until a
// known id shows up.
import type { AuditLogEntry, Page } from '../../api/index.js';

export type FetchPage = (page: number, pageSize: number) => Promise<Page<AuditLogEntry>>;

export const FOLLOW_PAGE_SIZE = 100;

/** Entries newer than `afterId`, oldest first. */
export async function entriesAfter(fetchPage: FetchPage, afterId: number, pageSize = FOLLOW_PAGE_SIZE): Promise<AuditLogEntry[]> {
  const fresh: AuditLogEntry[] = [];
  for (let page = 1; ; page++) {
    const p = await fetchPage(page, pageSize);
    const newer = p.items.filter((e) => e.id > afterId);
    fresh.push(...newer);
    // A page holding an already-seen id (or a short page) means nothing older is new.
    if (newer.length < p.items.length || page >= p.total_pages || p.items.length === 0) break;
  }
  const unique = new Map(fresh.map((e) => [e.id, e]));
  return [...unique.values()].sort((a, b) => a.id - b.id);
}

export interface FollowOptions {
  fetchPage: FetchPage;
  /** Highest id already shown (0: none). */
  afterId: number;
  intervalMs: number;
  emit: (entries: AuditLogEntry[]) => Promise<void>;
  signal?: AbortSignal;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

function defaultSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        resolve();
      },
      { once: true },
    );
  });
}

/** Polls until `signal` aborts (the CLI: until Ctrl-C ends the process). */
export async function follow(o: FollowOptions): Promise<void> {
  const sleep = o.sleep ?? defaultSleep;
  let last = o.afterId;
  while (!o.signal?.aborted) {
    await sleep(o.intervalMs, o.signal);
    if (o.signal?.aborted) return;
    const fresh = await entriesAfter(o.fetchPage, last);
    if (fresh.length === 0) continue;
    last = fresh[fresh.length - 1].id;
    await o.emit(fresh);
  }
}
