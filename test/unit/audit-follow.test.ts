import { describe, expect, it } from 'vitest';
import type { AuditLogEntry, Page } from '../../src/api/index.js';
import { entriesAfter, follow } from '../../src/commands/audit/follow.js';

const entry = (id: number): AuditLogEntry => ({
  id,
  created_at: new Date(1_700_000_000_000 + id * 1000).toISOString(),
  env_uuid: '',
  environment_id: 0,
  line: `line ${id}`,
  log_type: 1,
  severity: 1,
  service: 'api',
  source_ip: '127.0.0.1',
  username: 'admin',
});

/** A newest-first audit log over `ids()`, paged as the server does; counts requests. */
function fakeLog(ids: () => number[]) {
  const calls: number[] = [];
  const fetchPage = async (page: number, pageSize: number): Promise<Page<AuditLogEntry>> => {
    calls.push(page);
    const all = [...ids()].sort((a, b) => b - a).map(entry);
    return {
      items: all.slice((page - 1) * pageSize, page * pageSize),
      page,
      page_size: pageSize,
      total_items: all.length,
      total_pages: Math.ceil(all.length / pageSize),
    };
  };
  return { fetchPage, calls };
}

describe('entriesAfter', () => {
  it('returns only newer entries, oldest first, reading one page when it holds a known id', async () => {
    const log = fakeLog(() => [1, 2, 3, 4, 5, 6]);
    expect((await entriesAfter(log.fetchPage, 4, 3)).map((e) => e.id)).toEqual([5, 6]);
    expect(log.calls).toEqual([1]);
  });
  it('reads further pages when a burst is larger than a page', async () => {
    const log = fakeLog(() => Array.from({ length: 25 }, (_, i) => i + 1));
    expect((await entriesAfter(log.fetchPage, 3, 10)).map((e) => e.id)).toEqual(Array.from({ length: 22 }, (_, i) => i + 4));
    expect(log.calls).toEqual([1, 2, 3]);
  });
  it('gives nothing when nothing is new, and everything when nothing was seen', async () => {
    expect(await entriesAfter(fakeLog(() => [1, 2]).fetchPage, 2)).toEqual([]);
    expect((await entriesAfter(fakeLog(() => [1, 2]).fetchPage, 0)).map((e) => e.id)).toEqual([1, 2]);
    expect(await entriesAfter(fakeLog(() => []).fetchPage, 0)).toEqual([]);
  });
});

describe('follow', () => {
  it('emits each new batch once, oldest first, until aborted', async () => {
    let ids = [1, 2];
    const log = fakeLog(() => ids);
    const batches: number[][] = [];
    const ac = new AbortController();
    let ticks = 0;
    const sleep = async () => {
      ticks++;
      if (ticks === 2) ids = [...ids, 3, 4];
      if (ticks === 4) ids = [...ids, 5];
      if (ticks === 5) ac.abort();
    };
    await follow({
      fetchPage: log.fetchPage,
      afterId: 2,
      intervalMs: 2000,
      signal: ac.signal,
      sleep,
      emit: async (es) => void batches.push(es.map((e) => e.id)),
    });
    expect(batches).toEqual([[3, 4], [5]]);
    expect(ticks).toBe(5);
  });
});
