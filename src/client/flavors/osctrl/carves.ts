import { Type } from '../../../api/type.js';
import {
  CarveQuery,
  type CarveDetail,
  type CarveTargets,
  type Page,
  type QueryRunRequest,
  type QueryRunResponse,
} from '../../../api/index.js';
import { checkAnswer, needs } from '../../validate.js';
import type { FleetResources } from '../../resources/index.js';
import type { OsctrlSession } from './session.js';
import { seg, NAME_ANSWER, refuse, CARVE_PAGE, CARVE_FILE } from './shapes.js';

export function carvesResource(s: OsctrlSession) {
  const { http, base, runBody, readNodes, hostnames } = s;
  return {
    ...base.carves,
    list: async (env: string, query: Parameters<FleetResources['carves']['list']>[1] = {}) => {
      const { status, ...rest } = query;
      // osctrl filters with `target`; `pending` is a derived status it cannot filter on.
      if (status === 'pending') refuse('filtering carves by status pending');
      return checkAnswer<Page<CarveQuery>>(
        CARVE_PAGE,
        await http.request<unknown>('GET', `api/v1/carves/${seg(env)}`, { query: { ...rest, target: status } }),
      );
    },
    get: async (env: string, name: string): Promise<CarveDetail> => {
      const d = checkAnswer<{ query: Record<string, unknown>; files: unknown[] }>(
        needs(Type.Object({ query: needs(Type.Object({ name: Type.String() }), 'name'), files: Type.Array(Type.Unknown()) }), 'query'),
        await http.request<unknown>('GET', `api/v1/carves/${seg(env)}/${seg(name)}`),
      );
      const q = d.query;
      const status = q.deleted ? 'DELETED' : q.expired ? 'EXPIRED' : q.completed ? 'COMPLETED' : d.files.length ? 'PENDING' : 'ACTIVE';
      const files = d.files.map((f, i) => checkAnswer<CarveDetail['files'][number]>(CARVE_FILE, f, `files[${i}]`));
      // osctrl's carve files name their node by UUID only: the hostname (NODE, --node HOST) comes from the node list.
      if (files.length) await readNodes(env).catch(() => undefined);
      for (const f of files) f.hostname ??= hostnames.get(f.uuid.toUpperCase()) ?? '';
      return { query: checkAnswer<CarveQuery>(CarveQuery, { carve_status: status, ...q }, 'query'), files };
    },
    // osctrl keeps no node's cadence: carves run falls back to the environment's query interval.
    targets: (): Promise<Partial<CarveTargets>> => Promise.resolve({}),
    run: async (env: string, body: QueryRunRequest): Promise<QueryRunResponse> =>
      checkAnswer<QueryRunResponse>(
        NAME_ANSWER,
        await http.request<unknown>('POST', `api/v1/carves/${seg(env)}`, { body: await runBody(env, body) }),
      ),
    action: async (env: string, action: Parameters<FleetResources['carves']['action']>[1], name: string) =>
      action === 'archive' ? refuse('carve-archive') : action === 'delete' ? refuse('carve-delete') : base.carves.action(env, action, name),
  };
}
