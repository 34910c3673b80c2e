import type { FleetResources } from '../../resources/index.js';
import type { OsctrlSession } from './session.js';

export function nodesResource(s: OsctrlSession) {
  const { base } = s;
  return {
    ...base.nodes,
    list: async (env: string, query: Parameters<FleetResources['nodes']['list']>[1] = {}) => {
      const { order, ...rest } = query;
      return base.nodes.list(env, { ...rest, ...(order ? { dir: order } : {}) } as Parameters<FleetResources['nodes']['list']>[1]);
    },
  };
}
