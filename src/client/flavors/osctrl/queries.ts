import {
  MessageResponse,
  Paginated,
  type Page,
  type QueryResult,
  type QueryResultsPage,
  type QueryRunRequest,
  type QueryRunResponse,
} from '../../../api/index.js';
import { checkAnswer, needs } from '../../validate.js';
import type { FleetResources } from '../../resources/index.js';
import type { OsctrlSession } from './session.js';
import { seg, RawQuery, RawResultsPage, NAME_ANSWER, RESULTS_PAGE, toQuery, toResult } from './shapes.js';

export function queriesResource(s: OsctrlSession) {
  const { http, base, runBody, queryOf, hostnames, readNodes, forgetNodes } = s;
  return {
    ...base.queries,
    run: async (env: string, body: QueryRunRequest): Promise<QueryRunResponse> =>
      checkAnswer<QueryRunResponse>(
        NAME_ANSWER,
        await http.request<unknown>('POST', `api/v1/queries/${seg(env)}`, { body: await runBody(env, body) }),
      ),
    /**
     * osctrl lists by target in the path. Without a status this API lists every query; osctrl's
     * widest list (`all-full`) is every query but the deleted ones (`--status deleted` has those).
     */
    list: async (env: string, query: Parameters<FleetResources['queries']['list']>[1] = {}): Promise<Page<ReturnType<typeof toQuery>>> => {
      const target = query.status ?? 'all-full';
      const raw = await http.request<unknown>('GET', `api/v1/queries/${seg(env)}/list/${seg(target)}`, {
        query: { page: query.page, page_size: query.page_size },
      });
      const p = checkAnswer<Page<Record<string, unknown>>>(needs(Paginated(RawQuery), 'items'), raw);
      return { ...p, items: p.items.map(toQuery) };
    },
    get: queryOf,
    /**
     * osctrl keeps one row per node answer with its rows as JSON text, pages by number (no
     * after_id) and knows no hostnames: the pages after `after_id` are read and converted, the
     * progress comes from the query itself.
     */
    results: async (
      env: string,
      name: string,
      query: Parameters<FleetResources['queries']['results']>[2] = {},
    ): Promise<QueryResultsPage> => {
      const q = await queryOf(env, name);
      const after = query.after_id ?? 0;
      const items: QueryResult[] = [];
      let total = 0;
      for (let page = 1; ; page++) {
        const p = checkAnswer<{
          items: Array<{ id: number; created_at: string; uuid: string; data: string; status: number }>;
          total_pages: number;
          total_items: number;
        }>(
          RawResultsPage,
          await http.request<unknown>('GET', `api/v1/queries/${seg(env)}/results/${seg(name)}`, {
            query: { page, page_size: RESULTS_PAGE },
          }),
        );
        total = p.total_items;
        for (const r of p.items) if (r.id > after) items.push(toResult(r));
        if (page >= p.total_pages || p.items.length === 0) break;
      }
      items.sort((a, b) => a.id - b.id);
      if (items.some((r) => !hostnames.has(r.uuid.toUpperCase()))) {
        if (hostnames.size > 0) forgetNodes(); // a node enrolled since the last read
        await readNodes(env).catch(() => undefined);
      }
      for (const r of items) r.hostname = hostnames.get(r.uuid.toUpperCase()) ?? '';
      const size = query.page_size ?? RESULTS_PAGE;
      return {
        items: items.slice(0, size),
        page: 1,
        page_size: size,
        total_items: total,
        total_pages: total ? Math.ceil(total / size) : 0,
        expected: q.expected,
        answered: q.executions + q.errors,
        query_status: q.status,
      };
    },
    /** osctrl has delete, expire and complete; this API's cancel is its expire (nodes stop picking the query up). */
    action: async (env: string, action: Parameters<FleetResources['queries']['action']>[1], name: string) => {
      // osctrl answers 200 with an empty message to an action it does not know, and changes nothing.
      const act = action === 'cancel' ? 'expire' : action;
      return checkAnswer<{ message: string }>(
        needs(MessageResponse, 'message'),
        await http.request<unknown>('POST', `api/v1/queries/${seg(env)}/${seg(act)}/${seg(name)}`),
      );
    },
  };
}
